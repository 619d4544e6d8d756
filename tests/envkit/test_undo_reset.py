"""Reset by undoing audited rows must leave exactly the state a full restore leaves:
same rows, same rowids, same ``sqlite_sequence``, empty history; and it must give way
to a full restore whenever the history cannot be trusted to list every change."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool
from onrecord.envkit._undo import UNDO_LIMIT

SCHEMA = """
CREATE TABLE accounts (code TEXT PRIMARY KEY, owner TEXT NOT NULL, cents INTEGER NOT NULL);
CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, cents INTEGER);
CREATE TABLE tags (code TEXT, tag TEXT, PRIMARY KEY (code, tag)) WITHOUT ROWID;
CREATE TABLE loose (label TEXT, payload BLOB);
CREATE INDEX entries_code ON entries(code);
"""


def _populate(conn: sqlite3.Connection, _rng: Any) -> None:
    # Inserted out of key order, so rowid order differs from key order.
    conn.executemany(
        "INSERT INTO accounts VALUES (?, ?, ?)",
        [(f"A{i:02d}", f"owner {i % 4}", 100 * i) for i in (5, 1, 9, 3, 7, 2, 8, 4, 6)],
    )
    conn.executemany("INSERT INTO entries (code, cents) VALUES (?, ?)", [("A01", 5), ("A02", 7)])
    conn.execute("DELETE FROM entries WHERE id = 1")  # a gap below the sequence
    conn.executemany("INSERT INTO tags VALUES (?, ?)", [("A01", "vip"), ("A09", "late")])
    conn.executemany("INSERT INTO loose VALUES (?, ?)", [("x", b"\x00\xff"), ("y", None)])


@tool(writes=True)
def run_sql(ctx: ToolContext, sql: str, params: list[Any]) -> None:
    """Run one statement (test only: any write, exactly as given)."""
    ctx.execute(sql, params)


CODES = st.sampled_from(["A01", "A02", "A05", "A09", "B1"])
OPERATIONS = [
    ("UPDATE accounts SET cents = cents + ? WHERE code = ?", st.integers(-9, 9), CODES),
    ("DELETE FROM accounts WHERE code = ?", CODES),
    ("INSERT OR REPLACE INTO accounts VALUES (?, 'new', ?)", CODES, st.integers(0, 5)),
    ("UPDATE accounts SET code = ? WHERE code = ?", st.sampled_from(["C1", "C2"]), CODES),
    ("INSERT INTO entries (code, cents) VALUES (?, ?)", CODES, st.integers(0, 5)),
    ("DELETE FROM entries WHERE id = ?", st.integers(1, 6)),
    ("INSERT OR REPLACE INTO tags VALUES (?, ?)", CODES, st.sampled_from(["vip", "new"])),
    ("DELETE FROM tags WHERE code = ?", CODES),
    ("INSERT INTO loose VALUES (?, CAST(? AS BLOB))", st.text(max_size=3), st.text(max_size=3)),
    ("DELETE FROM loose WHERE label = ?", st.sampled_from(["x", "y"])),
    ("UPDATE loose SET rowid = rowid + 10 WHERE label = ?", st.sampled_from(["x", "y"])),
]
CALLS = st.lists(
    st.sampled_from(OPERATIONS).flatmap(
        lambda op: st.tuples(st.just(op[0]), st.tuples(*op[1:]).map(list))
    ),
    max_size=8,
)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("undo", SCHEMA, _populate)


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    with ToolWorld(snap, [run_sql]) as built:
        yield built


def _state(conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything a query could observe, rowids and internal tables included."""
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
    state: dict[str, Any] = {}
    for name in sorted(names):
        rowid = "" if name == "tags" else "rowid, "
        state[name] = conn.execute(f'SELECT {rowid}* FROM "{name}" ORDER BY 1, 2').fetchall()
    return state


def _cookie(world: ToolWorld) -> int:
    value: int = world.conn.execute("PRAGMA schema_version").fetchone()[0]
    return value


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(CALLS)
def test_undo_reset_equals_a_full_restore(
    world: ToolWorld, calls: list[tuple[str, list[Any]]]
) -> None:
    pristine = _state(world.snapshot.connection)
    for sql, params in calls:
        event = world.call("run_sql", {"sql": sql, "params": params})
        assert event["status"] in ("ok", "error"), event  # constraint errors roll back
    cookie = _cookie(world)
    world.reset()
    assert _cookie(world) == cookie, "the reset should have undone rows, not copied pages"
    assert _state(world.conn) == pristine
    assert world.state_digest() == world.snapshot.digest
    assert world.audit_history() == []
    assert world.diff() == {}


def test_rows_written_again_after_an_undo_get_the_same_ids(world: ToolWorld) -> None:
    first = [
        world.call(
            "run_sql",
            {"sql": "INSERT INTO entries (code, cents) VALUES (?, ?)", "params": ["A01", 1]},
        )
    ]
    ids = world.conn.execute("SELECT id FROM entries ORDER BY id").fetchall()
    world.reset()
    first.append(
        world.call(
            "run_sql",
            {"sql": "INSERT INTO entries (code, cents) VALUES (?, ?)", "params": ["A01", 1]},
        )
    )
    assert world.conn.execute("SELECT id FROM entries ORDER BY id").fetchall() == ids
    assert all(event["status"] == "ok" for event in first)


def _write_then_reset(world: ToolWorld, *extra: str) -> tuple[int, int]:
    world.call("run_sql", {"sql": "DELETE FROM accounts WHERE code = ?", "params": ["A05"]})
    for sql in extra:
        world.conn.execute(sql)
    before = _cookie(world)
    world.reset()
    assert _state(world.conn) == _state(world.snapshot.connection)
    return before, _cookie(world)


@pytest.mark.parametrize(
    "extra",
    [
        ("CREATE TABLE sneaky (x)",),  # DDL: the history cannot list it
        ('DELETE FROM "_onrecord_audit_0"',),  # a gap in the history
        ("PRAGMA user_version = 7",),  # a header field only a page copy restores
    ],
)
def test_untrustworthy_history_falls_back_to_a_full_restore(
    world: ToolWorld, extra: tuple[str, ...]
) -> None:
    before, after = _write_then_reset(world, *extra)
    assert after != before
    assert world.conn.execute("PRAGMA user_version").fetchone() == (0,)
    before, after = _write_then_reset(world)  # and the next reset may undo again
    assert after == before


def test_many_changes_take_a_full_restore(world: ToolWorld) -> None:
    for _ in range(UNDO_LIMIT // 2 + 1):
        world.call("run_sql", {"sql": "UPDATE accounts SET cents = cents + 1", "params": []})
    before = _cookie(world)
    world.reset()
    assert _cookie(world) != before
    assert _state(world.conn) == _state(world.snapshot.connection)


def test_a_schema_with_its_own_triggers_is_always_restored_in_full() -> None:
    schema = SCHEMA + (
        "CREATE TRIGGER log_accounts AFTER UPDATE ON accounts "
        "BEGIN INSERT INTO entries (code, cents) VALUES (NEW.code, NEW.cents); END;"
    )
    with ToolWorld(Snapshot.build("triggers", schema, _populate), [run_sql]) as world:
        before, after = _write_then_reset(world, "UPDATE accounts SET cents = 0 WHERE code = 'A01'")
        assert after != before
