"""Terminal output as people read it: the report line's trial outcomes as counts, not a
Python dict; a comparison's rates and intervals, and a report's results, whole on their
lines; the demo's agents and ledger tables in one part at 100 columns. Real runs by
the real command, and the demo's real suite and ledger experiment."""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from rich.console import Console

from onrecord import EvaluationReport
from onrecord.cli.ledger import decision_table
from onrecord.domains.ledger import LedgerResult, run_ledger_experiment
from onrecord.domains.remittance import SuiteResult, suite_table
from tests.cli_process import onrecord


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Remittance's careful and double-posting agents, and the ledger's correct agent
    and duplicate writer (check names of 11 to 20 characters), each run once."""
    root = tmp_path_factory.mktemp("runs")
    for env, agent in (
        ("remittance", "careful"),
        ("remittance", "double_poster"),
        ("ledger", "correct"),
        ("ledger", "duplicate_write"),
    ):
        done = onrecord("run", env, "-a", agent, "-s", "0-2", "--no-progress", "-o", root / agent)
        assert (root / agent / "report.json").is_file(), done.stdout + done.stderr
    return root


def test_the_report_line_gives_the_trial_outcomes_as_counts(runs: Path) -> None:
    outcomes = EvaluationReport.load(runs / "double_poster" / "report.json").summary().outcomes
    assert outcomes["fail"] > 0
    done = onrecord("show", runs / "double_poster", columns=400)
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("report ")]
    # Before: "outcomes {'pass': 96, 'fail': 3, 'incomplete': 0}".
    shown = f"{outcomes['pass']} pass, {outcomes['fail']} fail, {outcomes['incomplete']} incomplete"
    assert f"  outcomes: {shown}  sha256:" in line, line
    assert "{" not in done.stdout, done.stdout


def _rate_lines(text: str) -> list[str]:
    """The lines of a comparison that hold an "A" or "B" rate or interval."""
    return [line for line in text.splitlines() if re.search(r"│ [AB] ", line)]


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize(("a", "b"), [("correct", "duplicate_write"), ("careful", "double_poster")])
def test_a_comparison_keeps_each_rate_and_interval_whole(
    runs: Path, a: str, b: str, width: int
) -> None:
    done = onrecord("compare", runs / a, runs / b, columns=width)
    assert done.returncode in (0, 1), done.stderr
    checks = EvaluationReport.load(runs / a / "report.json").summary().checks
    lines = _rate_lines(done.stdout)
    assert _table_lines_fit(done.stdout, width), done.stdout
    # Before, at 100 and 120 columns with the ledger's short names, one table of nine
    # columns broke "A 100.0%" into "A" over "100.0%" and each interval over two lines.
    for side in "AB":
        rates = [line for line in lines if re.search(rf"│ {side} \d+\.\d%\s+│", line)]
        intervals = [line for line in lines if re.search(rf"│ {side} [\d.]+% – [\d.]+%\s+│", line)]
        assert len(rates) == len(intervals) == len(checks), done.stdout
    assert not re.search(r"│ [AB]\s+│|– +│", done.stdout), done.stdout


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_report_keeps_each_checks_counts_whole(runs: Path, width: int) -> None:
    done = onrecord("show", runs / "double_poster", columns=width)
    summary = EvaluationReport.load(runs / "double_poster" / "report.json").summary()
    assert _table_lines_fit(done.stdout, width), done.stdout
    # Before, at 80 columns the narrow table's results took four lines a check:
    # "99" / "passed," / "0" / "failed".
    table = done.stdout.split("\nreport ", 1)[1].split("95% intervals are", 1)[0]
    assert not re.search(r"│ \d+\s+│|passed,\s+│", table), table
    for check in summary.checks:
        narrow = f"│ {check.passed} passed, {check.failed} failed "
        stacked = rf"(?m)^  {check.passed}\s+{check.failed}\s+{check.unmeasured}\s+"
        assert narrow in table or re.search(stacked, table), (check, table)


def _table_lines_fit(text: str, width: int) -> bool:
    """Whether each line of a table fits ``width`` (a command to copy may not)."""
    return all(len(line) <= width for line in text.splitlines() if "│" in line or "┃" in line)


def _render(table: object, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), emoji=False)
    console.print(table)
    return console.export_text()


@pytest.fixture
def suite(demo_suite: tuple[Path, SuiteResult]) -> SuiteResult:
    """Every reference agent on every remittance task, once: the demo's names."""
    return demo_suite[1]


@pytest.mark.parametrize("width", [100, 120])
def test_the_demo_agents_table_is_one_part_at_100_columns(suite: SuiteResult, width: int) -> None:
    text = _render(suite_table(suite), width)
    # Before, at 100 a "part 2 of 2" held the agent names and "as expected": "yes" alone.
    assert "part" not in text, text
    assert all(len(line) <= width for line in text.splitlines()), text
    for name, outcome in suite.outcomes.items():
        wanted = suite.expected[name]
        mark = "✓" if all(outcome.task_decisions[t] == w for t, w in wanted.items()) else "✗"
        assert re.search(rf"│ {name} +│ {outcome.decision.decision} {mark} +│", text), text


def test_the_demo_agents_table_marks_a_task_not_decided_as_it_must_be(suite: SuiteResult) -> None:
    task = next(iter(suite.expected["careful"]))
    suite.expected["careful"] = {**suite.expected["careful"], task: "reject"}
    suite.expected.pop("skips_notes")
    text = _render(suite_table(suite), 100)
    assert re.search(r"│ careful +│ accept ✗ +│", text), text
    assert re.search(r"│ skips_notes +│ reject +│", text), text  # nothing expected


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> LedgerResult:
    return run_ledger_experiment(tmp_path_factory.mktemp("ledger"))


@pytest.mark.parametrize("width", [100, 120])
def test_the_ledger_table_is_one_part_at_100_columns(ledger: LedgerResult, width: int) -> None:
    text = _render(decision_table(ledger), width)
    # Before, at 100 a "part 2 of 2" held the episode names and "required" alone.
    assert "part" not in text, text
    assert all(len(line) <= width for line in text.splitlines()), text
    for episode in ledger.episodes:
        decisions = episode.decisions
        assert decisions["full_policy"] == episode.expected  # the decision required
        cells = (episode.name, decisions["final_answer"], decisions["final_posting"])
        row = r" +│ ".join(map(re.escape, (*cells, episode.expected)))
        assert re.search(rf"│ {row} +│", text), (episode.name, text)
    assert "✗" not in text.split("\n", 2)[2], text  # below the title: no mark


def test_the_ledger_table_says_which_decision_was_required(ledger: LedgerResult) -> None:
    episode = ledger.episodes[0]
    required = "indeterminate" if episode.expected != "indeterminate" else "accept"
    changed = dataclasses.replace(episode, expected=required)
    result = cast(LedgerResult, SimpleNamespace(episodes=[changed], classic=ledger.classic))
    text = _render(decision_table(result), 200)
    assert f"│ {episode.decisions['full_policy']} ✗ required {required} │" in text, text
