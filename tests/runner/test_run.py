"""Runs end to end: planning, executors, the run directory, decisions and exit codes."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from onrecord.errors import InputError
from onrecord.report import EvaluationReport
from onrecord.runner import (
    InProcessExecutor,
    ProcessPoolExecutor,
    RunStore,
    plan_run,
    start_run,
)
from tests.runner.conftest import ROOT, onrecord


def _verdicts(path: Path) -> dict[tuple[str, int], tuple[str, dict[str, str]]]:
    return {
        record.key: (
            record.data["fingerprint"],
            {r["name"]: r["status"] for r in record.data["trial"]["results"]},
        )
        for record in RunStore.open(path).records()
    }


def test_cartpole_run_records_every_episode_once_and_decides(run_dir: Path) -> None:
    protocol = plan_run("cartpole", "balances", seeds=[0, 1, 2], repeats=2)
    result = start_run(run_dir, protocol)
    keys = [record.key for record in RunStore.open(run_dir).records()]
    assert sorted(keys) == [("cartpole/survive-500", r) for r in range(6)]
    assert result.complete
    assert result.decision.decision == "accept"
    assert result.exit_code == 0
    saved = EvaluationReport.load(run_dir / "report.json")
    assert saved.digest == result.report.digest
    assert [t.settings["seed"] for t in saved.trials] == [0, 0, 1, 1, 2, 2]


def test_process_pool_gives_the_same_results_as_in_process(tmp_path: Path) -> None:
    protocol = plan_run("CartPole-v1", "random", seeds=list(range(6)), repeats=2)
    start_run(tmp_path / "a", protocol, executor=InProcessExecutor())
    with ProcessPoolExecutor(2, chunk_size=3) as pool:
        start_run(tmp_path / "b", protocol, executor=pool)
    a, b = _verdicts(tmp_path / "a"), _verdicts(tmp_path / "b")
    assert a == b
    assert len(a) == 12
    # Repeats of one seed differ (the random agent draws per repeat), seeds too.
    assert len({fingerprint for fingerprint, _ in a.values()}) == 12


def test_remittance_run_keeps_action_logs_and_row_diffs(run_dir: Path) -> None:
    protocol = plan_run(
        "remittance",
        "double_poster",
        seeds=[0],
        repeats=1,
        environment_config={"size": 40, "kinds": ["duplicate", "full_payment"]},
    )
    result = start_run(run_dir, protocol)
    assert result.decision.decision == "reject"
    assert result.exit_code == 1
    store = RunStore.open(run_dir)
    lines = (run_dir / "actions.jsonl").read_bytes().splitlines()
    assert len(lines) == sum(r.data["action_log"]["events"] for r in store.records()) > 0
    failing = {
        r.key[0]
        for r in store.records()
        if any(x["status"] == "fail" for x in r.data["trial"]["results"])
    }
    assert failing == {"duplicate-01", "duplicate-02", "duplicate-03"}
    record = next(r for r in store.records() if r.key[0] == "duplicate-01")
    saved = store.saved_episode(record)
    assert saved.action_log[0]["task_id"] == "duplicate-01"
    assert saved.evidence["diff"]["allocations"]["created"]


def test_a_run_that_cannot_record_an_episode_is_incomplete_and_retried(run_dir: Path) -> None:
    protocol = plan_run("tests.runner.helpers:unportable", "noop", seeds=[0, 1])
    result = start_run(run_dir, protocol)
    assert not result.complete
    assert result.exit_code == 2
    assert len(result.errors) == 2
    assert "PortabilityError" in result.errors[0]
    errors = (run_dir / "errors.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["case_id"] for line in errors] == [
        "tests.runner.helpers:unportable"
    ] * 2


@pytest.mark.parametrize(
    ("agent", "code", "decision"),
    [
        ("walks_to_goal", 0, "accept"),
        ("walks_into_hole", 1, "reject"),
        ("gives_up_early", 2, "indeterminate"),
    ],
)
def test_cli_exit_code_is_the_decision(
    tmp_path: Path, agent: str, code: int, decision: str
) -> None:
    done = onrecord(
        "run", "frozenlake", "--agent", agent, "--seeds", "0-2", "--out", str(tmp_path / agent)
    )
    assert done.returncode == code, done.stderr
    assert f"decision: {decision}" in done.stdout
    assert "3/3 episodes recorded" in done.stdout


def test_config_file_holds_every_flag(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text('[[requirements]]\ncheck = "reached_goal"\n')
    (tmp_path / "run.toml").write_text(
        'environment = "frozenlake"\nagent = "tests.runner.helpers:walker"\nseeds = "0-1"\n'
        'repeats = 2\nmax_steps = 12\npolicy = "policy.toml"\nout = "out"\n'
        'executor = "process"\nworkers = 2\n'
    )
    done = onrecord("run", "--config", str(tmp_path / "run.toml"), "--no-progress")
    assert done.returncode == 0, done.stderr
    protocol = RunStore.open(tmp_path / "out").protocol
    assert (protocol.seeds, protocol.repeats, protocol.max_steps) == ((0, 1), 2, 12)
    assert [r["check"] for r in protocol.policy["requirements"]] == ["reached_goal"]
    assert "process × 2" in done.stdout


def test_flags_override_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "run.toml").write_text(
        'environment = "frozenlake"\nagent = "walks_to_goal"\nseeds = [0, 1, 2]\n'
    )
    done = onrecord(
        "run", "-c", str(tmp_path / "run.toml"), "--seeds", "5", "-o", str(tmp_path / "out")
    )
    assert done.returncode == 0, done.stderr
    assert RunStore.open(tmp_path / "out").protocol.seeds == (5,)


def test_unknown_names_fail_before_anything_is_written(run_dir: Path) -> None:
    with pytest.raises(
        InputError,
        match=r"unknown environment 'remitance'.*did you mean "
        "'remittance'",
    ):
        plan_run("remitance", "careful")
    with pytest.raises(InputError, match=r"unknown agent 'carefull'.*did you mean 'careful'"):
        plan_run("remittance", "carefull")
    with pytest.raises(InputError, match="cannot import 'no_such_module'"):
        plan_run("cartpole", "no_such_module:agent")
    with pytest.raises(InputError, match="unknown task 'nope'"):
        plan_run("cartpole", "balances", tasks=["nope"])
    done = onrecord("run", "no-such-env-v0", "--agent", "random", "--out", str(run_dir))
    assert done.returncode == 3
    assert "unknown environment 'no-such-env-v0'" in done.stderr
    assert not run_dir.exists()


@pytest.mark.parametrize(
    ("agent", "handler", "decision"),
    [
        ("correct", "idempotent", "accept"),
        ("safe_retry", "idempotent", "accept"),
        ("duplicate_write", "unsafe", "reject"),
        ("forbidden_then_restored", "idempotent", "reject"),
    ],
)
def test_ledger_runs_on_a_fresh_database_per_episode(
    tmp_path: Path, agent: str, handler: str, decision: str
) -> None:
    protocol = plan_run(
        "ledger", agent, seeds=[7, 8], repeats=2, environment_config={"handler": handler}
    )
    result = start_run(tmp_path / "run", protocol)
    assert result.decision.decision == decision
    assert len(result.report.trials) == 4


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("raise RuntimeError('no licence for the grader')\n", "RuntimeError: no licence"),
        (
            "def CHECKS():\n    raise KeyError('threshold')\n",
            "the check factory 'broken_checks:CHECKS' raised KeyError",
        ),
    ],
    ids=["module-raises", "factory-raises"],
)
def test_checks_that_fail_to_load_are_bad_input_not_a_reject(
    tmp_path: Path, source: str, expected: str
) -> None:
    """Exit 1 reads as reject in CI: a grader that cannot load is exit 3, never 1."""
    (tmp_path / "broken_checks.py").write_text(source)
    done = onrecord(
        "run",
        "frozenlake",
        "--agent",
        "walks_to_goal",
        "--checks",
        "broken_checks:CHECKS",
        "--out",
        str(tmp_path / "out"),
        env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )
    assert done.returncode == 3, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
