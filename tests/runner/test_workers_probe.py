"""Agents that kill their worker, hang it, or call sys.exit(): the run must go on (or
stop promptly on Ctrl-C), record the others, never exit as if accepted, and resume."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from onrecord.runner import RunStore
from tests.runner.conftest import interrupt_run, onrecord

DIE = "ONRECORD_PROBE_DIE_SEED"
HANG = "ONRECORD_PROBE_HANG_SEED"


def _walk(env: Any) -> str:
    for action in (1, 1, 2, 2, 1, 2):  # FrozenLake 4x4: to the goal
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"
    return "gave up"


def dies(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Kills its worker process on the seed named by ``ONRECORD_PROBE_DIE_SEED``."""
    if str(env.np_random_seed) == os.environ.get(DIE):
        os._exit(7)
    return _walk(env)


def hangs(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Never returns on the seed named by ``ONRECORD_PROBE_HANG_SEED``."""
    if str(env.np_random_seed) == os.environ.get(HANG):
        time.sleep(3600)
    return _walk(env)


def exits(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Calls sys.exit(0) on seed 1."""
    if env.np_random_seed == 1:
        sys.exit(0)
    return _walk(env)


def _lake(agent: str, seeds: str) -> list[str]:
    return ["frozenlake", "--agent", f"tests.runner.test_workers_probe:{agent}", "--seeds", seeds]


POOL = ["--executor", "process", "--workers", "2"]


def _errors(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "errors.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def _keys(run_dir: Path) -> list[tuple[str, int]]:
    return [record.key for record in RunStore.open(run_dir).records()]


def test_an_agent_calling_sys_exit_is_an_error_not_the_exit_code(tmp_path: Path) -> None:
    for executor in (["--executor", "inprocess"], POOL):
        run_dir = tmp_path / executor[1]
        args = _lake("exits", "0-3")
        done = onrecord("run", *args, *executor, "--out", str(run_dir), "--no-progress")
        # Before: the run ended with the agent's exit code 0 ("accept"), nothing graded.
        assert done.returncode == 2, done.stdout + done.stderr
        assert "not recorded: frozenlake/goal#1: SystemExit" in done.stdout
        assert sorted(_keys(run_dir)) == [("frozenlake/goal", r) for r in (0, 2, 3)]
        assert [e["repeat"] for e in _errors(run_dir)] == [1]


def test_a_worker_that_dies_costs_only_its_episode_and_resume_retries_it(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    args = [*_lake("dies", "0-7"), *POOL, "--out", str(run_dir), "--no-progress"]
    done = onrecord("run", *args, env={DIE: "2"})
    # Before: BrokenProcessPool traceback and exit code 1 ("reject").
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "frozenlake/goal#2: the worker process running this episode died" in done.stdout
    assert sorted(_keys(run_dir)) == [("frozenlake/goal", r) for r in range(8) if r != 2]
    assert [e["repeat"] for e in _errors(run_dir)] == [2]
    again = onrecord("run", "--resume", str(run_dir), *POOL, "--no-progress")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(_keys(run_dir)) == [("frozenlake/goal", r) for r in range(8)]


def test_ctrl_c_stops_a_hung_worker_pool_promptly_and_resume_finishes(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    # Before: the parent waited forever for the hung worker's chunk.
    code, stderr = interrupt_run(
        *_lake("hangs", "0-5"),
        *POOL,
        "--no-progress",
        run_dir=run_dir,
        env={HANG: "1"},
        hangs=True,
        timeout=15,
    )
    assert code == 130, stderr
    assert "interrupted; finished episodes are saved" in stderr
    assert "Traceback" not in stderr
    assert len(_keys(run_dir)) == 5
    again = onrecord("run", "--resume", str(run_dir), "--no-progress")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(_keys(run_dir)) == [("frozenlake/goal", r) for r in range(6)]
