"""A one-table tool world whose one write tool writes a note and then runs a test's
body: shared by the tests of what is recorded when a tool mishandles async work (returns
a coroutine, holds one in its result, fails on one it never awaited)."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from typing import Any

from onrecord import EvalCase
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
AWAIT_ADVICE = (
    "a tool must be a plain function that returns its result; await the async client "
    "outside the tool (in your agent) or use its synchronous API"
)


def notes_world(body: Callable[[str], Any], *, name: str = "add_note") -> ToolWorld:
    """A reset world whose tool ``name`` (one argument, ``text``) writes a note, then
    returns what ``body(text)`` returns."""

    def write_then_run(ctx: ToolContext, text: str) -> Any:
        """Write a note, then run the test's body on the text."""
        ctx.execute("INSERT INTO notes (body) VALUES (?)", (text,))
        return body(text)

    world = ToolWorld(
        Snapshot.build("notes", SCHEMA), [tool(write_then_run, writes=True, name=name)]
    )
    world.reset(case=EvalCase(name, case_id=name), seed=0, run_id="run")
    return world


def failed_call(body: Callable[[str], Any], *, name: str = "add_note") -> str:
    """The message of the call's ``tool_error``, checked to have changed nothing and to
    leave nothing that warns (an unclosed coroutine warns when it is collected)."""
    world = notes_world(body, name=name)
    try:
        before = world.state_digest()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            event = world.call(name, {"text": "hello"})
            gc.collect()
        assert [str(w.message) for w in caught] == []
        assert (event["status"], event["error"]["type"]) == ("error", "tool_error")
        assert world.state_digest() == before  # rolled back
        assert world.table_rows("notes") == []
        return str(event["error"]["message"])
    finally:
        world.close()
