"""Probe 11 of envkit: ``"arguments": null`` logged as the model sent it, and a tool's
``executescript`` refused saying why (real SQLite worlds, no mocks)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, state_digest, tool


@tool
def ping(ctx: ToolContext) -> str:
    """A tool without parameters."""
    return "pong"


@tool
def lookup(ctx: ToolContext, item_id: int) -> int:
    """A tool that needs an argument."""
    return item_id


@tool(writes=True)
def script(ctx: ToolContext) -> int:
    """Writes with a script."""
    ctx.connection.executescript("UPDATE items SET qty = 2; UPDATE items SET qty = 3;")
    return 1


@pytest.fixture
def world() -> Iterator[ToolWorld]:
    snapshot = Snapshot.build(
        "items",
        "CREATE TABLE items (id INTEGER PRIMARY KEY, qty INTEGER)",
        lambda conn, rng: conn.execute("INSERT INTO items VALUES (1, 1)"),
    )
    with ToolWorld(snapshot, [ping, lookup, script]) as built:
        built.reset(seed=0)
        yield built


def test_null_arguments_are_logged_as_sent_and_call_the_tool_without_any(
    world: ToolWorld,
) -> None:
    sent = world.call("ping", None)
    assert (sent["status"], sent["result"], sent["arguments"]) == ("ok", "pong", None)
    # Nothing given at all is a call without arguments, logged as such.
    assert world.call("ping")["arguments"] == {}
    needed = world.call("lookup", None)
    assert needed["status"] == "rejected"
    assert needed["arguments"] is None
    assert "'item_id'" in needed["error"]["message"]


def test_executescript_in_a_tool_is_refused_saying_why_and_what_to_use(
    world: ToolWorld,
) -> None:
    before = state_digest(world.conn)
    event = world.call("script")
    assert event["error"]["type"] == "forbidden_statement"
    message = event["error"]["message"]
    assert message.startswith("script: executescript: Python's sqlite3 commits")
    assert "one by one with ctx.execute" in message
    assert state_digest(world.conn) == before
    assert world.conn.execute("SELECT qty FROM items").fetchone() == (1,)
