from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.cli.main import main
from onrecord.envkit import (
    ToolEpisode,
    ToolWorld,
    check,
    created,
    evaluate_tool_episodes,
    failed,
    get_check,
    not_measured,
    only_tables,
    passed,
    register_check,
    registered_checks,
    run_checks,
    save_episode,
    tool_episode_trial,
    weighted_score,
)
from onrecord.episode import OutcomeCheck
from onrecord.errors import DigestMismatch, InputError, SchemaError

CASE = EvalCase(
    "Allocate 5.00 to claim 17 and nothing else",
    {
        "rules": [
            created("allocations", where={"claim_id": 17, "amount": 5.0}),
            only_tables("allocations"),
        ],
        "diff": {
            "allocations": {"created": [{"id": 1, "claim_id": 17, "amount": 5.0, "memo": ""}]}
        },
    },
    case_id="alloc-17",
)


@check("test/allocations_sum_to_5", "1")
def allocations_sum_to_5(episode: ToolEpisode) -> object:
    conn = episode.connect()
    try:
        total = conn.execute("SELECT coalesce(sum(amount), 0) FROM allocations").fetchone()[0]
    finally:
        conn.close()
    if total == 0:
        return not_measured("no allocation was made")
    return (
        passed("allocations sum to 5.00")
        if total == 5.0
        else failed(f"allocations sum to {total}, not 5.00", total=total)
    )


def run_episode(
    world: ToolWorld, directory: Path, amount: float = 5.0, claim: int = 17
) -> ToolEpisode:
    world.reset(case=CASE, seed=7, run_id="run-1")
    world.call("read_note", {"note_id": 1})
    world.call("allocate", {"claim_id": claim, "amount": amount})
    world.call("allocate", {"claim_id": 999, "amount": 1.0})
    return save_episode(world, directory)


def test_saved_episode_layout_and_contents(world: ToolWorld, tmp_path: Path) -> None:
    episode = run_episode(world, tmp_path / "ep")
    assert sorted(p.name for p in (tmp_path / "ep").iterdir()) == [
        "actions.jsonl",
        "audit.json",
        "diff.json",
        "final.sqlite",
        "manifest.json",
        "task.json",
    ]
    manifest = episode.manifest
    assert manifest["snapshot"] == world.snapshot.identity()
    assert manifest["end_state_digest"] == world.state_digest() == episode.end_state_digest()
    assert (manifest["steps"], manifest["state_version"], manifest["task_id"]) == (3, 1, "alloc-17")
    assert manifest["writes"] == ["allocate", "log_event", "set_status", "tag_claim"]
    assert [e["status"] for e in episode.actions] == ["ok", "ok", "rejected"]
    expected_diff = {
        "allocations": {
            "created": [{"id": 1, "claim_id": 17, "amount": 5.0, "memo": ""}],
            "changed": [],
            "deleted": [],
        }
    }
    assert episode.diff == expected_diff
    assert [(e["step"], e["table"], e["op"]) for e in episode.audit] == [
        (2, "allocations", "insert")
    ]
    assert episode.case == CASE
    assert episode.task == CASE.to_dict()
    # What was written to disk loads back as the same episode.
    loaded = ToolEpisode.load(tmp_path / "ep")
    assert loaded.diff == expected_diff
    assert loaded.actions == episode.actions
    assert [(e["tool"], e["status"]) for e in loaded.actions] == [
        ("read_note", "ok"),
        ("allocate", "ok"),
        ("allocate", "rejected"),
    ]
    assert loaded.audit == episode.audit
    assert loaded.manifest == manifest
    conn = loaded.connect()
    try:  # the final database holds the row, read with plain SQL
        assert conn.execute("SELECT id, claim_id, amount, memo FROM allocations").fetchall() == [
            (1, 17, 5.0, "")
        ]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("DELETE FROM claims")
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["actions.jsonl", "diff.json", "final.sqlite", "audit.json"])
def test_tampering_is_detected(world: ToolWorld, tmp_path: Path, name: str) -> None:
    run_episode(world, tmp_path / "ep")
    path = tmp_path / "ep" / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(DigestMismatch, match=f"{name} does not match the sha256"):
        ToolEpisode.load(tmp_path / "ep")


