"""Probe 13 of envkit: a statement the world's owner prepared between calls (setup, an
observer, ``world.conn``) is not served to a tool from ``sqlite3``'s statement cache
without the guard: SQLite asks the authorizer only when it prepares a statement, so a
tool typing the owner's exact text ran it unasked (real SQLite worlds, no mocks)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool

SCHEMA = """
CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL UNIQUE);
CREATE TABLE patients (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
"""


def _populate(conn: sqlite3.Connection, rng: Any) -> None:
    conn.execute("INSERT INTO orders (code) VALUES ('a'), ('b')")
    conn.execute("INSERT INTO patients VALUES (1, 'Ada')")


@tool(writes=True)
def raw(ctx: ToolContext, sql: str) -> int:
    """Run one SQL statement (the agent's raw access)."""
    return ctx.execute(sql).rowcount


@tool(writes=True)
def add_order(ctx: ToolContext, code: str) -> int:
    """Insert one order."""
    cursor = ctx.execute("INSERT INTO orders (code) VALUES (?)", (code,))
    return int(cursor.lastrowid or 0)


def _counter(world: ToolWorld) -> int:
    return int(world.conn.execute("SELECT seq FROM sqlite_sequence").fetchone()[0])


@pytest.fixture
def world() -> Iterator[ToolWorld]:
    snapshot = Snapshot.build("probe13", SCHEMA, _populate)
    with ToolWorld(snapshot, [raw, add_order], hidden=["patients"]) as built:
        built.reset(seed=0)
        yield built


# Each refusal class a cached statement escaped, as the owner might type it between calls
# (``before`` sets up what the statement needs, ``after`` undoes what it did); the tool
# then sends the same text. (Schema changes, ATTACH and setting a pragma were refused
# already: SQLite prepares those again at each run.)
_BUMP = (
    "CREATE TEMP TRIGGER IF NOT EXISTS bump AFTER INSERT ON patients BEGIN "
    "UPDATE sqlite_sequence SET seq = seq + 10 WHERE name = 'orders'; END"
)
CLASSES: dict[str, tuple[str, list[str], list[str]]] = {
    "sqlite_sequence": ("UPDATE sqlite_sequence SET seq = 100 WHERE name = 'orders'", [], []),
    "onrecord's table": ("UPDATE _onrecord_ctx SET version = version", [], []),
    "COMMIT": ("COMMIT", ["BEGIN"], []),
    "onrecord's function": ("SELECT _onrecord_gate(0)", [], []),
    "sqlite_sequence from a trigger": ("INSERT INTO patients (name) VALUES ('Bo')", [_BUMP], []),
    "onrecord's savepoint": ("SAVEPOINT onrecord_call", [], ["RELEASE onrecord_call"]),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_a_statement_the_owner_prepared_is_refused_to_a_tool(world: ToolWorld, name: str) -> None:
    # It used to run: the owner's cached prepared statement was reused, never authorized
    # (the call was ok, sqlite_sequence moved, the call's transaction was committed, ...).
    sql, before, after = CLASSES[name]
    for statement in [*before, sql, *after]:
        world.conn.execute(statement)
    digest, counter = world.state_digest(), _counter(world)

    event = world.call("raw", {"sql": sql})

    assert event["status"] == "error", event
    assert event["error"]["type"] == "forbidden_statement", event["error"]
    assert world.state_digest() == digest
    assert _counter(world) == counter
    assert not world.conn.in_transaction
    # The owner's own use between calls still works (prepared again, unrefused).
    for statement in [*before, sql, *after]:
        world.conn.execute(statement)
    assert world.call("add_order", {"code": "c"})["status"] == "ok"


def test_an_observers_sequence_write_no_longer_reaches_a_tool(world: ToolWorld) -> None:
    # The reviewer's case: the tool's copy of the owner's text set the next id to 101.
    owner_sql = "UPDATE sqlite_sequence SET seq = 100 WHERE name = 'orders'"
    world.conn.execute(owner_sql)
    world.reset(seed=0)  # back to the snapshot's counter; the statement stays cached
    assert world.call("raw", {"sql": owner_sql})["status"] == "error"
    event = world.call("add_order", {"code": "c"})
    assert event["result"] == 3
    assert world.conn.execute("SELECT seq FROM sqlite_sequence").fetchone()[0] == 3


def test_a_refused_text_stays_refused_on_every_later_call(world: ToolWorld) -> None:
    world.conn.execute("UPDATE sqlite_sequence SET seq = 100 WHERE name = 'orders'")
    world.reset(seed=0)
    for _ in range(3):
        event = world.call(
            "raw", {"sql": "UPDATE sqlite_sequence SET seq = 100 WHERE name = 'orders'"}
        )
        assert event["error"]["type"] == "forbidden_statement"
    assert _counter(world) == 2


def test_onrecords_own_statements_never_force_the_cache_to_be_redone(
    world: ToolWorld, tmp_path: Path
) -> None:
    # The expiry prepares every statement again, tools' included: it must come only from
    # what the owner typed, never from the world's own SAVEPOINT, undo, gate or VACUUM.
    for episode in range(2):
        world.reset(seed=episode)
        assert world.call("add_order", {"code": f"x{episode}"})["status"] == "ok"
        assert world.call("raw", {"sql": "SELECT 1"})["status"] == "ok"
        assert world.call("raw", {"sql": "PRAGMA user_version = 3"})["status"] == "error"
        save_episode(world, tmp_path / f"episode-{episode}")
        # An observer reading between steps (any table, hidden ones too) is no reason.
        world.conn.execute("SELECT * FROM patients").fetchall()
        world.conn.execute("SELECT seq FROM sqlite_sequence").fetchall()
        assert world._guard.stale is False
    world.reset(seed=0)
    world.conn.execute("PRAGMA recursive_triggers = ON")
    assert world._guard.stale is True
    assert world.call("add_order", {"code": "y"})["status"] == "ok"
    assert world._guard.stale is False


def test_an_owner_statement_a_tool_may_run_forces_no_new_preparation(world: ToolWorld) -> None:
    # A statement the owner prepared that a tool may run is no reason to refuse it.
    world.conn.execute("SELECT code FROM orders").fetchall()
    world.conn.execute("UPDATE orders SET code = code WHERE id = 1")
    assert (
        world.call("raw", {"sql": "UPDATE orders SET code = code WHERE id = 1"})["status"] == "ok"
    )
    assert world.call("raw", {"sql": "SELECT code FROM orders"})["status"] == "ok"
    assert world._guard.stale is False
