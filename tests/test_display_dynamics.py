"""World-model metrics as tables in rich (``__rich__``) and notebooks (``_repr_html_``),
from real CartPole and Pendulum forecasts of real models: every number shown is the
object's own, a censored or unobserved cell says so (never a 0), and coordinate names,
which the user chooses, stay text."""

from __future__ import annotations

import math
from typing import Any

import pytest
from rich.console import Console

from onrecord._numbers import significant
from onrecord.dynamics import (
    BayesianLinearModel,
    PersistenceModel,
    Transitions,
    capture_forecast,
    capture_forecasts,
    capture_plan,
    get_simulator,
)
from onrecord.dynamics_metrics import (
    LEVELS,
    AggregateMetrics,
    ForecastMetrics,
    aggregate_metrics,
    forecast_metrics,
)
from tests.display_helpers import HOSTILE, Tables
from tests.dynamics.test_state_gaps_round40 import forecast_of, pendulum_reference

CARTPOLE = get_simulator("CartPole-v1")
PUSHES = [[1] * 40 for _ in range(3)]  # always right: the pole falls before step 32
NINETY = LEVELS.index(0.9)


@pytest.fixture(scope="module")
def pushed() -> list[Any]:
    """Real CartPole episodes of a plan the environment ends early."""
    return [
        capture_plan(CARTPOLE, plan, case_id=f"push-{s}", seed=s) for s, plan in enumerate(PUSHES)
    ]


@pytest.fixture(scope="module")
def linear(pushed: list[Any]) -> AggregateMetrics:
    """A fitted Bayesian linear model's forecasts (with deviations), horizon 32 censored."""
    model = BayesianLinearModel(CARTPOLE)
    model.fit(Transitions.from_episodes(pushed))
    forecasts = capture_forecasts(
        pushed,
        model,
        model_id="linear/v1",
        contract=CARTPOLE.contract,
        coordinates=CARTPOLE.coordinates,
        horizons=[1, 4, 32],
        planned_actions=PUSHES,
    )
    return aggregate_metrics(forecasts)


@pytest.fixture(scope="module")
def one(pushed: list[Any]) -> ForecastMetrics:
    model = BayesianLinearModel(CARTPOLE)
    model.fit(Transitions.from_episodes(pushed))
    forecast = capture_forecast(
        pushed[0],
        model,
        model_id="linear/v1",
        contract=CARTPOLE.contract,
        coordinates=CARTPOLE.coordinates,
        horizons=[1, 4, 32],
        planned_actions=PUSHES[0],
    )
    return forecast_metrics(forecast)


def _rich_rows(obj: object, width: int = 260) -> tuple[str, dict[tuple[str, str], dict[str, str]]]:
    """The printed text, and each table row's cells by header, keyed by (coordinate,
    horizon). Wide enough that the table is printed whole, with one-line headers."""
    console = Console(record=True, width=width)
    console.print(obj)
    text = console.export_text()
    headers = next(
        [h.strip() for h in line.split("┃")[1:-1]] for line in text.splitlines() if "┃" in line
    )
    rows = {}
    for line in text.splitlines():
        cells = [part.strip() for part in line.split("│")[1:-1]]
        if len(cells) == len(headers):
            row = dict(zip(headers, cells, strict=True))
            rows[row["coordinate"], row["horizon"]] = row
    return text, rows


def _html_rows(obj: Any) -> tuple[Tables, dict[tuple[str, str], list[dict[str, Any]]]]:
    """Each row's cells (text, field, value) by (coordinate, horizon)."""
    tables = Tables(obj._repr_html_())
    data = iter(tables.cell_data)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for attrs, texts in tables.rows:
        cells = [{**next(data), "text": text} for text in texts]
        if "data-coordinate" in attrs:
            rows[str(attrs["data-coordinate"]), str(attrs["data-horizon"])] = cells
    return tables, rows


