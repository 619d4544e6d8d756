"""``onrecord show RUN`` lists the episodes that did not pass, failed first, with the
checks each did not pass and the command that shows one (the way from a rejected run to
its failures was only in the HTML report). Real runs and the real command; what must be
listed is read from the run's saved report.json."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.runner import plan_run, start_run
from tests.cli_process import line_after, onrecord


def _outcome(trial: dict[str, Any]) -> str:
    statuses = {r["status"] for r in trial["results"]}
    if "fail" in statuses:
        return "fail"
    return "pass" if statuses == {"pass"} and not trial["coverage_issues"] else "incomplete"


def _expected(run: Path) -> list[tuple[str, str, str]]:
    trials = orjson.loads((run / "report.json").read_bytes())["trials"]
    rows = [
        (
            f"{t['case']['case_id']}#{t['repeat']}",
            _outcome(t),
            ", ".join(r["name"] for r in t["results"] if r["status"] != "pass"),
        )
        for t in trials
    ]
    return [row for row in rows if row[1] == "fail"] + [
        row for row in rows if row[1] == "incomplete"
    ]


def _listed(output: str) -> list[tuple[str, str, str]]:
    table = output[output.index("episodes not passed") :]
    rows: list[list[str]] = []
    for line in table.splitlines():
        if line.startswith("└"):
            break
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            if cells[0]:
                rows.append(cells)
            else:  # a wrapped cell continues on the next line
                rows[-1][2] += " " + cells[2]
    return [(a, b, c) for a, b, c in rows]


@pytest.mark.parametrize(
    ("environment", "agent", "config", "seeds", "more"),
    [
        (
            "remittance",
            "double_poster",
            {"size": 30, "kinds": ["duplicate", "full_payment"]},
            2,
            False,
        ),
        ("frozenlake", "gives_up_early", None, 2, False),
        ("remittance", "double_poster", {"size": 30, "kinds": ["duplicate"]}, 4, True),
    ],
)
def test_show_of_a_run_lists_what_did_not_pass(
    tmp_path: Path,
    environment: str,
    agent: str,
    config: dict[str, Any] | None,
    seeds: int,
    more: bool,
) -> None:
    run = tmp_path / "run"
    options = {"environment_config": config} if config else {}
    start_run(run, plan_run(environment, agent, seeds=list(range(seeds)), **options))
    expected = _expected(run)
    assert expected  # each agent leaves some episodes not passed
    assert (len(expected) > 10) == more  # both sides of the first-10 cut are tested
    result = onrecord("show", run)
    assert result.returncode == 0, result.stderr
    listed = _listed(result.stdout)
    assert listed == expected[:10]
    if more:
        hint = line_after(f"… {len(expected) - 10} more not passed; every one: ", result.stdout)
        assert shlex.split(hint) == ["onrecord", "show", str(run), "--all-not-passed"]
    else:
        assert "more not passed" not in result.stdout
    command = line_after("see one: ", result.stdout)
    assert shlex.split(command) == ["onrecord", "show", str(run), "--episode", expected[0][0]]
    shown = onrecord(*shlex.split(command)[1:])  # the hint works as printed
    assert shown.returncode == 0, shown.stderr
    assert f"episode {expected[0][0]} " in shown.stdout  # that very episode


def test_a_run_that_passed_lists_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    start_run(
        run,
        plan_run(
            "remittance", "careful", environment_config={"size": 30, "kinds": ["full_payment"]}
        ),
    )
    assert _expected(run) == []
    result = onrecord("show", run)
    assert result.returncode == 0, result.stderr
    assert "episodes not passed" not in result.stdout
    assert "see one:" not in result.stdout
