"""A tool runs inside the world's synchronous step, which cannot await: an ``async def``
tool is refused where it is declared, naming it and the fix, instead of every call
failing later with a coroutine that was never awaited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.envkit import Snapshot, Tool, ToolContext, ToolWorld, tool
from onrecord.errors import InputError

SCHEMA = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"


def _refused(declare: Any, name: str) -> str:
    with pytest.raises(InputError) as raised:
        declare()
    message = str(raised.value)
    assert f"tool {name!r} is an async function" in message
    assert "plain def" in message
    assert "outside the tool" in message
    return message


def test_an_async_def_tool_is_refused_at_declaration() -> None:
    def bare() -> Tool:
        @tool
        async def add_note(ctx: ToolContext, body: str) -> dict[str, Any]:
            """Add a note."""
            return {}

        return add_note

    def named() -> Tool:
        @tool(writes=True, name="post_note")
        async def add_note(ctx: ToolContext, body: str) -> dict[str, Any]:
            """Add a note."""
            return {}

        return add_note

    _refused(bare, "add_note")
    _refused(named, "post_note")


def test_async_callables_of_every_shape_are_refused() -> None:
    class Client:
        async def __call__(self, ctx: ToolContext, body: str) -> dict[str, Any]:
            return {}

    async def stream(ctx: ToolContext, body: str) -> AsyncIterator[str]:
        yield body

    async def direct(ctx: ToolContext) -> None:
        return None

    _refused(lambda: tool(Client(), name="client"), "client")
    _refused(lambda: tool(stream), "stream")
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    _refused(lambda: Tool("direct", direct, False, "", schema), "direct")


def test_the_sync_tool_it_should_be_runs_in_a_real_world() -> None:
    @tool(writes=True)
    def add_note(ctx: ToolContext, body: str) -> dict[str, Any]:
        """Add a note."""
        cursor = ctx.execute("INSERT INTO notes (body) VALUES (?)", (body,))
        return {"id": cursor.lastrowid}

    world = ToolWorld(Snapshot.build("notes", SCHEMA), [add_note])
    try:
        world.reset(case=EvalCase("note", case_id="note"), seed=0, run_id="run")
        event = world.call("add_note", {"body": "called back"})
        assert event["status"] == "ok"
        assert event["result"] == {"id": 1}
    finally:
        world.close()
