"""A reviewer with only a CI log: which run is A and which is B in ``compare``, in which
episodes a rejected ``gate`` failed, and how many coverage issues a report left unlisted.
Real remittance runs and the real command; what must be printed is read from the runs'
own run.json and report.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli_process import onrecord

POLICY = """name = "release"
[[requirements]]
check = "expected_changes"
[[requirements]]
check = "no_duplicate_allocation"
min_pass_rate = 0.95
"""

TASKS = "duplicate-01,duplicate-02,full-01"


def _run(out: Path, agent: str, *extra: str) -> Path:
    done = onrecord("run", "remittance", "-a", agent, "--no-progress", "--out", out, *extra)
    assert done.returncode in (0, 1, 2), done.stderr
    return out


def _json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("review28")
    return {
        agent: _run(root / agent, agent, "--tasks", TASKS) for agent in ("double_poster", "careful")
    }


def test_compare_names_a_and_b_and_says_which_way_a_pair_went(runs: dict[str, Path]) -> None:
    old, new = runs["double_poster"], runs["careful"]
    done = onrecord("compare", old, new)
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[0]
    # The log named each side only by a 12-digit digest: which was the candidate?
    named = [
        f"{side}: {_json(run / 'run.json')['protocol']['agent']} on remittance "
        f"({run.name}) sha256:{_json(run / 'report.json')['digest'][:16]}"
        for side, run in (("A", old), ("B", new))
    ]
    assert header == f"comparison 3 paired trials  {named[0]}  vs  {named[1]}", header
    # A discordant pair reads "fail→pass": the log now says that is A→B.
    lines = done.stdout.splitlines()
    heading = lines.index("discordant pairs (episode: A→B):")
    assert "  no_duplicate_allocation: duplicate-01#0: fail→pass" in lines[heading + 1 :]


def test_rejected_gate_lists_the_episodes_that_failed(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    run = runs["double_poster"]
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    gated = onrecord("gate", run, "--policy", policy)
    assert gated.returncode == 1, gated.stderr
    # Oracle: the episodes whose saved result for the check is a failure.
    failed = [
        f"{trial['case']['case_id']}#{trial['repeat']}"
        for trial in _json(run / "report.json")["trials"]
        for result in trial["results"]
        if result["name"] == "no_duplicate_allocation" and result["status"] == "fail"
    ]
    assert failed
    assert "results not passed" in gated.stdout
    rows = [line for line in gated.stdout.splitlines() if "no_duplicate_allocation" in line]
    listed = {episode for episode in failed for row in rows if f" {episode} " in row}
    assert listed == set(failed), gated.stdout
    # Each listed episode is one `onrecord show RUN --episode` opens.
    shown = onrecord("show", run, "--episode", failed[0])
    assert shown.returncode == 0, shown.stderr
    assert f"episode {failed[0]}" in shown.stdout


def test_accepted_gate_lists_no_results(runs: dict[str, Path], tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    gated = onrecord("gate", runs["careful"], "--policy", policy)
    assert gated.returncode == 0, gated.stderr
    assert "results not passed" not in gated.stdout


def test_report_counts_the_coverage_issues_it_does_not_list(tmp_path: Path) -> None:
    run = _run(tmp_path / "crash", "crash_after_commit")
    issues = sum(len(trial["coverage_issues"]) for trial in _json(run / "report.json")["trials"])
    assert issues > 20  # the terminal lists 20
    shown = onrecord("show", run)
    assert shown.returncode == 0, shown.stderr
    # Only the 20 were printed: the rest left out without a word.
    assert f"coverage: … {issues - 20} more coverage issues" in shown.stdout
