"""Numbers shown to significant digits are never rounded onto a value a reader compares
them with: a p-value onto the level it is read against, a forecast skill onto the
oracle's perfect 1, a coverage onto its nominal 0.9, a mean number of steps onto the cap
every seed would have had to reach."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from onrecord._numbers import P_VALUE_MARKS, significant
from onrecord.cli.worldmodel import forecast_table, loop_table
from tests.cli_process import onrecord
from tests.core.test_ci_outputs import make_report
from tests.test_table_widths20 import _render

finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def _marked(draw: st.DrawFn) -> tuple[float, int, list[float]]:
    """A value, the digits asked for and marks; half the time the marks hold what the
    value rounds to at those digits (random marks alone almost never do)."""
    value, digits = draw(finite), draw(st.integers(1, 6))
    marks = draw(st.lists(finite, max_size=4))
    if draw(st.booleans()):
        marks.append(float(f"{value:.{digits}g}"))
    return value, digits, draw(st.permutations(marks))


@settings(deadline=None)
@given(_marked())
def test_a_number_is_shown_as_a_mark_only_when_it_is_that_mark(
    case: tuple[float, int, list[float]],
) -> None:
    value, digits, marks = case
    text = significant(value, digits, marks)
    shown = float(text)
    if shown in marks:
        assert value == shown  # never rounded onto a mark it is not
    plain = f"{value:.{digits}g}"
    if float(plain) not in marks or float(plain) == value:
        assert text == plain  # no more digits than asked, unless a mark needs them
    else:  # a correct rounding of the value, to as many digits as the text has
        places = len(text.lstrip("-").replace(".", "").lstrip("0").split("e")[0])
        assert math.isclose(shown, value, rel_tol=10.0 ** (1 - places))
        # and no more digits than it takes to leave the marks (17 always do)
        readings = {n: f"{value:.{n}g}" for n in range(digits, 18)}
        fewest = next(n for n, t in readings.items() if float(t) == value or float(t) not in marks)
        assert text == readings[fewest]


def test_compare_shows_a_p_value_just_above_a_level_with_the_digits_that_say_so(
    tmp_path: Path,
) -> None:
    # 333 discordant pairs, 151 one way and 182 the other: exact McNemar p = 0.100034,
    # which four significant digits printed as "0.1", the level itself.
    statuses_a = ["pass"] * 151 + ["fail"] * 182
    statuses_b = ["fail"] * 151 + ["pass"] * 182
    expected = binomtest(151, 333, 0.5).pvalue
    assert f"{expected:.4g}" == "0.1"
    assert expected > 0.1
    a = make_report({"posted_once": statuses_a}).save_json(tmp_path / "a.json")
    b = make_report({"posted_once": statuses_b}).save_json(tmp_path / "b.json")
    summary = tmp_path / "summary.md"
    result = onrecord("compare", a, b, "--markdown", summary)
    assert result.returncode == 0, result.stderr
    for output in (result.stdout, summary.read_text()):
        (row,) = [line for line in output.splitlines() if " 182 " in line]  # the check's row
        assert significant(expected, 4, P_VALUE_MARKS) in row  # 0.10003
        assert "0.10003" in row
        assert not any(cell.strip() == "0.1" for cell in row.replace("│", "|").split("|"))


def _heldout(skill: float, coverage: float) -> dict[str, object]:
    row = {
        "coordinate": "pole_angle",
        "horizon": 1,
        "measured": 40,
        "denominator": 40,
        "mae": 5.13e-09,
        "skill": skill,
        "coverage_90": coverage,
        "width_90": 0.000156,
        "crps": 1.11e-05,
    }
    table = {"rows": [row], "forecasts": 40, "model_errors": 0, "simulator_errors": 0}
    return {"bayes-linear/v1": table}


def test_world_model_tables_do_not_round_onto_the_oracle_or_the_nominal_coverage() -> None:
    text = _render(forecast_table(_heldout(0.99996, 0.8996)), 200)
    (head,) = [line.split("┃") for line in text.splitlines() if "skill" in line]
    (row,) = [line.split("│") for line in text.splitlines() if "bayes-linear/v1" in line]
    cells = dict(zip(map(str.strip, head), map(str.strip, row), strict=True))
    # Before: skill "1" (the oracle's perfect score) and coverage "0.9" (its nominal).
    assert cells["skill"] == "0.99996"
    assert cells["cov90"] == "0.8996"
    assert cells["MAE"] == "5.13e-09"  # three digits where no mark is near


def test_the_mean_steps_of_seeds_that_did_not_all_reach_the_cap_is_not_the_cap() -> None:
    row = {
        "model_id": "m/v1",
        "mean_steps": 1499 / 3,
        "steps": [500, 500, 499, None],  # and a failed run
        "reached_cap": 2,
        "seeds": 3,
        "failed_runs": 0,
        "return_ci": [499.0, 500.0],
        "normalized_score": 0.998,
        "prediction_gap": 0.0,
        "prediction_gap_undefined": 0,
    }
    text = _render(loop_table([row]), 200)
    (line,) = [line for line in text.splitlines() if "m/v1" in line]
    cells = [cell.strip() for cell in line.split("│")]
    assert "499.7" in cells  # "500" read as every seed reaching the cap
    assert "2/3" in cells


def test_show_gives_a_check_measured_nowhere_no_interval(tmp_path: Path) -> None:
    report = make_report({"unknowable": ["not_measured"] * 3, "posted_once": ["pass"] * 3})
    result = onrecord("show", report.save_json(tmp_path / "report.json"))
    assert result.returncode == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if "unknowable" in line]
    assert "n/a" in row
    assert "—" in row
    assert "100.0%" not in row  # before: "0.0% – 100.0%", as if estimated from results
    (measured,) = [line for line in result.stdout.splitlines() if "posted_once" in line]
    assert "–" in measured  # a measured check keeps its interval