def test_unfinished_save_is_not_an_episode(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"has no manifest\.json"):
        ToolEpisode.load(tmp_path)


def test_checks_and_weighted_score(world: ToolWorld, tmp_path: Path) -> None:
    good = run_episode(world, tmp_path / "good")
    bad = run_episode(world, tmp_path / "bad", amount=4.0)
    names = [
        "envkit/diff_satisfies_rules",
        "envkit/diff_matches_expected",
        "envkit/rejected_calls_changed_nothing",
        "test/allocations_sum_to_5",
    ]
    assert [r.status for r in run_checks(good, names)] == ["pass"] * 4
    results = run_checks(bad, names)
    assert [r.status for r in results] == ["fail", "fail", "pass", "fail"]
    assert results[0].reason.startswith("1 rule(s) broken: expected exactly 1 row created")
    assert results[0].evidence == {
        "broken": [
            "expected exactly 1 row created in allocations where amount = 5.0 and "
            "claim_id = 17; found 0"
        ]
    }
    assert results[1].evidence == {  # the expected row is missing and the 4.00 one is extra
        "mismatches": [
            'allocations: expected a created row {"amount":5.0,"claim_id":17,"id":1,"memo":""},'
            " which the episode did not create",
            'allocations: the episode created the row {"amount":4.0,"claim_id":17,"id":1,'
            '"memo":""}, which was not expected',
        ]
    }
    assert results[3].evidence == {"total": 4.0}
    score = weighted_score(results, {"envkit/rejected_calls_changed_nothing": 3})
    assert (score.value, score.measured_weight, score.total_weight) == (0.5, 6.0, 6.0)
    with pytest.raises(InputError, match="unknown"):
        weighted_score(results, {"nope": 1})


def test_not_measured_and_evaluator_errors_never_pass(world: ToolWorld, tmp_path: Path) -> None:
    world.reset()
    episode = save_episode(world, tmp_path / "empty")
    raising = OutcomeCheck("test/raises", "1", lambda episode: 1 / 0)
    results = run_checks(
        episode, ["envkit/diff_satisfies_rules", "test/allocations_sum_to_5", raising]
    )
    assert [r.status for r in results] == ["not_measured", "not_measured", "evaluator_error"]
    assert weighted_score(results).value is None


def test_injected_failure_is_caught_by_the_generic_check(world: ToolWorld, tmp_path: Path) -> None:
    world.reset(case=CASE)
    world.inject_failure("allocate")
    world.call("allocate", {"claim_id": 17, "amount": 5.0})
    result = run_checks(
        save_episode(world, tmp_path / "ep"), ["envkit/rejected_calls_changed_nothing"]
    )[0]
    assert (result.status, result.evidence) == ("fail", {"steps": [1]})


def test_registry_refuses_silent_replacement() -> None:
    assert get_check("test/allocations_sum_to_5") is allocations_sum_to_5
    with pytest.raises(InputError, match="already registered"):
        register_check(OutcomeCheck("test/allocations_sum_to_5", "2", lambda e: None))
    with pytest.raises(InputError, match="no check named 'nope' is registered"):
        get_check("nope")
    assert "envkit/diff_matches_expected" in registered_checks()


