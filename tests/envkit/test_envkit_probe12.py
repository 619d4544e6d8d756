"""Probe 12 of envkit: a tool with raw SQL may not set the next AUTOINCREMENT id
(``sqlite_sequence``) directly, which no diff, digest or audit event showed; SQLite's own
counter update after an insert, and the world owner's setup, still move it (real SQLite
worlds, no mocks)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolWorld,
    read_action_log,
    save_episode,
    tool,
)

SCHEMA = """
CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL UNIQUE);
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
"""


def _populate(conn: sqlite3.Connection, rng: Any) -> None:
    conn.execute("INSERT INTO orders (code) VALUES ('a'), ('b')")
    # The owner's setup may start the ids elsewhere: the snapshot keeps it.
    conn.execute("UPDATE sqlite_sequence SET seq = 40 WHERE name = 'orders'")


@tool(writes=True)
def raw(ctx: ToolContext, sql: str) -> int:
    """Run one SQL statement (the agent's raw access)."""
    return ctx.execute(sql).rowcount


@tool(writes=True)
def stubborn(ctx: ToolContext, sql: str) -> str:
    """Run one statement, swallow its error, then write a note."""
    with contextlib.suppress(sqlite3.DatabaseError):
        ctx.execute(sql)
    ctx.execute("INSERT INTO notes (body) VALUES ('went on')")
    return "done"


@pytest.fixture
def world() -> Iterator[ToolWorld]:
    snapshot = Snapshot.build("orders", SCHEMA, _populate)
    with ToolWorld(snapshot, [raw, stubborn]) as built:
        built.reset(seed=0)
        yield built


def _counter(world: ToolWorld) -> int:
    row = world.conn.execute("SELECT seq FROM main.sqlite_sequence WHERE name = 'orders'")
    return int(row.fetchone()[0])


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE sqlite_sequence SET seq = 100 WHERE name = 'orders'",
        "UPDATE main.SQLITE_SEQUENCE SET seq = 100",
        'DELETE FROM "Sqlite_Sequence"',
        "INSERT INTO sqlite_sequence (name, seq) VALUES ('notes', 7)",
        "REPLACE INTO sqlite_sequence (name, seq) VALUES ('orders', 100)",
        "WITH s AS (SELECT 100 AS n) UPDATE sqlite_sequence SET seq = (SELECT n FROM s)",
    ],
)
def test_a_direct_write_to_sqlite_sequence_is_refused_and_changes_nothing(
    world: ToolWorld, sql: str, tmp_path: Any
) -> None:
    # It used to succeed: the next order got id 101, and no diff, digest or audit event
    # showed why.
    digest = world.state_digest()
    event = world.call("raw", {"sql": sql})
    assert event["status"] == "error"
    assert event["error"]["type"] == "forbidden_statement"
    message = event["error"]["message"]
    assert "sqlite_sequence: a tool may not set the next AUTOINCREMENT id directly" in message
    assert "insert the row with the id it should have" in message
    assert _counter(world) == 40
    assert world.state_digest() == digest
    assert world.audit_history() == []
    assert world.call("raw", {"sql": "INSERT INTO orders (code) VALUES ('c')"})["status"] == "ok"
    assert [row["id"] for row in world.diff()["orders"]["created"]] == [41]
    save_episode(world, tmp_path / "episode")
    refused = read_action_log(tmp_path / "episode" / "actions.jsonl").events[0]
    assert (refused["tool"], refused["error"]) == ("raw", event["error"])


def test_a_tool_that_swallows_the_refusal_still_fails_and_writes_nothing(
    world: ToolWorld,
) -> None:
    event = world.call("stubborn", {"sql": "UPDATE sqlite_sequence SET seq = 100"})
    assert event["error"]["type"] == "forbidden_statement"
    assert _counter(world) == 40
    assert world.table_rows("notes") == []


BUMP = (
    "CREATE {temp} TRIGGER bump AFTER INSERT ON {table} BEGIN "
    "UPDATE sqlite_sequence SET seq = 100 WHERE name = 'orders'; END"
)


@pytest.mark.parametrize("whose", ["tool", "snapshot"])
def test_a_trigger_writing_sqlite_sequence_is_refused_naming_it(whose: str) -> None:
    # A trigger's body is checked when the statement that fires it is prepared: the
    # tool's own TEMP trigger, or one in the snapshot, counts as the tool's statement.
    schema = SCHEMA + (BUMP.format(temp="", table="orders") + ";" if whose == "snapshot" else "")
    with ToolWorld(Snapshot.build("orders", schema, _populate), [raw]) as world:
        world.reset(seed=0)
        if whose == "tool":
            trigger = BUMP.format(temp="TEMP", table="main.orders")
            assert world.call("raw", {"sql": trigger})["status"] == "ok"
        event = world.call("raw", {"sql": "INSERT INTO orders (code) VALUES ('c')"})
        assert event["error"]["type"] == "forbidden_statement"
        message = event["error"]["message"]
        assert "UPDATE sqlite_sequence (in trigger bump): a tool may not" in message
        assert _counter(world) == 40
        assert world.table_rows("orders") == [{"id": 1, "code": "a"}, {"id": 2, "code": "b"}]


def test_every_counter_move_is_an_audited_insert(world: ToolWorld) -> None:
    statements = [
        "INSERT INTO orders (code) VALUES ('c')",  # 41
        "UPDATE sqlite_sequence SET seq = 1000",  # refused
        "INSERT OR REPLACE INTO orders (code) VALUES ('a')",  # replaces id 1 by 42
        "DELETE FROM orders",  # the truncation keeps the counter
        "INSERT INTO orders (code) VALUES ('d')",  # 43
        "INSERT INTO orders (id, code) VALUES (90, 'e')",  # an explicit id moves it
        "REPLACE INTO orders (id, code) VALUES (90, 'f')",
        "INSERT INTO orders (code) VALUES ('g')",  # 91
    ]
    statuses = [world.call("raw", {"sql": sql})["status"] for sql in statements]
    assert statuses == ["ok", "error", "ok", "ok", "ok", "ok", "ok", "ok"]
    created = [
        event["key"]
        for event in world.audit_history()
        if event["table"] == "orders" and event["op"] == "insert"
    ]
    assert created == [41, 42, 43, 90, 90, 91]
    assert _counter(world) == max(created)
    world.reset(seed=0)
    assert _counter(world) == 40
