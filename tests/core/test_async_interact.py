"""An async ``interact`` (an LLM agent's usual shape) is captured as a plain one is:
``capture_episode`` runs it on an event loop of its own, refuses it clearly inside a
running loop, and ``capture_episode_async`` awaits it there. Real FrozenLake throughout;
pytest's warnings-as-errors turns any "coroutine was never awaited" into a failure."""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
from collections.abc import Coroutine
from typing import Any

import gymnasium as gym
import pytest

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode, capture_episode_async

RIGHT, DOWN = 2, 1
TO_GOAL = (RIGHT, RIGHT, DOWN, DOWN, DOWN, RIGHT)  # the 4x4 map, not slippery
CASE = EvalCase("Reach the goal", case_id="frozenlake/goal", completion="terminated")


class Lake(gym.Wrapper[Any, Any, Any, Any]):
    """FrozenLake that notes when it is closed."""

    def __init__(self, closed: list[str]) -> None:
        super().__init__(gym.make("FrozenLake-v1", is_slippery=False))
        self.closed = closed

    def close(self) -> None:
        self.closed.append("closed")
        super().close()


class Setup:
    """A factory (counting its calls) and an observer reading the tile it is on."""

    def __init__(self) -> None:
        self.built: list[Lake] = []
        self.closed: list[str] = []

    def factory(self) -> gym.Env[Any, Any]:
        self.built.append(Lake(self.closed))
        return self.built[-1]

    def observe(self) -> dict[str, int]:
        return {"tile": int(self.built[-1].unwrapped.s)}  # type: ignore[attr-defined]

    def arguments(self) -> dict[str, Any]:
        return {
            "case": CASE,
            "environment_id": "FrozenLake-v1/native",
            "observer_id": "tile/v1",
            "observe": self.observe,
            "seed": 0,
            "max_steps": 20,
        }

    def capture(self, interact: Any) -> EpisodeEvidence:
        return capture_episode(self.factory, interact, **self.arguments())

    async def capture_async(self, interact: Any) -> EpisodeEvidence:
        return await capture_episode_async(self.factory, interact, **self.arguments())


def walk_sync(env: Any, observation: Any, info: dict[str, Any]) -> str:
    for action in TO_GOAL:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "reached"
    return "lost"


async def walk(env: Any, observation: Any = None, info: Any = None) -> str:
    for action in TO_GOAL:
        await asyncio.sleep(0)  # the loop runs between steps, as with an LLM call
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "reached"
    return "lost"


class AsyncAgent:
    async def __call__(self, env: Any, observation: Any, info: dict[str, Any]) -> str:
        return await walk(env)


def history(episode: EpisodeEvidence) -> dict[str, Any]:
    """Everything recorded but the wall times, which no two runs share."""
    data = episode.data
    steps = {name: column for name, column in data["steps"].items() if name != "wall_time_ns"}
    keys = ("initial", "interact", "final_state", "cleanup", "events", "ended", "measures")
    return {"steps": steps, **{key: data[key] for key in keys}}


def test_an_async_interact_records_what_the_same_sync_one_does() -> None:
    expected = history(Setup().capture(walk_sync))
    assert expected["ended"] == "terminated"
    assert expected["measures"]["steps"] == 6
    for interact in (walk, AsyncAgent(), functools.partial(walk)):
        setup = Setup()
        episode = setup.capture(interact)
        assert history(episode) == expected, interact
        assert episode.data["interact"] == {"error": None, "returned": "reached"}
        assert episode.data["final_state"] == {"tile": 15}
        assert setup.closed == ["closed"]


def test_a_plain_function_returning_a_coroutine_is_awaited() -> None:
    episode = Setup().capture(lambda env, observation, info: walk(env))
    assert history(episode) == history(Setup().capture(walk_sync))


