"""Reads of a hidden table the first SQL-read logging missed or made up.

A read-only BLOB handle and a copy of the database (``serialize``, ``backup``) read the
hidden table past the authorizer, unlogged; the owner's statement prepared past the
world's cursors was served to a tool from the cache, unlogged; and a TEMP view
redefined in the same call as it was read was logged as still reading the hidden table
when the world had run an earlier episode, not in a fresh world. Real ``ToolWorld``
over a real SQLite snapshot throughout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

from . import claims_env

UNKNOWN = {"table": "notes", "rows": "unknown"}
READ = "SELECT body FROM notes WHERE id = 1"


@tool(writes=True, example={"sqls": ["SELECT 1"]})
def run_sqls(ctx: ToolContext, sqls: list[str]) -> list[Any]:
    """Run the agent's statements in order; a failing one is reported, not raised."""
    out: list[Any] = []
    for sql in sqls:
        try:
            out.append([list(row) for row in ctx.execute(sql).fetchall()])
        except sqlite3.Error as exc:
            out.append(str(exc))
    return out


@tool()
def read_blob(ctx: ToolContext, table: str, column: str, row: int, schema: str = "main") -> str:
    """Read one value through a read-only BLOB handle."""
    with ctx.connection.blobopen(table, column, row, readonly=True, name=schema) as blob:
        return blob.read().decode()


@tool()
def copy_database(ctx: ToolContext, how: str) -> int:
    """Copy the world's database into memory, as bytes or with the backup API."""
    if how == "serialize":
        return len(ctx.connection.serialize())
    target = sqlite3.connect(":memory:")
    try:
        ctx.connection.backup(target)
        return int(target.execute("SELECT count(*) FROM notes").fetchone()[0])
    finally:
        target.close()


@tool(writes=True, example={})
def read_audit_of_notes(ctx: ToolContext) -> list[Any]:
    """Delete the notes in a savepoint, read their old values from the audit, undo."""
    found = ctx.one("SELECT shadow FROM _onrecord_audit_tables WHERE tbl = 'notes'")
    assert found is not None
    ctx.execute("SAVEPOINT mine")
    ctx.execute("DELETE FROM notes")  # reads no column: not itself a read
    rows = [list(row) for row in ctx.execute(f"SELECT * FROM {found['shadow']}")]
    ctx.execute("ROLLBACK TO mine")
    ctx.execute("RELEASE mine")
    return rows


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("claims-probe16", claims_env.SCHEMA, claims_env.populate, seed=1)


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    tools = [*claims_env.TOOLS, run_sqls, read_blob, copy_database, read_audit_of_notes]
    with ToolWorld(snap, tools, hidden=["notes"]) as built:
        built.reset(seed=1)
        yield built


def reads(world: ToolWorld, tool_name: str, **arguments: Any) -> list[dict[str, Any]]:
    event = world.call(tool_name, arguments)
    assert event["status"] == "ok", event["error"]
    return list(event["reads"])


def test_a_read_only_blob_of_a_hidden_table_is_logged(world: ToolWorld) -> None:
    # The handle reads the row's value with no statement prepared: nothing was logged.
    for _ in range(2):
        assert reads(world, "read_blob", table="Notes", column="body", row=1) == [UNKNOWN]
    assert reads(world, "read_blob", table="claims", column="payer", row=1) == []
    reads(world, "run_sqls", sqls=["CREATE TEMP TABLE notes AS SELECT 1 AS id, 'x' AS body"])
    assert reads(world, "read_blob", table="notes", column="body", row=1, schema="temp") == []


@pytest.mark.parametrize("how", ["serialize", "backup"])
def test_a_copy_of_the_database_is_a_read_of_every_hidden_table(world: ToolWorld, how: str) -> None:
    # The copy holds the hidden rows (the backup's count reads them): nothing was logged.
    assert reads(world, "copy_database", how=how) == [UNKNOWN]


def test_the_owners_statement_prepared_past_the_cursors_is_logged_for_a_tool(
    world: ToolWorld,
) -> None:
    # sqlite3 caches by text for every cursor: the tool's ctx.execute of the same text
    # ran the owner's prepared statement, which the guard never saw prepared for a tool.
    assert sqlite3.Cursor(world.conn).execute(READ).fetchone() is not None
    assert reads(world, "run_sqls", sqls=[READ]) == [UNKNOWN]


REDEFINE = ["CREATE TEMP VIEW v AS SELECT status AS body FROM claims", "SELECT body FROM v"]


def _redefined_episode(world: ToolWorld) -> list[list[dict[str, Any]]]:
    world.reset(seed=1)
    return [reads(world, "run_sqls", sqls=REDEFINE), reads(world, "get_claim", claim_id=1)]


def test_the_same_episode_logs_the_same_reads_in_a_fresh_or_a_used_world(
    snap: Snapshot, world: ToolWorld
) -> None:
    # An earlier episode's view v read notes; the reset dropped it and this episode's v
    # reads claims. The cached text "SELECT body FROM v" was still known to read notes,
    # so a used world logged a read a fresh world did not.
    reads(world, "run_sqls", sqls=["CREATE TEMP VIEW v AS SELECT body FROM main.notes"])
    assert reads(world, "run_sqls", sqls=["SELECT body FROM v"]) == [UNKNOWN]
    with ToolWorld(snap, [*claims_env.TOOLS, run_sqls], hidden=["notes"]) as fresh:
        assert _redefined_episode(world) == _redefined_episode(fresh) == [[], []]
    # A TEMP statement that changed nothing keeps the cached statements' reads known.
    assert reads(world, "run_sqls", sqls=[READ]) == [UNKNOWN]
    again = ["CREATE TEMP TABLE IF NOT EXISTS scratch (a)", READ]
    reads(world, "run_sqls", sqls=again[:1])
    assert reads(world, "run_sqls", sqls=again) == [UNKNOWN]


def test_reading_the_audits_old_values_of_a_hidden_table_is_a_read_of_it(
    world: ToolWorld,
) -> None:
    # The audit's shadow table holds the old values of every row written this episode:
    # a tool read the whole note through it, and nothing was logged.
    event = world.call("read_audit_of_notes", {})
    assert event["status"] == "ok", event["error"]
    assert "payer called: pay half" in str(event["result"])
    assert event["reads"] == [UNKNOWN]
    # The audit's own reads of it (writes, the diff, the reset's undo) are not the tool's.
    assert reads(world, "set_status", claim_id=1, status="x") == []
    world.reset(seed=1)
    assert reads(world, "get_claim", claim_id=1) == []
