"""Rows are told apart by their primary key, so a key SQLite would let be NULL is guarded:
two inserts with a NULL key would otherwise look like one row to every diff, and a
duplicate write would go unseen."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool
from onrecord.envkit.audit import nullable_key_columns
from onrecord.errors import InputError

SCHEMA = """
CREATE TABLE payments (payment_id TEXT PRIMARY KEY, cents INTEGER NOT NULL);
CREATE TABLE lines (invoice TEXT, line INTEGER, cents INTEGER, PRIMARY KEY (invoice, line));
CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER);
CREATE TABLE strict_keys (code TEXT PRIMARY KEY NOT NULL, n INTEGER);
CREATE TABLE compact (code TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;
CREATE TABLE descending (id INTEGER PRIMARY KEY DESC, n INTEGER);
CREATE TABLE keyless (label TEXT, n INTEGER);
"""


def _populate(conn: sqlite3.Connection, _rng: Any) -> None:
    conn.execute("INSERT INTO payments VALUES ('P1', 100)")
    conn.execute("INSERT INTO lines VALUES ('I1', 1, 50)")


@tool(writes=True)
def run_sql(ctx: ToolContext, sql: str, params: list[Any]) -> None:
    """Run one statement (test only)."""
    ctx.execute(sql, params)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("null-keys", SCHEMA, _populate)


def test_only_keys_that_can_hold_null_are_guarded(snap: Snapshot) -> None:
    conn = snap.connection
    assert {name: nullable_key_columns(conn, name) for name in sorted(_tables(conn))} == {
        "compact": (),  # WITHOUT ROWID: SQLite enforces NOT NULL on the key
        "counters": (),  # INTEGER PRIMARY KEY is the rowid: NULL means "next"
        "descending": ("id",),  # ... except when declared DESC, a known SQLite quirk
        "keyless": (),  # keyed by rowid
        "lines": ("invoice", "line"),
        "payments": ("payment_id",),
        "strict_keys": (),
    }


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("INSERT INTO payments VALUES (?, ?)", [None, 5]),
        ("INSERT OR REPLACE INTO payments VALUES (?, ?)", [None, 5]),
        ("UPDATE payments SET payment_id = NULL WHERE payment_id = ?", ["P1"]),
        ("INSERT INTO lines VALUES (?, ?, ?)", ["I2", None, 5]),
        ("UPDATE lines SET invoice = NULL", []),
        ("INSERT INTO descending (n) VALUES (?)", [1]),
    ],
)
def test_a_null_key_fails_the_call_and_changes_nothing(
    snap: Snapshot, sql: str, params: list[Any]
) -> None:
    with ToolWorld(snap, [run_sql]) as world:
        event = world.call("run_sql", {"sql": sql, "params": params})
        assert event["status"] == "error"
        assert "NULL primary key" in event["error"]["message"]
        assert world.state_digest() == snap.digest
        assert world.audit_history() == []


def test_rows_with_keys_are_written_and_diffed_as_before(snap: Snapshot) -> None:
    writes = [
        ("INSERT INTO payments VALUES (?, ?)", ["P2", 5]),
        ("UPDATE payments SET cents = 7 WHERE payment_id = ?", ["P1"]),
        ("INSERT INTO lines VALUES (?, ?, ?)", ["I1", 2, 5]),
        ("INSERT INTO counters (n) VALUES (?)", [1]),  # the rowid assigned, as ever
        ("INSERT INTO compact VALUES (?, ?)", ["C", 1]),
        ("INSERT INTO keyless VALUES (?, ?)", [None, 1]),
    ]
    with ToolWorld(snap, [run_sql]) as world:
        for sql, params in writes:
            assert world.call("run_sql", {"sql": sql, "params": params})["status"] == "ok"
        diff = world.diff()
        assert diff == world.scan_diff()
        assert sum(len(table["created"]) for table in diff.values()) == 5
        world.reset(seed=1)
        assert world.state_digest() == snap.digest


def test_a_snapshot_holding_a_null_key_is_refused() -> None:
    def populate(conn: sqlite3.Connection, _rng: Any) -> None:
        conn.execute("INSERT INTO payments VALUES (NULL, 5)")

    with pytest.raises(InputError, match=r"'payments' holds a row whose primary key .* is NULL"):
        Snapshot.build("null-row", SCHEMA, populate)


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'").fetchall()
    return [name for (name,) in rows if not name.startswith(("sqlite_", "_onrecord_"))]
