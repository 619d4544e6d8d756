"""A tool's callbacks running SQL while onrecord's own statement runs in its call.

A trace callback or progress handler a tool sets fires on every statement of the
connection, the world's own too. From one fired by ``ctx.reveal``'s statement, a tool
read a second hidden table unlogged (the guard took the read for the reveal's); from one
fired by the TEMP-schema check, it read the audit's shadow table of a hidden table,
which holds its rows' old values, unlogged (the guard took the read for onrecord's own).
Real ``ToolWorld`` over a real SQLite snapshot throughout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = """
CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE secrets (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
"""
SECRET = "the secret"


def populate(conn: sqlite3.Connection, _rng: object) -> None:
    conn.execute("INSERT INTO claims VALUES (1, 'open')")
    conn.execute("INSERT INTO notes VALUES (1, 'note one')")
    conn.execute("INSERT INTO secrets VALUES (1, ?)", (SECRET,))


def _spy(ctx: ToolContext, sql: str, seen: list[Any]) -> Callable[..., int]:
    """A callback that counts each time it fires (in ``seen[0]``) and, while armed
    (``seen[1]``), runs ``sql`` once past the world's cursors, keeping what it read."""

    def fire(*_args: Any) -> int:
        seen[0] += 1
        if seen[1]:
            seen[1] = False
            seen.extend(sqlite3.Cursor(ctx.connection).execute(sql).fetchall())
        return 0

    return fire


@tool(example={"how": "trace"})
def reveal_and_spy(ctx: ToolContext, how: str) -> list[Any]:
    """Reveal note 1 with a callback of the tool's set that reads the secrets; then run
    a statement of the tool's own. Returns what the callback read, and whether it fired
    during the reveal and after it."""
    seen: list[Any] = [0, False]
    spy = _spy(ctx, "SELECT body FROM secrets", seen)
    if how == "trace":
        ctx.connection.set_trace_callback(spy)
    else:
        ctx.connection.set_progress_handler(spy, 1)
    seen[1] = True
    ctx.reveal("notes", 1)
    fired_during, seen[0], seen[1] = seen[0], 0, False
    ctx.execute("SELECT count(*) FROM claims")  # the tool's own statement
    return [seen[2:], fired_during, seen[0]]


@tool(writes=True, example={})
def spy_on_the_audit(ctx: ToolContext) -> list[Any]:
    """Delete the notes in a savepoint and read their old values from the audit's shadow
    table from a trace callback fired by the world's TEMP-schema check; undo."""
    found = ctx.one("SELECT shadow FROM _onrecord_audit_tables WHERE tbl = 'notes'")
    assert found is not None
    seen: list[Any] = [0, False]
    ctx.execute("SAVEPOINT mine")
    ctx.execute("DELETE FROM notes")  # reads no column: not itself a read
    ctx.execute("CREATE TEMP TABLE IF NOT EXISTS scratch (a)")  # the world checks TEMP
    ctx.connection.set_trace_callback(_spy(ctx, f"SELECT * FROM {found['shadow']}", seen))
    seen[1] = True  # fires first on the world's check, as this statement starts
    ctx.execute("SELECT 1")
    ctx.connection.set_trace_callback(None)
    ctx.execute("ROLLBACK TO mine")
    ctx.execute("RELEASE mine")
    return [str(row) for row in seen[2:]]


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("cheating-tools20", SCHEMA, populate, seed=1)


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    tools = [reveal_and_spy, spy_on_the_audit]
    with ToolWorld(snap, tools, hidden=["notes", "secrets"]) as built:
        built.reset(seed=1)
        yield built


@pytest.mark.parametrize("how", ["trace", "progress"])
def test_a_callback_fired_by_a_reveal_cannot_read_another_hidden_table_unlogged(
    world: ToolWorld, how: str
) -> None:
    # The callback read the secrets while the reveal's statement ran; the guard left
    # that read to the reveal to log, which logged note 1 only.
    event = world.call("reveal_and_spy", {"how": how})
    assert event["status"] == "ok", event["error"]
    read, fired_during, fired_after = event["result"]
    # The tool's callback is not run on onrecord's statement, and is set again for the
    # tool's own statement after it; the armed callback then read nothing.
    assert (read, fired_during) == ([], 0)
    assert fired_after > 0
    assert event["reads"] == [{"table": "notes", "key": 1}]


def test_a_callback_fired_by_the_worlds_own_check_cannot_read_the_audit_unlogged(
    world: ToolWorld,
) -> None:
    # The callback read the deleted note's old values from the audit's shadow table
    # while the world's own statement ran, which the guard took the read for.
    event = world.call("spy_on_the_audit", {})
    assert event["status"] == "ok", event["error"]
    # It now fires on the tool's own statement only, whose read of the shadow is logged.
    assert "note one" in str(event["result"])
    assert event["reads"] == [{"table": "notes", "rows": "unknown"}]
    assert world.diff() == {}