def _by_field(cells: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {cell["data-field"]: cell for cell in cells if cell.get("data-field")}


def test_a_forecasts_rich_table_holds_its_own_errors(one: ForecastMetrics) -> None:
    assert one.std is not None
    assert one.nll is not None
    assert one.covered is not None
    assert one.censored.any()
    assert one.measured.any()
    text, rows = _rich_rows(one)
    assert one.forecast_digest[:12] in text
    for j, name in enumerate(one.coordinates):
        for i, h in enumerate(one.horizons):
            row = rows[name, f"h{h}"]
            assert row["unit"] == one.coordinates[name]
            if one.censored[i]:
                assert row["error"] == "censored"
                assert {row[k] for k in ("|error|", "std", "nll", "90% interval")} == {"—"}
                continue
            assert row["error"] == significant(float(one.error[i, j]), 4)
            assert row["|error|"] == significant(float(one.abs_error[i, j]), 4)
            assert row["std"] == significant(float(one.std[i, j]), 4)
            assert row["nll"] == significant(float(one.nll[i, j]), 4)
            assert row["90% covered"] == ("yes" if one.covered[NINETY, i, j] else "no")


def test_a_forecasts_html_cells_carry_its_own_numbers(one: ForecastMetrics) -> None:
    assert one.std is not None
    assert one.lower is not None
    assert one.upper is not None
    _, rows = _html_rows(one)
    assert len(rows) == one.measured.size
    for j, name in enumerate(one.coordinates):
        for i, h in enumerate(one.horizons):
            cells = rows[name, f"h{h}"]
            fields = _by_field(cells)
            if one.censored[i]:
                assert fields["missing"]["text"] == "censored"
                assert not any("data-value" in cell for cell in cells)  # no number, no 0
                continue
            assert float(fields["error"]["data-value"]) == one.error[i, j]
            assert float(fields["abs_error"]["data-value"]) == one.abs_error[i, j]
            assert float(fields["std"]["data-value"]) == one.std[i, j]
            low, high = one.lower[NINETY, i, j], one.upper[NINETY, i, j]
            assert (
                fields["interval_90"]["text"] == f"{significant(low, 4)} – {significant(high, 4)}"
            )


def test_an_unobserved_state_shows_its_reason_not_a_number() -> None:
    metrics = forecast_metrics(forecast_of(pendulum_reference("raises")))
    (horizon, reason), *_ = metrics.unobserved.items()
    assert "encoder glitch" in reason
    _text, rows = _rich_rows(metrics, width=400)
    _, cells = _html_rows(metrics)
    for name in metrics.coordinates:
        assert rows[name, f"h{horizon}"]["error"] == f"not observed: {reason}"
        fields = _by_field(cells[name, f"h{horizon}"])
        assert fields["missing"]["text"] == f"not observed: {reason}"
        assert "error" not in fields
        assert "nll" not in fields
    i = metrics.horizons.index(horizon)
    assert not metrics.measured[i].any()
    assert not metrics.censored[i]


def test_aggregate_tables_count_and_summarize_as_the_object_does(
    linear: AggregateMetrics,
) -> None:
    assert linear.coverage is not None
    assert linear.width is not None
    assert linear.crps is not None
    assert linear.censored.any()
    text, rows = _rich_rows(linear)
    _, cells = _html_rows(linear)
    assert f"{linear.forecasts} forecasts" in text
    for j, name in enumerate(linear.coordinates):
        for i, h in enumerate(linear.horizons):
            row, fields = rows[name, f"h{h}"], _by_field(cells[name, f"h{h}"])
            measured = int(linear.measured[i, j])
            assert row["measured"] == f"{measured} of {linear.cohort}"
            assert row["censored"] == str(int(linear.censored[i]))
            assert int(fields["measured"]["data-value"]) == measured
            if not measured:
                # NaN statistics: a mark, then dashes; never "0" beside 0 forecasts.
                assert row["bias"] == "censored"
                assert fields["missing"]["text"] == "censored"
                assert {row[k] for k in ("MAE", "RMSE", "skill", "crps")} == {"—"}
                continue
            for header, field in (("MAE", "mae"), ("RMSE", "rmse"), ("crps", "crps")):
                value = float(getattr(linear, field)[i, j])
                assert row[header] == significant(value, 4)
                assert float(fields[field]["data-value"]) == value
            share = float(linear.coverage[NINETY, i, j])
            assert float(fields["coverage_90"]["data-value"]) == share
            assert float(fields["width_90"]["data-value"]) == linear.width[NINETY, i, j]


def test_an_empty_cohort_is_not_measured_and_counts_its_left_out(pushed: list[Any]) -> None:
    forecasts = capture_forecasts(
        pushed,
        PersistenceModel(CARTPOLE),
        model_id="persistence/v1",
        contract=CARTPOLE.contract,
        coordinates=CARTPOLE.coordinates,
        horizons=[1, 32],
        planned_actions=PUSHES,
    )
    cohort = aggregate_metrics(forecasts, same_cohort=True)
    assert cohort.cohort == 0
    assert cohort.left_out_censored is not None
    text, rows = _rich_rows(cohort)
    assert f"{cohort.left_out} left out" in text
    for (_, horizon), row in rows.items():
        i = cohort.horizons.index(int(horizon[1:]))
        assert row["measured"] == "0 of 0"
        assert row["left out censored"] == str(int(cohort.left_out_censored[i]))
        assert row["bias"] == "not measured"
        assert math.isnan(float(cohort.bias[i, 0]))


def test_coordinate_names_are_text_in_html_and_rich(pushed: list[Any]) -> None:
    names = {HOSTILE: "m<b>", "[red]v": "m/s", "a\nb": "rad", "w": "rad/s"}
    forecast = capture_forecast(
        pushed[0],
        PersistenceModel(CARTPOLE),
        model_id="<script>alert(1)</script>",
        contract=CARTPOLE.contract,
        coordinates=names,
        horizons=[1],
    )
    metrics = forecast_metrics(forecast)
    fragment = metrics._repr_html_()
    tables, rows = _html_rows(metrics)
    assert {tag for tag, _ in tables.tags} <= {
        "div",
        "p",
        "b",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
    assert "<script>" not in fragment
    assert "<img" not in fragment
    assert rows[HOSTILE, "h1"][0]["text"] == HOSTILE
    assert rows[HOSTILE, "h1"][1]["text"] == "m<b>"
    assert rows["a\nb", "h1"][0]["text"] == "a\\nb"  # one line, as in every table
    _text, printed = _rich_rows(metrics, width=400)
    assert printed["[red]v", "h1"]["unit"] == "m/s"
    assert printed["a\\nb", "h1"]["error"] == significant(float(metrics.error[0, 2]), 4)
