"""Async agents at the edges of a run: stopped by ``episode_timeout`` while awaiting
(named at their await, not at the event loop's selector), and met by ``start_run``
called while an event loop runs in the calling thread (a notebook), where the run stops
on the first episode with advice instead of recording every episode as an error."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.errors import InputError
from onrecord.runner import plan_run, resume_run, start_run

_GOAL = (1, 1, 2, 2, 1, 2)


async def hang(env: Any, observation: Any, info: dict[str, Any]) -> None:
    env.step(1)
    await asyncio.sleep(3600)  # an LLM call that never answers


def build_hanging(brief: Any) -> Any:
    async def act(observation: Any) -> Any:
        await asyncio.sleep(3600)

    return act


async def to_goal(env: Any, observation: Any, info: dict[str, Any]) -> str:
    for action in _GOAL:
        await asyncio.sleep(0)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "ended"
    return "gave up"


def to_goal_later(env: Any, observation: Any, info: dict[str, Any]) -> Any:
    """Async only once called (it returns to_goal's coroutine): start_run cannot tell."""
    return to_goal(env, observation, info)


def build_finishing(brief: Any) -> Any:
    async def act(observation: Any) -> Any:
        await asyncio.sleep(0)
        return {"tool": "finish", "arguments": {"message": "done"}}

    return act


def _await_line(function: Any) -> str:
    lines, first = inspect.getsourcelines(function)
    offset = next(i for i, line in enumerate(lines) if "await asyncio.sleep(3600)" in line)
    return f"{__file__}:{first + offset}"


def _protocol(environment: str, agent: str) -> Any:
    if environment == "frozenlake":
        return plan_run("frozenlake", f"{__name__}:{agent}", seeds=[0])
    return plan_run("remittance", f"{__name__}:{agent}", tasks=["full-01"])


@pytest.mark.parametrize(
    ("environment", "agent", "awaiting"),
    [("frozenlake", "hang", hang), ("remittance", "build_hanging", build_hanging)],
)
def test_a_timed_out_async_agent_is_named_at_its_await(
    environment: str, agent: str, awaiting: Any, tmp_path: Path
) -> None:
    result = start_run(tmp_path / "run", _protocol(environment, agent), episode_timeout=0.3)
    assert not result.complete
    (error,) = result.errors
    assert f"stuck at {_await_line(awaiting)})" in error, error
    with pytest.raises(RuntimeError):  # the episode's loop is gone from this thread
        asyncio.get_running_loop()


@pytest.mark.parametrize(
    ("environment", "agent"), [("frozenlake", "to_goal_later"), ("remittance", "build_finishing")]
)
def test_start_run_in_a_running_loop_stops_with_the_fix(
    environment: str, agent: str, tmp_path: Path
) -> None:
    """Not one error per episode, retried on every resume: the run stops on the first,
    and the fix it names (a thread with no loop) completes it."""
    run = tmp_path / "run"

    async def notebook() -> Any:
        with pytest.raises(InputError, match=r"executor=ProcessPoolExecutor\(1\)") as refused:
            start_run(run, _protocol(environment, agent))
        assert f"asyncio.to_thread(resume_run, {str(run)!r})" in str(refused.value)
        assert (run / "episodes.jsonl").read_bytes() == b""
        return await asyncio.to_thread(resume_run, run)

    result = asyncio.run(notebook())
    assert result.complete
    assert result.errors == ()
    (line,) = (run / "episodes.jsonl").read_bytes().splitlines()  # recorded once
    assert orjson.loads(line)["trial"]["results"]
