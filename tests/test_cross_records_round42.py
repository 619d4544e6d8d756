"""Round 42: what ``onrecord verify`` cross-checks, whichever path names the record.

As in round 41, every test makes real records (``onrecord run``, ``regrade``, the
remittance suite's saved tool-world episodes, a ``ToolWorld`` saved by hand), changes
one value, re-seals that file's digest as onrecord computes it, and runs the real
``onrecord verify``: exit 3, naming what disagrees, no traceback.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.domains.remittance import load_tasks, run_demo_suite
from onrecord.envkit import save_episode
from tests.cli_process import onrecord
from tests.envkit import claims_env
from tests.test_cross_records_round41 import Edit, _refused, _reseal_json, _reseal_line


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("round42")
    done = onrecord(
        "run", "frozenlake", "-a", "walks_into_hole", "-s", "0,1", "-o", base / "gym",
        "--no-progress",
    )  # fmt: skip
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


def _verified(path: Path, *expected: str) -> str:
    done = onrecord("verify", path)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, done.stdout
    return done.stdout


def _top(field: str, value: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        record[field] = value

    return edit


# -- 1. a decision.json named on its own is verified as its directory is --------------
def _passed(record: dict[str, Any]) -> None:
    record["decision"]["requirements"][0]["passed"] = 1


def _threshold(record: dict[str, Any]) -> None:
    record["decision"]["requirements"][0]["min_pass_rate"] = 0.0


@pytest.mark.parametrize("where", ["gym", "gym/regrades/again"])
@pytest.mark.parametrize(
    "edit", [_passed, _threshold, _top("expected", 99), _top("complete", False)]
)
def test_a_resealed_decision_named_on_its_own_is_decided_again(
    copy: Path, where: str, edit: Edit
) -> None:
    """Before: `verify RUN/decision.json` was ok (exit 0) while `verify RUN` refused it."""
    decision = copy / where / "decision.json"
    _reseal_json(decision, edit)
    _refused(decision, f"{decision} is not the decision the policy", "differs")


def test_a_decision_named_on_its_own_verifies_its_whole_run(copy: Path) -> None:
    """Naming the file is never weaker than naming the run: a record edited and
    re-sealed is found through the decision too."""

    def status(record: dict[str, Any]) -> None:
        result = record["trial"]["results"][0]
        result["status"] = "pass" if result["status"] != "pass" else "fail"

    _reseal_line(copy / "gym" / "episodes.jsonl", 0, status)
    _refused(copy / "gym" / "decision.json", "differently than its record")


def test_a_link_to_a_run_decision_is_verified_as_that_run(copy: Path) -> None:
    _reseal_json(copy / "gym" / "decision.json", _passed)
    link = copy / "link.json"
    link.symlink_to(copy / "gym" / "decision.json")
    _refused(link, "is not the decision the policy")


def test_a_run_decision_without_its_report_is_refused(copy: Path) -> None:
    """Grading removes decision.json before writing report.json: a decision.json with
    no report.json was verified as nothing at all (the run said ok)."""
    (copy / "gym" / "report.json").unlink()
    _reseal_json(copy / "gym" / "decision.json", _passed)
    for path in (copy / "gym", copy / "gym" / "decision.json"):
        _refused(path, "decides a report.json that is missing")


def test_an_unchanged_decision_verifies_as_before(root: Path) -> None:
    for where in ("gym", "gym/regrades/again"):
        _verified(root / where / "decision.json", "run decision (reject, 2 of 2 episodes)")


def test_a_decision_copied_out_of_its_run_says_it_was_not_decided_again(copy: Path) -> None:
    alone = copy / "alone"
    alone.mkdir()
    shutil.copy(copy / "gym" / "decision.json", alone / "decision.json")
    _verified(alone / "decision.json", "not decided again")
    # Edited and re-sealed, it still verifies: the summary says how little was checked.
    _reseal_json(alone / "decision.json", _passed)
    _verified(alone / "decision.json", "not decided again")


def test_a_regrade_copied_out_of_its_run_says_its_decision_was_not_decided_again(
    copy: Path,
) -> None:
    shutil.copytree(copy / "gym" / "regrades" / "again", copy / "again")
    _verified(copy / "again", "decision.json not decided again")
    _verified(copy / "again" / "decision.json", "not decided again")


# -- 2. a tool-world episode's manifest vs its action log and audit ---------------------
def _episode(root: Path) -> Path:
    return next((root / "episodes").rglob("manifest.json")).parent


def _without(field: str, name: str) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        named = (item.get("name") if field == "tools" else item for item in record[field])
        record[field] = [item for item, of in zip(record[field], named, strict=True) if of != name]

    return edit


def test_the_suite_episode_has_what_the_manifest_checks_use(root: Path) -> None:
    """The edits below change something real: a write, a read tool, a hidden read."""
    episode = _episode(root)
    manifest = orjson.loads((episode / "manifest.json").read_bytes())
    calls = [orjson.loads(line) for line in (episode / "actions.jsonl").read_bytes().splitlines()]
    assert manifest["state_version"] >= 1
    assert "post_allocation" in {call["tool"] for call in calls}
    assert any(read["table"] == "case_notes" for call in calls for read in call["reads"])
    assert "read_remittance" in {call["tool"] for call in calls}
    _verified(episode, "tool-world episode")


@pytest.mark.parametrize(
    ("field", "edit"),
    [
        ("state_version", _top("state_version", 7)),
        ("writes", _without("writes", "post_allocation")),
        ("writes", _top("writes", ["read_remittance"])),
        ("writes", _top("writes", ["no_such_tool"])),
        ("tools", _without("tools", "read_remittance")),
        ("hidden", _top("hidden", [])),
        ("hidden", _top("hidden", ["case_notes", "no_such_table"])),
    ],
)
def test_a_resealed_tool_episode_manifest_is_refused(copy: Path, field: str, edit: Edit) -> None:
    episode = _episode(copy)
    _reseal_json(episode / "manifest.json", edit)
    _refused(episode, f"'{field}' disagrees with")


def test_a_task_id_is_checked_against_the_calls_of_an_episode_without_a_task(
    tmp_path: Path,
) -> None:
    """task.json holds no case: the task id was checked against nothing."""
    with claims_env.world() as world:
        world.reset(run_id="r1")
        world.call("allocate", {"claim_id": 1, "amount": 1.0})
        world.call("read_note", {"note_id": 1})
        save_episode(world, tmp_path / "episode")
    _verified(tmp_path / "episode")
    _reseal_json(tmp_path / "episode" / "manifest.json", _top("task_id", "other-01"))
    _refused(tmp_path / "episode", "'task_id' disagrees with call 1 in actions.jsonl")


# -- 3. a run's records vs run.json's check versions, before any grading ----------------
def _ungraded(copy: Path) -> Path:
    """The run as a kill before its grading leaves it: records, no report or decision."""
    run = copy / "gym"
    shutil.rmtree(run / "regrades")
    (run / "report.json").unlink()
    (run / "decision.json").unlink()
    return run


def _version(record: dict[str, Any]) -> None:
    record["trial"]["results"][0]["version"] = "v0"


def _renamed(record: dict[str, Any]) -> None:
    record["trial"]["results"][0]["name"] = "other_check"


def _dropped(record: dict[str, Any]) -> None:
    del record["trial"]["results"][0]


@pytest.mark.parametrize("edit", [_version, _renamed, _dropped])
def test_a_resealed_record_of_an_ungraded_run_is_checked_against_run_json(
    copy: Path, edit: Edit
) -> None:
    run = _ungraded(copy)
    _verified(run, "2 of 2 episodes")
    _reseal_line(run / "episodes.jsonl", 1, edit)
    _refused(run, "episodes.jsonl: line 2: episode", "was graded with checks", "run.json says")


def test_a_regrade_decision_named_from_inside_the_regrade_is_decided_again(copy: Path) -> None:
    """`cd RUN/regrades/NAME && onrecord verify decision.json`: the relative path's
    folder is "." (no regrades/ above it as written), which read as a copy elsewhere."""
    regrade = copy / "gym" / "regrades" / "again"
    _reseal_json(regrade / "decision.json", _passed)
    done = onrecord("verify", "decision.json", cwd=regrade)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "is not the decision the policy" in done.stderr, done.stderr
