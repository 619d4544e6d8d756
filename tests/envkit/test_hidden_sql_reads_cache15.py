"""A cached statement that reads a hidden table is logged at every step that runs it,
whichever way the tool runs it, without expiring the connection's other statements.

The first version expired every prepared statement after any such read, so each was
prepared again (with its audit triggers) at the next call: a third of the remittance
runs' throughput. Real ``ToolWorld`` over a real SQLite snapshot throughout.
"""

from __future__ import annotations

import gc
import sqlite3
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

from . import claims_env

UNKNOWN = {"table": "notes", "rows": "unknown"}
READ = "SELECT body FROM notes WHERE id = 1"


class OwnCursor(sqlite3.Cursor):
    """A tool's own cursor class, as ``connection.cursor(factory=...)`` takes."""


@tool()
def by_cursor(ctx: ToolContext, sql: str) -> list[Any]:
    """Run SQL on a cursor of the connection."""
    return list(ctx.connection.cursor().execute(sql).fetchall())


@tool()
def by_own_cursor(ctx: ToolContext, sql: str) -> list[Any]:
    """Run SQL on a cursor of the tool's own class."""
    return list(ctx.connection.cursor(OwnCursor).execute(sql).fetchall())


@tool()
def by_base_cursor(ctx: ToolContext, sql: str) -> list[Any]:
    """Run SQL on a cursor built past the connection (``sqlite3.Cursor(conn)``)."""
    return list(sqlite3.Cursor(ctx.connection).execute(sql).fetchall())


@tool()
def by_connection(ctx: ToolContext, sql: str) -> list[Any]:
    """Run SQL with the connection's own execute."""
    return list(ctx.connection.execute(sql).fetchall())


@tool(writes=True, example={"sql": "CREATE TEMP VIEW v AS SELECT 1"})
def run_sql(ctx: ToolContext, sql: str) -> None:
    """Run the agent's SQL, writes included."""
    ctx.execute(sql)


@pytest.fixture
def world() -> Iterator[ToolWorld]:
    snap = Snapshot.build("claims", claims_env.SCHEMA, claims_env.populate, seed=1)
    tools = [*claims_env.TOOLS, by_cursor, by_own_cursor, by_base_cursor, by_connection, run_sql]
    with ToolWorld(snap, tools, hidden=["notes"]) as built:
        built.reset(seed=1)
        yield built


def reads(world: ToolWorld, tool_name: str, sql: str = READ) -> list[dict[str, Any]]:
    event = world.call(tool_name, {"sql": sql})
    assert event["status"] == "ok", event["error"]
    return list(event["reads"])


@pytest.mark.parametrize("tool_name", ["by_cursor", "by_own_cursor", "by_connection"])
def test_every_step_running_the_cached_statement_logs_it(world: ToolWorld, tool_name: str) -> None:
    for _ in range(3):
        assert reads(world, tool_name) == [UNKNOWN]
        # ... and no statement was expired for it: the cache is kept whole.
        assert world.conn.guard is not None
        assert not world.conn.guard.stale
    assert reads(world, "by_connection", "SELECT id FROM claims") == []


def test_a_statement_prepared_past_the_worlds_cursors_is_logged_at_each_step(
    world: ToolWorld,
) -> None:
    for _ in range(3):  # the fallback: every statement expired before the next call
        assert reads(world, "by_base_cursor") == [UNKNOWN]


def test_the_owners_statement_a_tool_types_again_is_logged(world: ToolWorld) -> None:
    # The owner reads the hidden table on the world's connection between calls; sqlite3
    # caches the statement by its text, and a tool typing that text ran it unseen.
    assert world.conn.execute(READ).fetchone() is not None
    assert reads(world, "by_connection") == [UNKNOWN]


def test_a_view_redefined_to_read_another_table_is_no_longer_logged(world: ToolWorld) -> None:
    reads(world, "run_sql", "CREATE TEMP VIEW v AS SELECT body FROM notes")
    assert reads(world, "by_connection", "SELECT * FROM v") == [UNKNOWN]
    reads(world, "run_sql", "DROP VIEW v")
    reads(world, "run_sql", "CREATE TEMP VIEW v AS SELECT status AS body FROM claims")
    assert reads(world, "by_connection", "SELECT * FROM v") == []


def test_reads_stay_logged_across_a_reset(world: ToolWorld) -> None:
    assert reads(world, "by_connection") == [UNKNOWN]
    world.reset(seed=2)
    assert reads(world, "by_connection") == [UNKNOWN]


def test_the_worlds_cursors_leave_nothing_behind_call_after_call(world: ToolWorld) -> None:
    # A cursor built as TrackedCursor(connection) left a weak reference in the
    # connection's list at every statement (~100 bytes a call, never dropped): a long run
    # grew by megabytes. Built by cursor(), the connection drops the dead ones.
    for _ in range(50):
        _one_episode(world)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(600):
            _one_episode(world)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    kit = [tracemalloc.Filter(True, "*/onrecord/envkit/*")]
    grown = sum(
        stat.size_diff
        for stat in after.filter_traces(kit).compare_to(before.filter_traces(kit), "filename")
    )
    assert grown < 20_000, grown


def _one_episode(world: ToolWorld) -> None:
    world.reset(seed=1)  # the episode's log is emptied: what remains is the kit's
    reads(world, "by_connection")
