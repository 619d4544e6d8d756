"""World-model tables, round 47: an ``EffectTable`` (what ``effect_table`` returns) is a
table in rich and notebooks, as the other world-model results are, its cells without a
pair saying why; and a metrics table printed in parts gives a row's reason in every
part, not only in the first (the parts after it showed bare dashes). Real CartPole
pairs and forecasts of real models."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from onrecord._numbers import significant
from onrecord.dynamics import (
    EffectTable,
    OracleModel,
    capture_forecast,
    capture_pairs,
    effect_table,
    get_simulator,
    request_predictor,
)
from onrecord.dynamics_metrics import AggregateMetrics, ForecastMetrics
from tests.display_helpers import HOSTILE
from tests.test_display_dynamics import (  # noqa: F401 (fixtures)
    _by_field,
    _html_rows,
    _rich_rows,
    linear,
    one,
    pushed,
)

CARTPOLE = get_simulator("CartPole-v1")
HORIZONS = [1, 2, 8]  # pairs of 3 steps: h8 is measured in none
FIELDS = ("real_effect", "predicted_effect", "effect_error")
HEADERS = ("real effect", "predicted effect", "effect error")


def _effects(coordinates: dict[str, str]) -> EffectTable:
    """The oracle's effects over three action pairs, its forecast of one arm failing."""
    starts = [[0.0, 0.0, 0.01 * n, 0.0] for n in range(3)]
    pairs = capture_pairs(CARTPOLE, starts, kind="action", length=3, seed=1)
    exact = request_predictor(OracleModel(CARTPOLE))
    calls = {"n": 0}

    def fails_once(request: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("model crashed")
        return exact(request)

    spec: dict[str, Any] = {
        "model_id": "oracle<b>/v1",
        "contract": CARTPOLE.contract,
        "coordinates": coordinates,
        "horizons": HORIZONS,
    }
    # Forecasts of each arm's observed prefix: 3 steps, so none reaches h8.
    base = [capture_forecast(p.base, exact, **spec) for p in pairs]
    variant = [capture_forecast(p.variant, fails_once, **spec) for p in pairs]
    return effect_table(base, variant)


@pytest.fixture(scope="module")
def effects() -> EffectTable:
    table = _effects(CARTPOLE.coordinates)
    assert table.skipped_pairs == 1
    assert table.pairs[:2].all()
    assert not table.pairs[2].any()  # h8: no pair ran that long
    return table


def test_an_effect_table_shows_its_own_numbers_and_why_a_cell_has_none(
    effects: EffectTable,
) -> None:
    text, rows = _rich_rows(effects)
    _, cells = _html_rows(effects)
    assert "1 pairs skipped" in text
    why = "not measured in any pair (1 skipped: a forecast failed)"
    for j, name in enumerate(effects.coordinates):
        for i, h in enumerate(effects.horizons):
            row, fields = rows[name, f"h{h}"], _by_field(cells[name, f"h{h}"])
            pairs = int(effects.pairs[i, j])
            assert row["unit"] == effects.coordinates[name]
            assert row["pairs"] == str(pairs)
            assert int(fields["pairs"]["data-value"]) == pairs
            if not pairs:  # NaN effects: the reason, then dashes; never "0"
                assert row["real effect"] == why
                assert fields["missing"]["text"] == why
                assert {row["predicted effect"], row["effect error"]} == {"—"}
                assert "real_effect" not in fields
                continue
            for header, field in zip(HEADERS, FIELDS, strict=True):
                value = float(getattr(effects, field)[i, j])
                assert row[header] == significant(value, 4)
                assert float(fields[field]["data-value"]) == value


def test_an_effect_tables_names_are_text() -> None:
    names = {HOSTILE: "m<b>", "[red]v": "m/s", "a\nb": "rad", "w": "rad/s"}
    table = _effects(names)
    fragment = table._repr_html_()
    assert "<img" not in fragment
    assert "oracle&lt;b&gt;/v1" in fragment
    _, cells = _html_rows(table)
    assert cells[HOSTILE, "h1"][0]["text"] == HOSTILE
    assert cells[HOSTILE, "h1"][1]["text"] == "m<b>"
    assert cells["a\nb", "h1"][0]["text"] == "a\\nb"
    _, printed = _rich_rows(table, width=400)
    assert printed["[red]v", "h1"]["unit"] == "m/s"
    assert printed["a\\nb", "h1"]["pairs"] == str(int(table.pairs[0, 2]))


def _parts(obj: object, width: int) -> list[dict[tuple[str, str], list[str]]]:
    """Each part's rows: the cells after coordinate, unit and horizon, by (coordinate,
    horizon)."""
    console = Console(record=True, width=width)
    console.print(obj)
    parts: list[dict[tuple[str, str], list[str]]] = []
    for line in console.export_text().splitlines():
        if "(part " in line:
            parts.append({})
        cells = [part.strip() for part in line.split("│")[1:-1]]
        if parts and cells and cells[0] and cells[2].startswith("h"):
            parts[-1][cells[0], cells[2]] = cells[3:]
    return parts


@pytest.mark.parametrize("name", ["one", "linear"])
def test_every_part_of_a_split_table_says_why_a_row_has_no_values(
    name: str, request: pytest.FixtureRequest
) -> None:
    metrics: ForecastMetrics | AggregateMetrics = request.getfixturevalue(name)
    i = metrics.horizons.index(32)
    assert metrics.censored[i]
    parts = _parts(metrics, width=80)
    assert len(parts) >= 2
    first = True
    for part in parts:
        for coordinate in metrics.coordinates:
            cells = part[coordinate, "h32"]
            if first and name == "linear":
                # counts (measured, censored, unobserved): kept, they are numbers
                assert cells[:3] == ["0 of 3", "3", "0"]
                cells = cells[3:]
                if not cells:  # a part of counts alone: no statistic left blank in it
                    continue
            # Before: "—" in the first column of every part but the first.
            assert cells[0] == "censored", (name, part)
            assert set(cells[1:]) <= {"—"}
            measured = part[coordinate, "h1"]
            assert "censored" not in measured
        first = False
