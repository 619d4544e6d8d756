"""A run-level summary of each measure: ``onrecord show RUN`` (and ``show REPORT.json``)
prints one row per measure after the per-check table, the HTML run report a small table.

Before, a measure was shown only per episode (the HTML detail view): that 4 of 33
episodes put rows back took opening each one. Expected values are computed here with
NumPy from the run's report.json, not with the code under test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord

HEADERS = ["measure", "trials", "mean", "min", "median", "max", "above 0"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real remittance run of the agent that writes rows and puts some back."""
    out = tmp_path_factory.mktemp("m37") / "run"
    done = onrecord(
        "run", "remittance", "-a", "change_and_restore", "-s", "0", "-r", "1",
        "--executor", "inprocess", "--no-progress", "-o", out,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr  # accept or reject: a finished run
    return out


def _values(report_file: Path) -> dict[str, np.ndarray[Any, np.dtype[np.float64]]]:
    """Each measure's values over the trials that have it, read from the JSON itself."""
    trials = orjson.loads(report_file.read_bytes())["trials"]
    names = {name for trial in trials for name in trial["measures"]}
    return {
        name: np.array([t["measures"][name] for t in trials if name in t["measures"]], float)
        for name in names
    }


def _show(path: Path, columns: int = 200) -> str:
    done = onrecord("show", path, "--no-progress", columns=columns)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _table(text: str, total: int) -> dict[str, list[str]]:
    """The rows of the measures table, by measure name (cells stripped, in ``HEADERS``
    order): a narrow terminal prints it in parts, each repeating the name."""
    title = f"measures over the {total} trials"
    parts = text.split(title)[1:]
    assert parts, text
    cells: dict[str, dict[str, str]] = {}
    headers = ["measure"]
    for part in parts:
        lines = part.splitlines()
        header = next(line for line in lines if line.startswith("┃"))
        names = [cell.strip() for cell in header.strip("┃").split("┃")]
        headers += names[1:]
        for line in lines[lines.index(header) :]:
            if line.startswith("└"):
                break
            if line.startswith("│"):
                row = [cell.strip() for cell in line.strip("│").split("│")]
                cells.setdefault(row[0], {}).update(zip(names, row, strict=True))
    assert headers == HEADERS
    return {name: [row[h] for h in HEADERS] for name, row in cells.items()}


def _close(shown: str, value: float) -> bool:
    # Four significant digits at least: within half a unit of the 4th digit.
    return abs(float(shown) - value) <= 5e-4 * max(abs(value), 1e-300)


def _assert_rows(rows: dict[str, list[str]], values: dict[str, Any], total: int) -> None:
    assert list(rows) == sorted(values)  # every measure, each once, by name
    for name, v in values.items():
        _, trials, mean, low, median, high, above = rows[name]
        assert trials == (str(len(v)) if len(v) == total else f"{len(v)} of {total}")
        assert _close(mean, float(np.mean(v))), (name, mean, np.mean(v))
        assert _close(low, float(np.min(v)))
        assert _close(high, float(np.max(v)))
        assert _close(median, float(np.median(v))), (name, median)
        assert int(above) == int(np.count_nonzero(v > 0))


def test_show_run_prints_each_measure_over_the_run(run: Path) -> None:
    values = _values(run / "report.json")
    assert {"tool_calls", "rows_put_back", "rejected_calls"} <= set(values)
    assert np.count_nonzero(values["rows_put_back"] > 0) > 0  # the agent puts rows back
    text = _show(run)
    _assert_rows(_table(text, 33), values, 33)
    # After the per-check table, before the decision.
    assert text.index("only_expected_tables_changed") < text.index("measures over the")
    assert text.index("measures over the") < text.index("decision: reject")


def test_show_report_file_prints_the_same_table(run: Path) -> None:
    values = _values(run / "report.json")
    _assert_rows(_table(_show(run / "report.json"), 33), values, 33)


def test_html_report_has_the_measure_table_and_data(run: Path, tmp_path: Path) -> None:
    page, data_file = tmp_path / "r.html", tmp_path / "r.json"
    done = onrecord("report", run, "-o", page, "--json", data_file)
    assert done.returncode == 0, done.stderr
    values = _values(run / "report.json")
    data = orjson.loads(data_file.read_bytes())["summary"]["measures"]
    assert [m["name"] for m in data] == sorted(values)
    for m in data:
        v = values[m["name"]]
        assert (m["trials"], m["above_zero"]) == (len(v), int(np.count_nonzero(v > 0)))
        assert m["mean"] == pytest.approx(float(np.mean(v)), rel=1e-12)
        assert (m["min"], m["median"], m["max"]) == (np.min(v), np.median(v), np.max(v))
    html = page.read_text()
    section = re.search(r'<section id="measure-summary-section">(.*?)</section>', html, re.S)
    assert section, "no measure table on the page"
    for name, v in values.items():
        row = re.search(rf'<tr data-measure="{name}">(.*?)</tr>', section.group(1))
        assert row, name
        cells = dict(re.findall(r'data-field="(\w+)" data-value="[^"]*">([^<]*)<', row.group(1)))
        assert cells["above_zero"] == str(np.count_nonzero(v > 0))
        assert _close(cells["mean"], float(np.mean(v)))
        assert float(cells["max"]) == float(np.max(v))
    # Between the checks and the episodes.
    assert html.index('id="checks-section"') < section.start() < html.index('id="episodes')


def _file(tmp_path: Path, measures: list[dict[str, float]]) -> Path:
    report = EvaluationReport.from_trials(
        Trial(
            {"case_id": f"task-{i}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (CheckResult("posted", "v1", "pass", "why"),),
            measures=values,
            settings={"environment_id": "env"},
        )
        for i, values in enumerate(measures)
    )
    return report.save_json(tmp_path / "report.json")


def test_a_mean_between_min_and_max_is_never_shown_as_either(tmp_path: Path) -> None:
    # 32 trials of 1000 rows and one of 1001: at four digits the mean read "1000", as if
    # no trial had more; 12345 whole, not 1.234e+04.
    measures = [{"rows": 1000.0, "big": 12345.0}] * 32 + [{"rows": 1001.0, "big": 12345.0}]
    report = _file(tmp_path, measures)
    rows = _table(_show(report), 33)
    mean = float(np.mean([m["rows"] for m in measures]))
    assert float(rows["rows"][2]) not in (1000.0, 1001.0)
    assert _close(rows["rows"][2], mean)
    assert rows["big"][2:6] == ["12345"] * 4


def test_trials_without_a_measure_and_negative_values(tmp_path: Path) -> None:
    # A Gymnasium-like return that can be negative, and steps measured in half the trials.
    measures: list[dict[str, float]] = [
        {"return": -1.5, "steps": 7.0},
        {"return": 0.0},
        {"return": 2.25, "steps": 9.0},
        {"return": 3.0},
    ]
    report = _file(tmp_path, measures)
    rows = _table(_show(report), 4)
    _assert_rows(rows, _values(report), 4)
    assert rows["steps"][1] == "2 of 4"  # its mean is over 2 trials, and says so
    assert rows["return"][6] == "2"  # above 0: 2.25 and 3, not 0 nor -1.5


def test_a_report_without_measures_has_no_measure_table(tmp_path: Path) -> None:
    report = _file(tmp_path, [{}, {}])
    assert "measures over the" not in _show(report)
    page = tmp_path / "r.html"
    assert onrecord("report", report, "-o", page).returncode == 0
    assert "measure-summary" not in page.read_text()


def test_narrow_terminal_keeps_names_and_numbers_whole(tmp_path: Path) -> None:
    names = ["dynamics/angular_velocity/mean_abs_error", "rows_put_back", "tool_calls"]
    measures = [{n: 1234.5678 * (i + 1) + j for j, n in enumerate(names)} for i in range(5)]
    report = _file(tmp_path, measures)
    text = _show(report, columns=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    # In parts, each naming the measure whole on its line: before, the first name
    # folded as "dynamics/angular_velocity/mea" over "n_abs_error".
    rows = _table(text, 5)
    _assert_rows(rows, _values(report), 5)


def test_values_near_the_largest_float_are_summarized(tmp_path: Path) -> None:
    # A report may hold any finite measure: their sum overflowed (OverflowError in fsum,
    # so `show` crashed) and (a + b) / 2 made the median inf.
    measures = [{"huge": 1.7e308}, {"huge": 1.7e308}]
    rows = _table(_show(_file(tmp_path, measures)), 2)
    assert rows["huge"][1:] == ["2", "1.7e+308", "1.7e+308", "1.7e+308", "1.7e+308", "2"]