def test_report_adapter_feeds_acceptance_policy(world: ToolWorld, tmp_path: Path) -> None:
    episodes = [
        run_episode(world, tmp_path / "a"),
        run_episode(world, tmp_path / "b"),
        run_episode(world, tmp_path / "c", amount=4.0),
    ]
    checks = ["envkit/diff_satisfies_rules", "test/allocations_sum_to_5"]
    trial = tool_episode_trial(episodes[0], checks)
    assert trial.case == CASE.identity
    assert trial.source["kind"] == "tool_episode"
    assert trial.settings["environment_id"] == "envkit:claims-basic"
    assert trial.measures == {
        "tool_calls": 3.0,
        "rejected_calls": 1.0,
        "rows_changed": 1.0,
        "row_writes": 1.0,
        "rows_put_back": 0.0,
    }
    report = evaluate_tool_episodes(episodes, checks)
    assert [t.repeat for t in report.trials] == [0, 1, 2]
    policy = AcceptancePolicy((CheckRequirement("envkit/diff_satisfies_rules"),))
    assert policy.evaluate(report).decision == "reject"
    accepted = evaluate_tool_episodes(episodes[:2], checks)
    assert policy.evaluate(accepted).decision == "accept"
    world.reset()
    with pytest.raises(InputError, match="has no task"):
        tool_episode_trial(save_episode(world, tmp_path / "none"), checks)


def test_cli_check_runs_one_check_and_sets_the_exit_code(
    world: ToolWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = run_episode(world, tmp_path / "good").path
    bad = run_episode(world, tmp_path / "bad", amount=4.0).path
    assert main(["check", "envkit/diff_satisfies_rules", "--episode", str(good)]) == 0
    assert capsys.readouterr().out.startswith("pass")
    assert main(["check", "envkit/diff_satisfies_rules", "--episode", str(bad)]) == 1
    assert (
        main(
            [
                "check",
                "envkit/diff_satisfies_rules",
                "envkit/diff_matches_expected",
                "--weight",
                "envkit/diff_matches_expected=3",
                "--json",
                "--episode",
                str(bad),
            ]
        )
        == 1
    )
    out = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert out["score"] == 0.0
    assert len(out["results"]) == 2
    assert main(["check", "nope", "--episode", str(good)]) == 3
    assert "no check named 'nope'" in capsys.readouterr().err


def test_cli_check_imports_user_modules_in_a_real_process(world: ToolWorld, tmp_path: Path) -> None:
    episode = run_episode(world, tmp_path / "ep").path
    (tmp_path / "mychecks.py").write_text(
        "from onrecord.envkit import check, passed\n"
        "@check('mine/always', '1')\n"
        "def always(episode):\n"
        "    return passed(f'{len(episode.actions)} calls')\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "onrecord.cli.main",
            "check",
            "mine/always",
            "--import",
            "mychecks",
            "--episode",
            str(episode),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert (done.returncode, done.stdout.strip()) == (0, "pass            mine/always v1: 3 calls")


def test_declared_endings_reach_the_trial(world: ToolWorld, tmp_path: Path) -> None:
    world.reset(case=CASE)
    world.call("allocate", {"claim_id": 17, "amount": 5.0})
    crashed = save_episode(
        world, tmp_path / "crashed", ending="agent_error", error="RuntimeError: boom"
    )
    assert (crashed.manifest["ending"], crashed.manifest["ending_error"]) == (
        "agent_error",
        "RuntimeError: boom",
    )
    assert tool_episode_trial(crashed, []).coverage_issues == (
        "the episode ended with agent_error: RuntimeError: boom, not finished",
    )
    world.reset(case=CASE)
    world.end_episode("finished")
    finished = save_episode(world, tmp_path / "finished")
    assert finished.manifest["ending"] == "finished"
    assert tool_episode_trial(finished, []).coverage_issues == ()
    world.reset(case=CASE)
    assert save_episode(world, tmp_path / "silent").manifest["ending"] == "undeclared"
    with pytest.raises(InputError, match="ending must be one of"):
        world.end_episode("exploded")


def test_episode_without_database(world: ToolWorld, tmp_path: Path) -> None:
    episode = run_episode(world, tmp_path / "ep")
    light = save_episode(world, tmp_path / "light", database=False)
    assert not (tmp_path / "light" / "final.sqlite").exists()
    assert ToolEpisode.load(tmp_path / "light").diff == episode.diff
    assert run_checks(light, ["envkit/diff_satisfies_rules"])[0].status == "pass"
    assert run_checks(light, ["test/allocations_sum_to_5"])[0].status == "evaluator_error"
    with pytest.raises(SchemaError, match="saved with database=False"):
        light.connect()