def test_the_return_value_is_recorded() -> None:
    async def reports(env: Any, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        await walk(env)
        return {"answer": "goal", "tokens": [3, 4]}

    episode = Setup().capture(reports)
    assert episode.data["interact"]["returned"] == {"answer": "goal", "tokens": [3, 4]}


def test_a_raising_async_interact_is_an_interact_error_with_its_steps() -> None:
    async def fails(env: Any, observation: Any, info: dict[str, Any]) -> None:
        env.step(RIGHT)
        await asyncio.sleep(0)
        env.step(RIGHT)
        raise ValueError("the model's reply could not be parsed")

    setup = Setup()
    episode = setup.capture(fails)
    assert episode.ended == "interact_error"
    assert episode.data["interact"]["error"]["type"] == "builtins.ValueError"
    assert "could not be parsed" in episode.data["interact"]["error"]["message"]
    assert episode.measures["steps"] == 2
    assert episode.data["steps"]["state"] == [{"tile": 1}, {"tile": 2}]
    assert setup.closed == ["closed"]


@pytest.mark.parametrize("raised", [asyncio.CancelledError, KeyboardInterrupt])
def test_cancellation_and_ctrl_c_propagate_after_cleanup(
    raised: type[BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def interrupted(env: Any, observation: Any, info: dict[str, Any]) -> None:
        loops.append(asyncio.get_running_loop())
        env.step(RIGHT)
        await asyncio.sleep(0)
        raise raised()

    setup = Setup()
    with pytest.raises(raised):
        setup.capture(interrupted)
    assert setup.closed == ["closed"]
    assert loops[0].is_closed()  # the loop of its own does not outlive the capture
    loops.clear()
    gc.collect()  # a task whose exception nobody took logs "never retrieved" when freed
    assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []


def _in_a_running_loop() -> bool:
    try:
        return asyncio.get_running_loop().is_running()
    except RuntimeError:
        return False


def test_ctrl_c_while_the_loop_waits_unwinds_the_agent_and_closes_the_env() -> None:
    """The interrupt lands in the loop, not in interact: the agent still pending is
    cancelled (its ``finally`` runs) before capture closes the environment."""
    unwound: list[bool] = []

    def interrupt() -> None:
        raise KeyboardInterrupt

    async def waits(env: Any, observation: Any, info: dict[str, Any]) -> None:
        env.step(RIGHT)
        asyncio.get_running_loop().call_soon(interrupt)
        try:
            await asyncio.Event().wait()  # never set: only the interrupt ends it
        finally:
            unwound.append(_in_a_running_loop())

    setup = Setup()
    with pytest.raises(KeyboardInterrupt):
        setup.capture(waits)
    assert unwound == [True]  # cancelled in the loop, not merely closed after it
    assert setup.closed == ["closed"]


def test_inside_a_running_loop_an_async_def_is_refused_before_the_factory() -> None:
    setup = Setup()

    async def main() -> None:
        for interact in (walk, AsyncAgent()):
            with pytest.raises(InputError) as raised:
                setup.capture(interact)
            message = str(raised.value)
            assert "interact" in message
            assert "await capture_episode_async(...)" in message
        assert setup.built == []  # refused up front: no environment was made

    asyncio.run(main())


def test_inside_a_running_loop_a_returned_coroutine_is_closed_and_refused() -> None:
    """Known only once interact returned: the environment is closed, the coroutine too
    (never run, and no "never awaited" warning), then the refusal."""
    setup = Setup()
    made: list[Coroutine[Any, Any, str]] = []

    def hands_back(env: Any, observation: Any, info: dict[str, Any]) -> Any:
        made.append(walk(env))
        return made[-1]

    async def main() -> None:
        with pytest.raises(InputError, match=r"await capture_episode_async\(\.\.\.\)"):
            setup.capture(hands_back)

    asyncio.run(main())
    assert len(setup.built) == 1
    assert setup.closed == ["closed"]
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED
    assert made[0].cr_frame is None


def test_capture_episode_async_awaits_inside_a_running_loop() -> None:
    expected = history(Setup().capture(walk_sync))

    async def main() -> list[dict[str, Any]]:
        interacts = (walk, AsyncAgent(), walk_sync, lambda env, o, i: walk(env))
        return [history(await Setup().capture_async(interact)) for interact in interacts]

    assert asyncio.run(main()) == [expected] * 4


def test_capture_episode_async_keeps_errors_and_propagates_cancellation() -> None:
    async def fails(env: Any, observation: Any, info: dict[str, Any]) -> None:
        env.step(DOWN)
        raise RuntimeError("rate limited")

    waiting = asyncio.Event()

    async def stalls(env: Any, observation: Any, info: dict[str, Any]) -> None:
        env.step(DOWN)
        waiting.set()
        await asyncio.Event().wait()

    failing, cancelled = Setup(), Setup()

    async def main() -> EpisodeEvidence:
        episode = await failing.capture_async(fails)
        task = asyncio.create_task(cancelled.capture_async(stalls))
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return episode

    episode = asyncio.run(main())
    assert episode.ended == "interact_error"
    assert episode.measures["steps"] == 1
    assert episode.data["interact"]["error"]["type"] == "builtins.RuntimeError"
    assert failing.closed == cancelled.closed == ["closed"]


def test_a_sync_capture_from_a_worker_thread_of_a_running_loop_runs_it() -> None:
    """No loop runs in ``asyncio.to_thread``'s thread: the sync capture works there."""

    async def main() -> EpisodeEvidence:
        return await asyncio.to_thread(Setup().capture, walk)

    assert asyncio.run(main()).ended == "terminated"
