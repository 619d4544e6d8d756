"""Round 41: records that each verify their own digest must agree with each other.

Every test makes a real run (``onrecord run`` of a built-in example), changes one value
of one record, re-seals that file's digest as onrecord computes it, and runs the real
``onrecord verify``: exit 3, naming what disagrees with what, no traceback.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.domains.remittance import load_tasks, run_demo_suite
from tests.cli_process import onrecord

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("round41")
    for args in (
        ("frozenlake", "-a", "walks_into_hole", "-s", "0,1", "-o", str(base / "gym")),
        ("remittance", "-a", "double_poster", "--tasks", "duplicate-01,full-01",
         "--env-config", "size=12", "-o", str(base / "tool")),
    ):  # fmt: skip
        done = onrecord("run", *args, "--no-progress")
        assert done.returncode in (0, 1, 2), done.stderr
    done = onrecord("regrade", base / "gym", "--name", "again")
    assert done.returncode in (0, 1, 2), done.stderr
    run_demo_suite(
        base / "suite", agents=["careful"], tasks=load_tasks()[:1], repeats=1,
        episodes_dir=base / "episodes",
    )  # fmt: skip
    return base


@pytest.fixture
def copy(root: Path, tmp_path: Path) -> Path:
    shutil.copytree(root, tmp_path / "r")
    return tmp_path / "r"


def _reseal_json(path: Path, edit: Edit) -> None:
    record = orjson.loads(path.read_bytes())
    edit(record)
    record.pop("digest")
    record["digest"] = content_digest(record)
    path.write_bytes(record_bytes(record))


def _reseal_line(path: Path, number: int, edit: Edit) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[number])
    edit(record)
    record.pop("digest")
    record["digest"] = content_digest(record)
    lines[number] = orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n"
    path.write_bytes(b"".join(lines))


def _refused(path: Path, *expected: str) -> str:
    done = onrecord("verify", path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr
    return done.stderr


def test_the_unchanged_records_verify(root: Path) -> None:
    for path in (root / "gym", root / "tool", root / "gym" / "regrades" / "again"):
        done = onrecord("verify", path)
        assert done.returncode == 0, done.stderr
    episode = next((root / "episodes").rglob("manifest.json")).parent
    assert onrecord("verify", episode).returncode == 0


# -- 1. a record's trial vs the run's report ------------------------------------------
def _status(record: dict[str, Any]) -> None:
    result = record["trial"]["results"][0]
    result["status"] = "pass" if result["status"] != "pass" else "fail"


def _measure(record: dict[str, Any]) -> None:
    name = sorted(record["trial"]["measures"])[0]
    record["trial"]["measures"][name] = 12345


def _settings(record: dict[str, Any]) -> None:
    record["trial"]["settings"]["note"] = "edited"


@pytest.mark.parametrize("edit", [_status, _measure, _settings])
def test_a_resealed_record_trial_disagreeing_with_the_report_is_refused(
    copy: Path, edit: Edit
) -> None:
    _reseal_line(copy / "gym" / "episodes.jsonl", 0, edit)
    _refused(copy / "gym", "report.json grades episode", "differently than its record")


# -- 2. decision.json vs the policy's decision on the report ---------------------------
def _requirement(field: str, value: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        record["decision"]["requirements"][0][field] = value

    return edit


def _top(field: str, value: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        record[field] = value

    return edit


def _policy_digest(record: dict[str, Any]) -> None:
    record["decision"]["policy_digest"] = "0" * 64


DECISION_EDITS = {
    "passed": _requirement("passed", 1),
    "cases": _requirement("cases", 7),
    "unmeasured": _requirement("unmeasured", 3),
    "min_pass_rate": _requirement("min_pass_rate", 0.0),
    "critical": _requirement("critical", False),
    "check": _requirement("check", "other"),
    "policy_digest": _policy_digest,
    "complete": _top("complete", False),
    "recorded": _top("recorded", 1),
    "expected": _top("expected", 99),
}


@pytest.mark.parametrize("where", ["gym", "gym/regrades/again"])
@pytest.mark.parametrize("name", sorted(DECISION_EDITS))
def test_a_resealed_decision_is_decided_again(copy: Path, where: str, name: str) -> None:
    _reseal_json(copy / where / "decision.json", DECISION_EDITS[name])
    error = _refused(copy / "gym", "decision.json")
    assert "policy" in error, error
    _refused(copy / where)


# -- 3. run.json re-sealed ------------------------------------------------------------
def test_a_resealed_run_json_with_a_changed_policy_requirement_is_refused(copy: Path) -> None:
    def edit(record: dict[str, Any]) -> None:
        record["protocol"]["policy"]["requirements"][0]["min_pass_rate"] = 0.0

    _reseal_json(copy / "gym" / "run.json", edit)
    _refused(copy / "gym", "run.json: protocol.policy is not a policy saved whole")


def test_a_resealed_run_json_with_other_check_versions_is_refused(copy: Path) -> None:
    def edit(record: dict[str, Any]) -> None:
        versions = record["protocol"]["check_versions"]
        versions[sorted(versions)[0]] = "v9"

    _reseal_json(copy / "gym" / "run.json", edit)
    _refused(copy / "gym", "was graded with checks")


def test_a_resealed_run_json_with_other_run_settings_is_refused(copy: Path) -> None:
    def edit(record: dict[str, Any]) -> None:
        record["protocol"]["max_steps"] = 7

    _reseal_json(copy / "gym" / "run.json", edit)
    _refused(copy / "gym", "its lock names other run settings")


# -- 4. a regrade's changes.json ------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("previous_report", "0" * 64),
        ("changes", [{"case_id": "x", "repeat": 0, "check": "c", "before": "pass", "after": None}]),
        ("versions", {"reached_goal": ["v0", "v1"]}),
        ("unversioned", ["reached_goal"]),
    ],
)
def test_a_resealed_changes_json_is_refused(copy: Path, field: str, value: Any) -> None:
    _reseal_json(copy / "gym" / "regrades" / "again" / "changes.json", _top(field, value))
    _refused(copy / "gym", f"'{field}' is not what the run's records")


# -- 5. a saved tool-world episode's manifest ------------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [("end_state_digest", "0" * 64), ("task_id", "other-01"), ("steps", 99), ("run_id", "x")],
)
def test_a_resealed_tool_episode_manifest_is_refused(copy: Path, field: str, value: Any) -> None:
    episode = next((copy / "episodes").rglob("manifest.json")).parent
    _reseal_json(episode / "manifest.json", _top(field, value))
    _refused(episode, f"'{field}' disagrees with")


def test_a_regrade_with_another_policy_keeps_it_and_is_decided_again(copy: Path) -> None:
    """`regrade --policy FILE` keeps the policy beside its decision: `verify` decides it
    again with that policy (and refuses the decision edited and re-sealed)."""
    policy = copy / "lenient.toml"
    policy.write_text('[[requirements]]\ncheck = "reached_goal"\nmin_pass_rate = 0.5\n')
    done = onrecord("regrade", copy / "gym", "--name", "lenient", "--policy", policy)
    assert done.returncode in (0, 1, 2), done.stderr
    regrade = copy / "gym" / "regrades" / "lenient"
    assert (regrade / "policy.json").is_file()
    assert onrecord("verify", copy / "gym").returncode == 0
    _reseal_json(regrade / "decision.json", _requirement("min_pass_rate", 0.25))
    _refused(regrade, "policy.json makes on", "min_pass_rate differs")
