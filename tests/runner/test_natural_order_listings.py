"""Check names and task ids in natural order wherever regrade, report and show list them:
``h2`` before ``h10``, ``lake-2`` before ``lake-10``, as the report's check table has it.

Before: ``onrecord regrade`` listed changed verdicts (and changed versions, and checks
that changed without a new version) in text order of check name (``h10`` before ``h2``),
the HTML report's findings named the failing tasks in text order (``lake-10, lake-2``),
and ``onrecord show RUN --episode`` offered existing episodes in text order."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord import EvalCase
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.html import report_data, write_report
from onrecord.runner import plan_run, start_run
from tests.runner.conftest import onrecord

HERE = "tests.runner.test_natural_order_listings"
NAMES = ("steps/h10", "steps/h2", "steps/h1")  # text order: h1, h10, h2
NATURAL = ["steps/h1", "steps/h2", "steps/h10"]
TASKS = ("lake-10", "lake-2", "lake-1")


def _passes(episode: Any) -> OutcomeVerdict:
    return OutcomeVerdict(True, "fine", {})


def _fails(episode: Any) -> OutcomeVerdict:
    return OutcomeVerdict(False, "now failing", {})


V1 = [OutcomeCheck(name, "v1", _passes) for name in NAMES]
V2 = [OutcomeCheck(name, "v2", _fails) for name in NAMES]
"""New versions that fail every episode."""
SAME_VERSION = [OutcomeCheck(name, "v1", _fails) for name in NAMES]
"""New logic under the old version label."""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("natural") / "run"
    tasks = [EvalCase("walk", case_id=task, completion="either") for task in TASKS]
    start_run(path, plan_run("frozenlake", "walks_into_hole", tasks=tasks, checks=[f"{HERE}:V1"]))
    return path


def _checks_of(lines: list[str], task: str) -> list[str]:
    return [line.split()[1].rstrip(":") for line in lines if line.startswith(f"{task}#0 ")]


def test_regrade_lists_changed_verdicts_in_natural_order(lake: Path) -> None:
    done = onrecord("regrade", str(lake), "--checks", f"{HERE}:V2", "--name", "v2")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    versions = [line.split()[1].rstrip(":") for line in lines if line.startswith("check ")]
    assert versions == NATURAL  # before: h1, h10, h2
    for task in TASKS:
        assert _checks_of(lines, task) == NATURAL, done.stdout
    saved = orjson.loads((lake / "regrades" / "v2" / "changes.json").read_bytes())
    assert [change["check"] for change in saved["changes"][:3]] == NATURAL
    assert set(saved["versions"]) == set(NATURAL)  # (a map: canonical JSON sorts its keys)
    # `onrecord show` of the regrade lists them as saved
    shown = onrecord("show", str(lake / "regrades" / "v2"))
    assert shown.returncode == 0, shown.stderr
    listed = [line.strip() for line in shown.stdout.splitlines()]
    assert _checks_of(listed, TASKS[0]) == NATURAL


def test_regrade_warns_of_unversioned_checks_in_natural_order(lake: Path) -> None:
    done = onrecord("regrade", str(lake), "--checks", f"{HERE}:SAME_VERSION", "--name", "same")
    assert done.returncode == 1, done.stdout + done.stderr
    warned = re.findall(r"warning: check (\S+) changed verdicts", done.stdout)
    assert warned == NATURAL


def test_the_report_names_failing_tasks_in_natural_order(lake: Path, tmp_path: Path) -> None:
    onrecord("regrade", str(lake), "--checks", f"{HERE}:V2", "--name", "fails")
    data = report_data(lake, grading="fails")
    failing = [f for f in data["findings"] if " failed in " in f]
    assert [f.split()[0] for f in failing] == NATURAL
    for finding in failing:  # before: "tasks: lake-1, lake-10, lake-2"
        assert finding.endswith("(tasks: lake-1, lake-2, lake-10)"), finding
    rows = {row["case_id"]: row["failing_checks"] for row in data["tasks"]}
    assert all(checks == NATURAL for checks in rows.values()), rows
    page = write_report(lake, tmp_path / "r.html", grading="fails").read_text()
    assert "(tasks: lake-1, lake-2, lake-10)" in page


def test_show_offers_existing_episodes_in_natural_order(lake: Path) -> None:
    done = onrecord("show", str(lake), "--episode", "nope#0")
    assert done.returncode == 3
    assert "e.g. lake-1#0, lake-2#0, lake-10#0" in " ".join(done.stderr.split())
