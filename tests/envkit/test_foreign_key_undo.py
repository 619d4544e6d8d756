"""Reset with ``ToolWorld(..., foreign_keys=True)`` undoes the audited rows, as without
enforcement: before, every such reset copied every page (~18 ms against 0.3 ms on a
400k-row snapshot). The undo switches enforcement off for itself alone, so its deletes
cascade nowhere and no half-way state is refused, and the world's rows, rowids,
``sqlite_sequence`` and digest are the snapshot's afterwards; enforcement and cascades
work again in the next episode."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool
from onrecord.envkit._undo import RowUndo

from .test_state_property import full_state

SCHEMA = """
CREATE TABLE orders (id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT UNIQUE NOT NULL);
CREATE TABLE lines (id INTEGER PRIMARY KEY,
                    order_id INTEGER REFERENCES orders(id) ON DELETE CASCADE,
                    order_code TEXT REFERENCES orders(code) ON UPDATE CASCADE,
                    qty INTEGER NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY,
                    order_id INTEGER REFERENCES orders(id) ON DELETE SET NULL, body TEXT);
CREATE TABLE holds (order_id INTEGER NOT NULL REFERENCES orders(id), reason TEXT,
                    PRIMARY KEY (order_id, reason)) WITHOUT ROWID;
"""


def _populate(conn: sqlite3.Connection, _rng: Any) -> None:
    conn.executemany("INSERT INTO orders (id, code) VALUES (?, ?)", [(3, "C"), (1, "A"), (2, "B")])
    conn.executemany(
        "INSERT INTO lines VALUES (?, ?, ?, ?)",
        [(10, 1, "A", 1), (11, 1, "A", 2), (12, 2, "B", 5), (13, 3, "C", 1)],
    )
    conn.executemany("INSERT INTO notes VALUES (?, ?, ?)", [(1, 1, "rush"), (2, 3, "gift")])
    conn.execute("INSERT INTO holds VALUES (2, 'credit')")


@tool(writes=True)
def run_sql(ctx: ToolContext, sql: str, params: list[Any]) -> None:
    """Run one statement (test only)."""
    ctx.execute(sql, params)


OPERATIONS = [
    ("DELETE FROM orders WHERE id = ?", st.integers(1, 5)),  # cascades, sets NULL
    ("UPDATE orders SET code = code || 'x' WHERE id = ?", st.integers(1, 4)),  # cascades
    ("INSERT INTO orders (code) VALUES (?)", st.sampled_from(["D", "E", "A"])),
    ("INSERT INTO lines (order_id, order_code, qty) VALUES (?, NULL, 1)", st.integers(1, 6)),
    ("UPDATE lines SET qty = qty + 1 WHERE order_id = ?", st.integers(1, 3)),
    ("DELETE FROM holds WHERE order_id = ?", st.integers(1, 3)),
    ("INSERT INTO holds VALUES (?, 'late')", st.integers(1, 6)),
]
CALLS = st.lists(
    st.sampled_from(OPERATIONS).flatmap(
        lambda op: st.tuples(st.just(op[0]), st.tuples(*op[1:]).map(list))
    ),
    max_size=8,
)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("fk-undo", SCHEMA, _populate)


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    with ToolWorld(snap, [run_sql], foreign_keys=True) as built:
        yield built


def _cookie(world: ToolWorld) -> int:
    value: int = world.conn.execute("PRAGMA schema_version").fetchone()[0]
    return value


def _enforced(world: ToolWorld) -> bool:
    return bool(world.conn.execute("PRAGMA foreign_keys").fetchone()[0])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(CALLS, CALLS)
def test_a_reset_with_enforced_keys_undoes_rows_and_equals_the_snapshot(
    world: ToolWorld, first: list[tuple[str, list[Any]]], second: list[tuple[str, list[Any]]]
) -> None:
    pristine = full_state(world.snapshot.connection)
    for calls in (first, second):  # two episodes: nothing leaks through the reset
        for sql, params in calls:
            before, version = full_state(world.conn), world.state_version
            event = world.call("run_sql", {"sql": sql, "params": params})
            if event["status"] != "ok":  # a broken key or UNIQUE fails the call, unchanged
                assert event["error"]["type"] == "tool_error", event
                assert "constraint failed" in event["error"]["message"], event
                assert full_state(world.conn) == before  # rows, cascades and audit alike
                assert world.state_version == version
        assert world.diff() == world.scan_diff()  # the cascades are in the history
        cookie = _cookie(world)
        world.reset()
        assert _cookie(world) == cookie, "the reset should have undone rows, not copied pages"
        assert full_state(world.conn) == pristine
        assert world.state_digest() == world.snapshot.digest
        assert world.audit_history() == []
        assert world.diff() == {}
        assert _enforced(world)


def test_enforcement_and_cascades_work_again_after_an_undo(world: ToolWorld) -> None:
    world.call("run_sql", {"sql": "UPDATE lines SET qty = 9 WHERE id = ?", "params": [10]})
    cookie = _cookie(world)
    world.reset()
    assert _cookie(world) == cookie
    missing = world.call(
        "run_sql",
        {"sql": "INSERT INTO lines (order_id, qty) VALUES (?, 1)", "params": [99]},
    )
    assert missing["status"] == "error"
    assert "FOREIGN KEY constraint failed" in missing["error"]["message"]
    deleted = world.call("run_sql", {"sql": "DELETE FROM orders WHERE id = ?", "params": [1]})
    assert deleted["status"] == "ok"
    assert [line["id"] for line in world.diff()["lines"]["deleted"]] == [10, 11]
    assert world.diff()["notes"]["changed"][0]["after"]["order_id"] is None


def test_a_snapshot_that_breaks_its_own_keys_is_put_back_as_it_was() -> None:
    """Rows the snapshot starts with are not checked (nor are they by a page copy): an
    undo that re-inserts an orphan line must not be refused."""

    def orphan(conn: sqlite3.Connection, rng: Any) -> None:
        _populate(conn, rng)
        conn.execute("INSERT INTO lines VALUES (20, 42, NULL, 1)")  # order 42 does not exist

    snap = Snapshot.build("fk-orphan", SCHEMA, orphan)
    with ToolWorld(snap, [run_sql], foreign_keys=True) as world:
        event = world.call("run_sql", {"sql": "DELETE FROM lines WHERE id = ?", "params": [20]})
        assert event["status"] == "ok"
        cookie = _cookie(world)
        world.reset()
        assert _cookie(world) == cookie
        assert world.state_digest() == snap.digest
        assert _enforced(world)


def test_keys_turned_on_by_hand_are_undone_and_stay_on(snap: Snapshot) -> None:
    with ToolWorld(snap, [run_sql]) as world:
        world.conn.execute("PRAGMA foreign_keys = ON")
        world.call("run_sql", {"sql": "DELETE FROM orders WHERE id = ?", "params": [2]})
        cookie = _cookie(world)
        world.reset()
        assert _cookie(world) == cookie
        assert world.state_digest() == snap.digest
        assert _enforced(world)


def test_enforcement_comes_back_when_the_undo_fails(
    world: ToolWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: RowUndo, conn: sqlite3.Connection) -> bool:
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    world.call("run_sql", {"sql": "DELETE FROM orders WHERE id = ?", "params": [2]})
    monkeypatch.setattr(RowUndo, "_undo", broken)
    with pytest.raises(sqlite3.OperationalError, match="simulated"):
        world.reset()
    assert not world.conn.in_transaction
    assert _enforced(world)
    monkeypatch.undo()
    world.reset()
    assert world.state_digest() == world.snapshot.digest


def test_a_read_only_episode_leaves_the_prepared_statements_alone(world: ToolWorld) -> None:
    """Setting the pragma expires every prepared statement; with nothing to undo the
    reset does not set it (a statement prepared before the reset is not prepared again:
    the authorizer, asked at every prepare, is not called)."""
    asked: list[int] = []
    # Setting an authorizer expires the statements too: set it first.
    world.conn.set_authorizer(lambda *args: asked.append(args[0]) or sqlite3.SQLITE_OK)
    world.reset()
    world.conn.execute("SELECT count(*) FROM lines").fetchone()
    assert asked, "the statement was prepared (and the authorizer asked)"
    world.reset()
    asked.clear()
    world.conn.execute("SELECT count(*) FROM lines").fetchone()
    assert asked == []


def test_a_deferred_key_broken_at_commit_fails_the_call_and_changes_nothing() -> None:
    """A ``DEFERRABLE INITIALLY DEFERRED`` key is checked when the call's savepoint is
    released: before, ``world.call`` raised ``IntegrityError`` (it never raises), the
    call was not logged, and the orphan row stayed in an open transaction."""
    snap = Snapshot.build(
        "deferred",
        "CREATE TABLE p (id INTEGER PRIMARY KEY);"
        "CREATE TABLE c (id INTEGER PRIMARY KEY,"
        " pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED);",
        lambda conn, _: conn.execute("INSERT INTO p VALUES (1)"),
    )
    with ToolWorld(snap, [run_sql], foreign_keys=True) as world:
        orphan = world.call("run_sql", {"sql": "INSERT INTO c (pid) VALUES (?)", "params": [5]})
        assert orphan["status"] == "error"
        assert orphan["error"]["type"] == "tool_error"
        assert "FOREIGN KEY constraint failed" in orphan["error"]["message"]
        assert world.log.events[-1]["status"] == "error"  # logged
        assert not world.conn.in_transaction
        assert world.table_rows("c") == []
        assert world.audit_history() == []
        assert world.state_version == 0
        fine = world.call("run_sql", {"sql": "INSERT INTO c (pid) VALUES (?)", "params": [1]})
        assert fine["status"] == "ok"
        assert world.state_version == 1
        assert world.table_rows("c") == [{"id": 1, "pid": 1}]
