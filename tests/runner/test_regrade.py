"""Re-grading: new verdicts from saved evidence only, with every change listed."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.errors import ConsistencyError, InputError
from onrecord.runner import plan_run, regrade_run, start_run
from tests.runner.conftest import onrecord


def _lake_run(path: Path) -> None:
    start_run(
        path,
        plan_run(
            "frozenlake",
            "tests.runner.helpers:walker",
            seeds=[0, 1],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )


def test_checks_the_runs_policy_does_not_name_get_a_note_on_the_policy(
    run_dir: Path, tmp_path: Path
) -> None:
    """Before: the decision was indeterminate, its requirements "undecided" with "no check
    in the report matches 'short'", and nothing said that the run's policy, written for
    the run's checks, was the one judging the new checks, nor how to give another."""
    _lake_run(run_dir)
    done = onrecord("regrade", str(run_dir), "--checks", "default", "--no-progress")
    assert done.returncode == 2, done.stdout + done.stderr
    note = " ".join(done.stdout.split("note:", 1)[1].split())
    assert note.startswith("1 requirement of the run's policy matches no check of default (short)")
    assert "pass --policy FILE with requirements for these checks" in note
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "*"\n')
    given = onrecord("regrade", str(run_dir), "--checks", "default", "--policy", str(policy))
    assert given.returncode == 0, given.stdout + given.stderr  # the walker reaches the goal
    assert "no check of" not in given.stdout, given.stdout  # a policy of the user's


def test_regrade_lists_changed_verdicts_without_calling_the_agent(
    run_dir: Path, tmp_path: Path
) -> None:
    _lake_run(run_dir)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    calls = tmp_path / "calls"
    done = onrecord(
        "regrade",
        str(run_dir),
        "--checks",
        "tests.runner.helpers:SHORT_V2",
        "--name",
        "stricter",
        env={"ONRECORD_TEST_AGENT_CALLS": str(calls)},
    )
    assert done.returncode == 1, done.stdout + done.stderr  # every episode now fails
    assert not calls.exists()  # neither the agent nor the environment ran
    assert "no check of" not in done.stdout  # the run's policy names "short": judged
    assert "check short: version v1 → v2" in done.stdout
    assert "2 verdicts changed" in done.stdout
    assert "frozenlake/goal#0 short: pass → fail" in done.stdout
    changes = orjson.loads((run_dir / "regrades" / "stricter" / "changes.json").read_bytes())
    assert [(c["repeat"], c["before"], c["after"]) for c in changes["changes"]] == [
        (0, "pass", "fail"),
        (1, "pass", "fail"),
    ]
    after = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    assert after == before  # the run's own records and grading are untouched


def test_regrade_with_the_same_checks_changes_nothing(run_dir: Path) -> None:
    _lake_run(run_dir)
    regrade = regrade_run(run_dir, name="same")
    assert regrade.changes == ()
    assert regrade.versions == {}
    assert regrade.report.trials == regrade.previous.trials


def test_remittance_regrade_rebuilds_each_end_state_from_the_recorded_diff(run_dir: Path) -> None:
    protocol = plan_run(
        "remittance",
        "double_poster",
        seeds=[0],
        environment_config={"size": 30, "kinds": ["duplicate", "split"]},
    )
    start_run(run_dir, protocol)
    regrade = regrade_run(run_dir, name="again")
    assert regrade.changes == ()
    assert regrade.decision.decision == "reject"
    assert [t.to_dict() for t in regrade.report.trials] == [
        t.to_dict() for t in regrade.previous.trials
    ]


def test_regrade_refuses_a_diff_that_does_not_rebuild_the_recorded_end_state(run_dir: Path) -> None:
    protocol = plan_run(
        "remittance",
        "careful",
        seeds=[0],
        environment_config={"size": 30, "kinds": ["full_payment"]},
    )
    start_run(run_dir, protocol)
    regrade_run(run_dir, name="x")
    with pytest.raises(InputError, match="already exists; choose another --name"):
        regrade_run(run_dir, name="x")
    # A forgery that keeps every digest consistent still cannot fake the end state.
    path = run_dir / "episodes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    created = record["evidence"]["diff"]["allocations"]["created"]
    created[0]["amount_cents"] += 1
    record["evidence"]["digest"] = content_digest(record["evidence"])
    record["trial"]["source"]["digest"] = record["evidence"]["digest"]  # graded by it
    record["digest"] = content_digest(record)
    path.write_bytes(record_bytes(record) + b"".join(lines[1:]))
    with pytest.raises(
        ConsistencyError, match="rebuilt from the recorded diff of 'full-01' hashes differently"
    ):
        regrade_run(run_dir, name="forged")
