"""``onrecord compare`` gives each check's pass rate in A and in B beside its p-value, with
the interval clustered by case (the runs repeat each task three times), in the terminal
at any width, in ``--json`` (which ``verify`` checks and ``show`` prints), ``--markdown``
and ``--html``. Two real remittance runs: the careful agent against one that skips
the notes, run by the real command."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from rich.cells import cell_len
from scipy.stats import binomtest, norm

from onrecord import EvaluationReport
from onrecord._canonical import content_digest, record_bytes
from onrecord._numbers import interval_percent, percent
from onrecord.compare import Comparison
from tests.cli_process import onrecord


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("rates")
    for name, agent in (("a", "careful"), ("b", "skips_notes")):
        done = onrecord("run", "remittance", "-a", agent, "-r", "3", "-o", root / name)
        # careful is accepted; skipping the notes fails expected_changes: rejected
        assert done.returncode == (0 if agent == "careful" else 1), done.stderr
        assert (root / name / "report.json").is_file(), done.stderr
    return root / "a", root / "b"


def kish_wilson(per_case: list[list[int]]) -> tuple[float, float]:
    """The 95% Wilson interval with the Kish effective sample size (results over the
    design effect, never below 1), written here with NumPy rather than taken from
    onrecord: the expected value must not come from the code under test."""
    passes, results = np.array(per_case, dtype=float).T
    n, rate = results.sum(), passes.sum() / results.sum()
    design = 1.0
    if 0 < rate < 1 and results.max() > 1:
        design = max(1.0, ((passes - rate * results) ** 2).sum() / (n * rate * (1 - rate)))
    m, z = n / design, norm.ppf(0.975)
    centre = (rate + z * z / (2 * m)) / (1 + z * z / m)
    half = z * np.sqrt(rate * (1 - rate) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    return (
        0.0 if rate == 0 else max(0.0, centre - half),
        1.0 if rate == 1 else min(1.0, centre + half),
    )


def expected(run: Path) -> dict[str, tuple[int, int, tuple[float, float]]]:
    """Per check (passes, measured, clustered interval), from the trials themselves."""
    report = EvaluationReport.load(run / "report.json")
    tallies: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for trial in report.trials:
        for result in trial.results:
            if result.status in ("pass", "fail"):
                tally = tallies[result.name][str(trial.case["case_id"])]
                tally[0] += result.status == "pass"
                tally[1] += 1
    return {
        name: (
            sum(p for p, _ in cases.values()),
            sum(n for _, n in cases.values()),
            kish_wilson(list(cases.values())),
        )
        for name, cases in tallies.items()
    }


def shown(passes: int, measured: int, interval: tuple[float, float]) -> str:
    return f"{percent(passes / measured)} ({interval_percent(*interval)})"


def rate_cells(out: str, name: str) -> list[list[str]]:
    """The last two cells (pass rate, 95% interval) of a check's row in the terminal
    table that has them, and of the line under it (A's line, then B's)."""
    lines = out.splitlines()
    (at,) = [i for i, line in enumerate(lines) if f"│ {name} " in line and "│ A " in line]
    return [
        [cell.strip() for cell in line.strip("│ ").split("│")][-2:] for line in lines[at : at + 2]
    ]


def sides(
    a: tuple[int, int, tuple[float, float]], b: tuple[int, int, tuple[float, float]]
) -> list[list[str]]:
    return [
        [f"{side} {percent(passes / measured)}", f"{side} {interval_percent(*interval)}"]
        for side, (passes, measured, interval) in (("A", a), ("B", b))
    ]


def compare(runs: tuple[Path, Path], *extra: str | Path, columns: int = 200) -> str:
    """``onrecord compare A B EXTRA`` in a terminal ``columns`` wide; its stdout."""
    done = onrecord("compare", *runs, *extra, columns=columns)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_rates_are_clustered_by_case(runs: tuple[Path, Path]) -> None:
    """The fixture is what the other tests need: a rate whose clustered interval is not
    the plain Wilson interval of its results (three repeats of a task fail together)."""
    passes, measured, interval = expected(runs[1])["expected_changes"]
    assert (passes, measured) == (87, 99)
    # 12 failures from 4 of 33 tasks (3 repeats each) weigh as 4 failures of 33: the
    # design effect is exactly 3, so the interval is scipy's Wilson interval of 29 of 33
    # (an independent check of kish_wilson above) and wider than the one of 87 of 99.
    by_case = binomtest(29, 33).proportion_ci(0.95, method="wilson")
    assert interval == pytest.approx((by_case.low, by_case.high), abs=1e-12)
    plain = binomtest(87, 99).proportion_ci(0.95, method="wilson")
    assert interval[0] < plain.low - 0.02
    assert shown(passes, measured, interval) == "87.9% (72.7% – 95.2%)"


def test_terminal_table_gives_each_sides_rate_beside_the_p_value(runs: tuple[Path, Path]) -> None:
    out = compare(runs)
    a, b = expected(runs[0]), expected(runs[1])
    for name in a:
        assert rate_cells(out, name) == sides(a[name], b[name]), out
    # the columns it always had keep their places: the counts, then the p-value
    assert re.search(r"│ expected_changes +│ 87 +│ 12 +│ 0 +│ 0 +│ 0 +│ 0\.0004883 +│ A ", out)
    assert "Wilson intervals clustered by case" in out


@pytest.mark.parametrize("columns", [80, 100])
def test_narrow_terminal_keeps_every_rate_and_p_value_whole(
    runs: tuple[Path, Path], columns: int
) -> None:
    out = compare(runs, columns=columns)
    assert max(cell_len(line) for line in out.splitlines()) <= columns
    a, b = expected(runs[0]), expected(runs[1])
    for name in a:
        # A's rate on the check's line, B's on the next: each whole, labelled A and B
        assert rate_cells(out, name) == sides(a[name], b[name]), out
    # Whole: before, at 80 columns the p-value was folded ("0.000488" over "3").
    assert len(re.findall(r"\b0\.0004883\b", out)) == 2
    # the counts are still printed, in a table of their own
    assert re.search(r"│ expected_changes +│ 87 +│ 12 +│ 0 +│ 0 +│ 0 +│", out)


def test_json_holds_the_rates_verify_checks_them_and_show_prints_them(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    saved = tmp_path / "comparison.json"
    compare(runs, "--json", saved)
    record = orjson.loads(saved.read_bytes())
    a, b = expected(runs[0]), expected(runs[1])
    for check in record["checks"]:
        # the keys it always had are all still there
        assert {"both_pass", "only_a", "only_b", "both_fail", "unmeasured", "p_value"} <= set(check)
        for side, truth in (("rate_a", a), ("rate_b", b)):
            passes, measured, interval = truth[check["name"]]
            assert check[side] == {
                "passed": passes,
                "measured": measured,
                "pass_rate": passes / measured,
                "interval": list(interval),
            }
    assert onrecord("verify", saved).returncode == 0
    body = {k: v for k, v in record.items() if k not in ("schema", "digest")}
    assert Comparison.from_dict(record).to_dict() == body
    showed = onrecord("show", saved)
    assert showed.returncode == 0, showed.stderr
    shown_out = showed.stdout
    assert rate_cells(shown_out, "expected_changes") == sides(
        a["expected_changes"], b["expected_changes"]
    )


def _reseal(record: dict[str, Any], path: Path) -> Path:
    body = {k: v for k, v in record.items() if k != "digest"}
    path.write_bytes(record_bytes({**body, "digest": content_digest(body)}))
    return path


def test_a_comparison_saved_before_the_rates_still_verifies_and_reads_the_same(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    saved = tmp_path / "comparison.json"
    compare(runs, "--json", saved)
    record = orjson.loads(saved.read_bytes())
    for check in record["checks"]:
        del check["rate_a"], check["rate_b"]
    old = _reseal(record, tmp_path / "old.json")
    assert onrecord("verify", old).returncode == 0
    body = {k: v for k, v in record.items() if k not in ("schema", "digest")}
    # Read back and written again, it is the record it was (no "rate_a": null added).
    assert Comparison.from_dict(record).to_dict() == body
    showed = onrecord("show", old)
    assert showed.returncode == 0, showed.stderr
    out = showed.stdout
    assert "0.0004883" in out
    assert "pass rate" not in out


def test_verify_refuses_a_rate_its_paired_counts_contradict(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    saved = tmp_path / "comparison.json"
    compare(runs, "--json", saved)
    record = orjson.loads(saved.read_bytes())
    (check,) = [c for c in record["checks"] if c["name"] == "expected_changes"]
    # B "passed" every episode, though 12 pairs failed in B and none went unmeasured.
    check["rate_b"] = {**check["rate_a"]}
    forged = _reseal(record, tmp_path / "forged.json")
    done = onrecord("verify", forged)
    assert done.returncode == 3, done.stdout + done.stderr  # damaged, not "reject"
    assert "rate_b" in done.stdout + done.stderr


def test_markdown_gives_the_rates_unescaped(runs: tuple[Path, Path]) -> None:
    out = compare(runs, "--markdown", "-")
    header = next(line for line in out.splitlines() if line.startswith("| check |"))
    assert header.endswith(
        "| McNemar p | A pass rate (95% interval, clustered by case) | B pass rate (95% "
        "interval, clustered by case) |"
    )
    # the first such row is the checks table's (the discordant pairs' table follows)
    row = next(line for line in out.splitlines() if line.startswith("| expected\\_changes |"))
    cells = [cell.strip() for cell in row.strip("| ").split(" | ")]
    assert cells[-3:] == [
        "0.0004883",
        shown(*expected(runs[0])["expected_changes"]),
        shown(*expected(runs[1])["expected_changes"]),
    ]


def test_html_page_gives_the_rates(runs: tuple[Path, Path], tmp_path: Path) -> None:
    page_path = tmp_path / "compare.html"
    compare(runs, "--html", page_path)
    page = page_path.read_text()
    assert "B pass rate (95% interval, clustered by case)" in page
    # the legend says what the rate columns hold, beside the counts it explained
    assert "A and B pass rate: each report's own pass rate of the check" in page
    passes, measured, interval = expected(runs[1])["expected_changes"]
    (row,) = re.findall(r'<tr data-check="expected_changes">.*?</tr>', page)
    (cell,) = re.findall(r'data-field="rate_b"[^>]*>([^<]*)<', row)
    assert cell == shown(passes, measured, interval)
    (value,) = re.findall(r'data-field="rate_b" data-value="([^"]*)"', row)
    assert float(value) == passes / measured


def test_a_very_narrow_terminal_keeps_the_p_value_whole(runs: tuple[Path, Path]) -> None:
    """At 40 columns no table fits: each check is stacked, its p-value whole under its
    name rather than folded ("0.000488" over "3"), its rates beside it whole."""
    out = compare(runs, columns=40)
    assert max(cell_len(line) for line in out.splitlines()) <= 40
    assert len(re.findall(r"(?m)^  0\.0004883  ", out)) == 2
    assert "87.9%" in out  # the rates are still printed
