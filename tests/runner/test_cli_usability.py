"""Small things a new user hits on the way to their own `onrecord run`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest

from onrecord import EvalCase
from onrecord.errors import InputError
from onrecord.runner import (
    GymnasiumProvider,
    InProcessExecutor,
    ProcessPoolExecutor,
    agent_factory,
    make_executor,
    plan_run,
    start_run,
)
from onrecord.runner._registry import import_object
from tests.runner.conftest import onrecord


def test_an_explicit_inprocess_executor_is_not_quietly_a_process_pool() -> None:
    # Before: --executor inprocess --workers 2 ran "process × 2".
    with pytest.raises(InputError, match="inprocess executor runs one episode at a time"):
        make_executor("inprocess", workers=2)
    assert isinstance(make_executor("inprocess", workers=1), InProcessExecutor)
    assert isinstance(make_executor(), InProcessExecutor)
    pool = make_executor(workers=2)  # --workers alone still means a pool
    assert isinstance(pool, ProcessPoolExecutor)
    assert pool.workers == 2


def test_the_cli_refuses_inprocess_with_workers(tmp_path: Path) -> None:
    done = onrecord(
        "run", "frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0",
        "--executor", "inprocess", "--workers", "2", "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "--executor process --workers 2" in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_task_file_with_task_tables_names_the_difference(tmp_path: Path) -> None:
    # Before: "holds no tasks", with no word on [[task]] versus [[tasks]].
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\nid = "a"\nprompt = "do it"\n')
    done = onrecord(
        "run", "frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0",
        "--tasks-file", str(tasks), "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "[[tasks]] tables (plural)" in done.stderr


def test_import_errors_suggest_names_and_the_path() -> None:
    with pytest.raises(InputError, match=r"did you mean 'walker'"):
        import_object("tests.runner.helpers:walkr")
    with pytest.raises(InputError, match="PYTHONPATH"):
        import_object("no_such_module_of_mine:make")


class _Counter(gym.Env[Any, Any]):
    """Counts up from the task's start; the episode ends at the task's goal."""

    observation_space = gym.spaces.Discrete(100)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, start: int, goal: int) -> None:
        self.state = {"count": start}
        self.goal = goal

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, Any]:
        super().reset(seed=seed)
        return self.state["count"], {}

    def step(self, action: int) -> tuple[int, float, bool, bool, Any]:
        self.state = {"count": self.state["count"] + int(action)}
        return self.state["count"], 0.0, self.state["count"] >= self.goal, False, {}


def _climb(env: Any, observation: Any, info: Any) -> None:
    for _ in range(50):
        _, _, terminated, _, _ = env.step(1)
        if terminated:
            return


def task_provider() -> GymnasiumProvider:
    return GymnasiumProvider(
        make_for_task=lambda case: _Counter(**case.input),
        environment_id="counter/v1",
        tasks=[
            EvalCase({"start": 3, "goal": 5}, case_id="short"),
            EvalCase({"start": 10, "goal": 20}, case_id="long"),
        ],
        agents={"climb": agent_factory(lambda context: _climb)},
        observe=lambda env: env.unwrapped.state,
    )


def test_a_provider_can_build_each_task_s_environment(tmp_path: Path) -> None:
    # Before: the environment was never told the task (make() takes no arguments).
    start_run(tmp_path / "run", plan_run(f"{__name__}:task_provider", "climb", seeds=[0]))
    episodes = {
        record["case_id"]: record["evidence"]
        for record in map(
            orjson.loads, (tmp_path / "run" / "episodes.jsonl").read_bytes().splitlines()
        )
    }
    assert episodes["short"]["initial"]["state"] == {"count": 3}
    assert episodes["short"]["final_state"] == {"count": 5}
    assert episodes["long"]["initial"]["state"] == {"count": 10}
    assert episodes["long"]["final_state"] == {"count": 20}
    with pytest.raises(InputError, match="exactly one of make"):
        GymnasiumProvider(
            lambda: _Counter(0, 1), make_for_task=lambda case: _Counter(0, 1), environment_id="x"
        )
    with pytest.raises(InputError, match="exactly one of make"):
        GymnasiumProvider(environment_id="x")


def test_a_used_out_directory_is_refused_before_any_executor_starts(tmp_path: Path) -> None:
    # Before: a Ray cluster (seconds) was started, then the directory refused.
    out = tmp_path / "used"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    done = onrecord(
        "run", "frozenlake", "--agent", "walks_to_goal", "--seeds", "0",
        "--executor", "ray", "--address", "127.0.0.1:1", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "already exists and is not empty" in done.stderr  # not the address's error
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
