"""Tool-world agents on async LLM clients: an ``async def act(observation)`` is awaited
step by step on one event loop of its own and recorded exactly as the plain agent is;
inside a running loop it is refused by name; a plain tool that hands back a coroutine
(an async client called without ``await``) is a tool error, never a warning."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    ScriptedAgent,
    load_tasks,
    remittance_trial,
)
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool
from onrecord.errors import InputError

Call = Mapping[str, Any]


@pytest.fixture(scope="module")
def env() -> Iterator[RemittanceEnvironment]:
    task = next(t for t in load_tasks() if t.task_id == "partial-04")
    environment = RemittanceEnvironment(task)
    yield environment
    environment.close()


def _async_careful(brief: Mapping[str, Any], loops: list[int]) -> Callable[[Call], Awaitable[Any]]:
    """The ``careful`` reference agent's logic behind an ``async def``, as an agent that
    awaits an LLM client for every step would be; notes the loop each step ran on."""
    agent = ScriptedAgent("careful", brief)

    async def act(observation: Call) -> Any:
        loops.append(id(asyncio.get_running_loop()))
        await asyncio.sleep(0)  # the client's request
        return agent(observation)

    return act


def _recorded(env: RemittanceEnvironment, agent: Any, out: Path) -> dict[str, Any]:
    run = env.run(agent, out, seed=3, run_id="run")
    trial = remittance_trial(run.episode, REMITTANCE_CHECKS)
    calls = [
        {key: event[key] for key in ("step", "tool", "arguments", "status", "result", "error")}
        for event in run.episode.actions
    ]
    return {
        "calls": calls,
        "ending": run.episode.manifest["ending"],
        "agent_error": run.agent_error,
        "end_state": run.episode.end_state_digest(),
        "verdicts": [(r.name, r.status, r.reason) for r in trial.results],
        "coverage": trial.coverage_issues,
    }


def test_an_async_act_is_recorded_exactly_as_the_plain_agent(
    env: RemittanceEnvironment, tmp_path: Path
) -> None:
    loops: list[int] = []
    awaited = _recorded(env, _async_careful(env.brief, loops), tmp_path / "async")
    plain = _recorded(env, ScriptedAgent("careful", env.brief), tmp_path / "plain")
    assert awaited == plain
    assert (awaited["calls"][-1]["tool"], awaited["calls"][-1]["status"]) == ("finish", "ok")
    assert all(status == "pass" for _, status, _ in awaited["verdicts"])
    # Every step awaited on one loop: a client kept between steps stays usable.
    assert len(loops) == len(awaited["calls"])
    assert len(set(loops)) == 1


def test_a_plain_act_returning_an_awaitable_is_awaited_too(
    env: RemittanceEnvironment, tmp_path: Path
) -> None:
    inner = _async_careful(env.brief, [])
    awaited = _recorded(env, lambda observation: inner(observation), tmp_path / "lambda")
    plain = _recorded(env, ScriptedAgent("careful", env.brief), tmp_path / "plain")
    assert awaited == plain


def test_an_async_act_that_raises_is_the_agent_raising(env: RemittanceEnvironment) -> None:
    agent = ScriptedAgent("careful", env.brief)

    async def act(observation: Call) -> Any:
        await asyncio.sleep(0)
        if observation["step"] == 2:
            raise ConnectionError("the LLM endpoint went away")
        return agent(observation)

    played = env.play(act)
    assert (played.ending, played.agent_error) == (
        "agent_error",
        "ConnectionError: the LLM endpoint went away",
    )
    assert [event["step"] for event in played.actions] == [1, 2]  # the calls before it kept


def test_ctrl_c_inside_an_async_act_propagates_with_its_tasks_cancelled(
    env: RemittanceEnvironment,
) -> None:
    cancelled: list[str] = []

    async def background() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append("background")
            raise

    async def act(observation: Call) -> Any:
        asyncio.get_running_loop().create_task(background())
        await asyncio.sleep(0)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        env.play(act)
    assert cancelled == ["background"]


def test_inside_a_running_loop_an_async_act_is_refused_by_name(
    env: RemittanceEnvironment,
) -> None:
    async def act(observation: Call) -> Any:
        return {"tool": "finish", "arguments": {"message": "done"}}

    async def inside_a_loop(agent: Any) -> str:
        with pytest.raises(InputError) as raised:
            env.play(agent)
        return str(raised.value)

    declared = asyncio.run(inside_a_loop(act))
    assert "act is async (it is declared async def)" in declared
    assert "event loop is running" in declared
    returned = asyncio.run(inside_a_loop(lambda observation: act(observation)))
    assert "act is async (it returned a coroutine)" in returned  # and closed: no warning


def test_a_plain_act_in_a_running_loop_still_runs(env: RemittanceEnvironment) -> None:
    async def inside_a_loop() -> str:
        return env.play(ScriptedAgent("careful", env.brief)).ending

    assert asyncio.run(inside_a_loop()) == "finished"


SCHEMA = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"


async def _client_post(body: str) -> dict[str, Any]:
    return {"posted": body}


def test_a_plain_tool_returning_a_coroutine_is_a_tool_error_with_nothing_changed() -> None:
    @tool(writes=True)
    def add_note(ctx: ToolContext, body: str) -> Any:
        """Add a note, then (wrongly) hand back the async client's unawaited call."""
        ctx.execute("INSERT INTO notes (body) VALUES (?)", (body,))
        return _client_post(body)

    world = ToolWorld(Snapshot.build("notes", SCHEMA), [add_note])
    try:
        world.reset(case=EvalCase("note", case_id="note"), seed=0, run_id="run")
        before = world.state_digest()
        event = world.call("add_note", {"body": "hello"})
        assert event["status"] == "error"
        assert event["error"]["type"] == "tool_error"
        message = event["error"]["message"]
        assert message.startswith("add_note: TypeError: the tool returned a coroutine")
        assert "_client_post" in message
        assert "outside the tool" in message
        # Rolled back as for a tool that raises after writing.
        assert world.state_digest() == before
        assert world.table_rows("notes") == []
        assert world.state_version == 0
        assert world.call("add_note", {"body": "x"})["status"] == "error"  # still usable
    finally:
        world.close()
