"""The outputs a user reads, reviewed on real runs of the remittance environment.

- ``gate`` (and ``run``, ``show`` of a saved decision) says in the terminal what
  decided, as the Markdown and JUnit summaries lead with it: the verdict line alone was
  ``decision: reject``.
- The line explaining the clustered "95% interval" column is printed once, not under
  the report's table and again under the decision's (``run``).
- One interval reads the same everywhere: the report's table gave ``[0.76, 0.97]``
  above the decision's ``76.4%–96.9%``; it is ``76.4% – 96.9%`` in the terminal,
  Markdown, JUnit and HTML, and JUnit says "95% interval 76.4% – 96.9%, clustered by
  case" (it read "clustered by case 76.4%…").
- At 80 columns an interval wraps at its dash; it was cut mid-number (``76.4%–9`` over
  ``6.9%``).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from onrecord import AcceptancePolicy
from onrecord.cli._render import INTERVAL_NOTE, render_decision
from onrecord.compare import load_source
from tests.cli_process import onrecord

POLICY = """
name = "release"
[[requirements]]
check = "expected_changes"
[[requirements]]
check = "no_duplicate_allocation"
min_pass_rate = 0.95
min_lower_bound = 0.5
[[requirements]]
check = "*"
critical = false
"""
TASKS = "duplicate-01,duplicate-02,duplicate-03"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A policy and a run of ``double_poster`` (3 repeats of 3 tasks and others)."""
    folder = tmp_path_factory.mktemp("review11")
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    out = folder / "double_poster"
    done = onrecord(
        "run", "remittance", "--agent", "double_poster", "--repeats", "3",
        "--tasks", f"{TASKS},full-01,full-02", "--policy", policy,
        "--out", out, "--no-progress",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    return policy, out, done.stdout


def test_gate_in_a_terminal_says_what_decided(runs: tuple[Path, Path, str], tmp_path: Path) -> None:
    policy, out, _ = runs
    done = onrecord("gate", out, "--policy", policy, "--output", tmp_path / "d.json")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "decision: reject"
    cause = "failed: expected_changes, no_duplicate_allocation; advisory failed (warning): *"
    assert lines[1] == f"  {cause}"
    markdown = onrecord("gate", out, "--policy", policy, "--markdown", "-")
    assert cause.replace("_", "\\_").replace("*", "\\*") in markdown.stdout
    shown = onrecord("show", tmp_path / "d.json")  # a saved decision: made again
    assert f"decision: reject\n  {cause}\n" in shown.stdout


def test_an_accept_says_every_requirement_met(runs: tuple[Path, Path, str]) -> None:
    policy, out, _ = runs
    careful = out.parent / "careful"
    done = onrecord(
        "run", "remittance", "--agent", "careful", "--policy", policy, "--out", careful,
        "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "decision: accept\n  every requirement met\n" in done.stdout


def test_run_explains_the_interval_column_once(runs: tuple[Path, Path, str]) -> None:
    _, out, stdout = runs
    assert stdout.count(INTERVAL_NOTE) == 1
    assert "decision: reject\n  failed: expected_changes" in stdout
    shown = onrecord("show", out)  # the report and the run's decision
    assert shown.stdout.count(INTERVAL_NOTE) == 1


def test_one_interval_reads_the_same_in_every_output(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    policy, out, stdout = runs
    loaded = load_source(out)
    check = next(c for c in loaded.report.summary().checks if c.name == "expected_changes")
    low, high = (f"{100 * bound:.1f}%" for bound in check.interval)
    shown = f"{low} – {high}"
    assert check.failed
    assert "[0." not in stdout
    report_row = next(line for line in stdout.splitlines() if "│ expected_changes " in line)
    decision_row = [line for line in stdout.splitlines() if "│ expected_changes " in line][-1]
    assert shown in report_row
    assert shown in decision_row
    junit = onrecord("gate", out, "--policy", policy, "--junit-xml", "-").stdout
    assert f"95% interval {shown}, clustered by case" in junit
    assert f"| {shown} |" in onrecord("gate", out, "--policy", policy, "--markdown", "-").stdout
    page = tmp_path / "r.html"
    assert onrecord("report", out, "-o", page).returncode == 0
    html = page.read_text()
    assert "(95% interval " in html
    assert ", clustered by case)" in html


def test_an_interval_at_80_columns_is_whole(runs: tuple[Path, Path, str]) -> None:
    policy, out, _ = runs
    decision = AcceptancePolicy.load(policy).evaluate(load_source(out).report)
    failed = next(o for o in decision.outcomes if o.requirement.check == "expected_changes")
    high = f"{100 * failed.interval[1]:.1f}%"
    text = io.StringIO()
    render_decision(Console(file=text, width=80, emoji=False), decision)
    lines = text.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    # the interval whole on one line: at 80 columns (28-character names) the decision
    # is stacked, each requirement's numbers on the line under its name
    assert any(f"% – {high}" in line for line in lines), text.getvalue()


def test_compare_names_its_measure_interval_a_bootstrap_one(
    runs: tuple[Path, Path, str],
) -> None:
    _, out, _ = runs
    careful = out.parent / "careful_b"
    done = onrecord(
        "run", "remittance", "--agent", "careful", "--repeats", "3",
        "--tasks", f"{TASKS},full-01,full-02", "--out", careful, "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    compared = onrecord("compare", careful, out)
    header = next(line for line in compared.stdout.splitlines() if "┃ measure " in line)
    assert "95% bootstrap interval" in header
    markdown = onrecord("compare", careful, out, "--markdown", "-").stdout
    assert "| 95% bootstrap interval |" in markdown
