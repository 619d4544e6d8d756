"""A call stays inside its savepoint even when SQLite ends the transaction under the tool.

A trigger's ``RAISE(ROLLBACK)``, an ``OR ROLLBACK`` clause, an ``ON CONFLICT ROLLBACK``
constraint or an interrupt during a write rolls back the whole transaction, the call's
savepoint with it. Before, a tool that caught the error and went on wrote in autocommit
mode: each later write was committed at once, audited at the previous step, and stayed
although the call was logged as a failure ("no such savepoint"). Now no row can change
once the call's transaction is gone, the call is a ``tool_error`` that says so, and the
world is exactly as before the call (rows, ``sqlite_sequence``, history, digest,
version); the next calls work as usual. Real SQLite files throughout (docs/envkit.md,
Tools)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = """
CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL);
CREATE TABLE picks (id INTEGER PRIMARY KEY AUTOINCREMENT, sku TEXT NOT NULL,
                    qty INTEGER NOT NULL);
CREATE TABLE tags (name TEXT UNIQUE ON CONFLICT ROLLBACK,
                   note TEXT NOT NULL ON CONFLICT ROLLBACK DEFAULT '');
CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB);
CREATE TRIGGER no_negative BEFORE UPDATE OF stock ON items WHEN NEW.stock < 0
BEGIN SELECT RAISE(ROLLBACK, 'stock cannot go negative'); END;
"""
# No trigger of its own: the reset undoes rows rather than copying pages.
PLAIN = """
CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL);
CREATE TABLE picks (id INTEGER PRIMARY KEY AUTOINCREMENT, sku TEXT NOT NULL,
                    qty INTEGER NOT NULL);
"""

ENDED = "TransactionEnded: SQLite rolled back the call's transaction while the tool ran"


def _populate(conn: sqlite3.Connection, _: object) -> None:
    conn.execute("INSERT INTO items VALUES ('bolt', 3)")
    conn.execute("INSERT INTO picks (sku, qty) VALUES ('bolt', 1)")
    conn.execute("INSERT INTO tags (name) VALUES ('red')")
    conn.execute("INSERT INTO blobs VALUES (1, zeroblob(4))")


def _populate_plain(conn: sqlite3.Connection, _: object) -> None:
    conn.execute("INSERT INTO items VALUES ('bolt', 3)")
    conn.execute("INSERT INTO picks (sku, qty) VALUES ('bolt', 1)")


def _pick(ctx: ToolContext, sku: str) -> None:
    """The same text before and after the rollback: the second runs a cached statement."""
    ctx.execute("INSERT INTO picks (sku, qty) VALUES (?, 1)", (sku,))


def _swallow(ctx: ToolContext, sql: str, error: type[Exception] = sqlite3.IntegrityError) -> None:
    with pytest.raises(error):
        ctx.execute(sql)


def _raise_rollback(ctx: ToolContext) -> None:
    _swallow(ctx, "UPDATE items SET stock = -1")


def _insert_or_rollback(ctx: ToolContext) -> None:
    _swallow(ctx, "INSERT OR ROLLBACK INTO items VALUES ('bolt', 1)")


def _update_or_rollback(ctx: ToolContext) -> None:
    _swallow(ctx, "UPDATE OR ROLLBACK items SET stock = NULL")


def _unique_on_conflict_rollback(ctx: ToolContext) -> None:
    _swallow(ctx, "INSERT INTO tags (name) VALUES ('red')")


def _not_null_on_conflict_rollback(ctx: ToolContext) -> None:
    _swallow(ctx, "INSERT INTO tags (name, note) VALUES ('blue', NULL)")


def _interrupt(ctx: ToolContext) -> None:
    conn = ctx.connection
    conn.create_function("stop", 0, lambda: conn.interrupt() or 1)
    _swallow(ctx, "UPDATE items SET stock = stock + stop()", sqlite3.OperationalError)


def _progress_handler(ctx: ToolContext) -> None:
    ctx.connection.set_progress_handler(lambda: 1, 1)
    try:
        _swallow(ctx, "UPDATE items SET stock = stock + 1", sqlite3.OperationalError)
    finally:
        ctx.connection.set_progress_handler(None, 1)


ENDINGS: dict[str, Callable[[ToolContext], None]] = {
    "raise_rollback": _raise_rollback,
    "insert_or_rollback": _insert_or_rollback,
    "update_or_rollback": _update_or_rollback,
    "unique_on_conflict_rollback": _unique_on_conflict_rollback,
    "not_null_on_conflict_rollback": _not_null_on_conflict_rollback,
    "interrupt": _interrupt,
    "progress_handler": _progress_handler,
}


def _write_on(ctx: ToolContext, how: str) -> None:
    """What a tool that caught the error goes on to write, each way SQLite takes it."""
    if how == "execute":
        _pick(ctx, "later")
        ctx.execute("UPDATE items SET stock = 40")
        ctx.execute("DELETE FROM tags")
    elif how == "own_savepoint":  # a transaction the tool begins itself, then commits
        ctx.execute("SAVEPOINT mine")
        _pick(ctx, "later")
        ctx.execute("RELEASE mine")
    elif how == "with_insert":  # not an INSERT to the sqlite3 module: no implicit BEGIN
        ctx.execute("WITH x(v) AS (SELECT 1) INSERT INTO picks (sku, qty) SELECT 'cte', v FROM x")
    elif how == "executescript":
        ctx.connection.executescript("INSERT INTO picks (sku, qty) VALUES ('script', 1);")
    elif how == "nothing":
        return
    else:  # pragma: no cover
        raise AssertionError(how)


@tool(writes=True)
def escape(ctx: ToolContext, ending: str, then: str) -> str:
    """Write, have SQLite end the transaction, catch the error, write on."""
    _pick(ctx, "first")
    ENDINGS[ending](ctx)
    with contextlib.suppress(sqlite3.IntegrityError):  # the refusal: the call still fails
        _write_on(ctx, then)
    return "done"


@tool(writes=True)
def restock(ctx: ToolContext, stock: int) -> None:
    ctx.execute("UPDATE items SET stock = ? WHERE sku = 'bolt'", (stock,))
    _pick(ctx, "restock")


@tool
def peek(ctx: ToolContext) -> int:
    """Read-only, but writes: its write, the rollback and a later write all stay out."""
    with pytest.raises(sqlite3.IntegrityError):
        ctx.execute("UPDATE items SET stock = -1")
    with pytest.raises(sqlite3.IntegrityError):
        _pick(ctx, "peek")
    return 1


TOOLS = [escape, restock, peek]


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("savepoint-escape", SCHEMA, _populate)


@pytest.fixture
def world(snap: Snapshot, tmp_path: Path) -> Iterator[ToolWorld]:
    with ToolWorld(snap, TOOLS, path=tmp_path / "world.db") as built:
        yield built


def _evidence(world: ToolWorld) -> tuple[Any, ...]:
    """Everything a call could have changed, read from the file."""
    rows = {table.name: world.table_rows(table.name) for table in world.snapshot.tables}
    sequence = world.conn.execute("SELECT name, seq FROM sqlite_sequence ORDER BY name")
    return (
        world.state_digest(),
        rows,
        sequence.fetchall(),
        world.audit_history(),
        world.state_version,
    )


def _assert_nothing_changed(world: ToolWorld, before: tuple[Any, ...], event: Any) -> None:
    assert _evidence(world) == before
    assert world.scan_diff() == world.diff()  # nothing unaudited either
    assert not world.conn.in_transaction
    assert event["state_version"] == before[-1]
    assert all(change["step"] != event["step"] for change in world.audit_history())
    # Another connection to the file sees the same: nothing was committed.
    reader = world.connect_readonly()
    try:
        assert reader.execute("SELECT stock FROM items").fetchall() == [
            (row["stock"],) for row in before[1]["items"]
        ]
        assert reader.execute("SELECT count(*) FROM picks").fetchone() == (len(before[1]["picks"]),)
    finally:
        reader.close()


def _assert_next_calls_work(world: ToolWorld) -> None:
    version = world.state_version
    event = world.call("restock", {"stock": 9})
    assert event["status"] == "ok", event
    assert world.state_version == event["state_version"] == version + 1
    assert world.table_rows("items")[0]["stock"] == 9
    assert [(c["step"], c["table"]) for c in world.audit_history()][-2:] == [
        (event["step"], "items"),
        (event["step"], "picks"),
    ]


@pytest.mark.parametrize("then", ["execute", "own_savepoint", "with_insert", "executescript"])
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_writes_after_sqlite_ended_the_transaction_are_refused_and_the_call_fails(
    world: ToolWorld, ending: str, then: str
) -> None:
    assert world.call("restock", {"stock": 5})["status"] == "ok"  # a history to keep
    before = _evidence(world)
    event = world.call("escape", {"ending": ending, "then": then})
    assert event["status"] == "error"
    assert event["result"] is None
    assert event["error"]["type"] == "tool_error"
    assert event["error"]["message"].startswith(f"escape: {ENDED}")
    _assert_nothing_changed(world, before, event)
    _assert_next_calls_work(world)


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_tool_that_returns_after_its_transaction_ended_is_told_why(
    world: ToolWorld, ending: str
) -> None:
    """Nothing written after the rollback; before, the call failed with the world's own
    ``no such savepoint: onrecord_call``, which said nothing of what had happened."""
    before = _evidence(world)
    event = world.call("escape", {"ending": ending, "then": "nothing"})
    assert event["error"]["type"] == "tool_error"
    assert event["error"]["message"].startswith(f"escape: {ENDED}")
    assert "no such savepoint" not in event["error"]["message"]
    _assert_nothing_changed(world, before, event)
    _assert_next_calls_work(world)


def test_a_read_only_tool_cannot_write_after_a_rollback_either(world: ToolWorld) -> None:
    before = _evidence(world)
    event = world.call("peek")
    assert event["error"] == {
        "type": "forbidden_statement",
        "message": "peek: a read-only tool (writes=False) wrote to the database; its "
        "changes were rolled back",
    }
    _assert_nothing_changed(world, before, event)
    _assert_next_calls_work(world)


def test_the_guard_holds_across_resets_by_undo_and_by_page_copy(tmp_path: Path) -> None:
    """The TEMP triggers are the connection's: neither reset drops them (a schema with no
    trigger of its own is reset by undoing rows, the other by a page copy)."""
    plain = Snapshot.build("savepoint-escape-plain", PLAIN, _populate_plain)
    for snap in (plain, Snapshot.build("savepoint-escape", SCHEMA, _populate)):
        with ToolWorld(snap, TOOLS, path=tmp_path / f"{snap.name}.db") as world:
            assert world._undo is not None
            assert world._undo.usable == (snap is plain)
            for episode in range(3):
                world.reset(seed=episode)
                assert world.call("restock", {"stock": episode})["status"] == "ok"
                before = _evidence(world)
                event = world.call("escape", {"ending": "insert_or_rollback", "then": "execute"})
                assert event["error"]["message"].startswith(f"escape: {ENDED}")
                _assert_nothing_changed(world, before, event)
            world.reset()
            assert world.state_digest() == snap.digest


@tool(writes=True)
def blob_write(ctx: ToolContext) -> None:
    with ctx.connection.blobopen("blobs", "data", 1) as blob:
        blob.write(b"abcd")


@tool(writes=True)
def blob_write_after_rollback(ctx: ToolContext) -> None:
    _raise_rollback(ctx)
    try:
        with ctx.connection.blobopen("blobs", "data", 1) as blob:
            blob.write(b"abcd")
    except sqlite3.DatabaseError:
        pass


@tool
def blob_read(ctx: ToolContext) -> str:
    with ctx.connection.blobopen("blobs", "data", 1, readonly=True) as blob:
        return blob.read().hex()


def test_blob_writes_are_refused_they_fire_no_trigger(snap: Snapshot, tmp_path: Path) -> None:
    """Before, an incremental BLOB write went past the audit (the diff was empty), was
    committed even after a rollback, and survived the reset's undo into the next
    episode."""
    tools = [blob_write, blob_write_after_rollback, blob_read]
    with ToolWorld(snap, tools, path=tmp_path / "blob.db") as world:
        for name in ("blob_write", "blob_write_after_rollback"):
            before = _evidence(world)
            event = world.call(name)
            assert event["error"]["type"] == "forbidden_statement", event
            assert "blobopen('blobs', 'data') for writing" in event["error"]["message"]
            assert _evidence(world) == before
            assert world.scan_diff() == {}
        read = world.call("blob_read")  # reading is fine
        assert (read["status"], read["result"]) == ("ok", "00000000")
        world.reset()
        assert world.state_digest() == snap.digest


@tool(writes=True)
def lift_guard(ctx: ToolContext) -> None:
    _pick(ctx, "lifted")
    try:
        ctx.connection.set_authorizer(None)
        ctx.execute("COMMIT")
    except sqlite3.DatabaseError:
        pass
    raise RuntimeError("then fails, so its writes should be undone")


@tool(writes=True)
def close_world(ctx: ToolContext) -> None:
    _pick(ctx, "closed")
    with contextlib.suppress(sqlite3.DatabaseError):
        ctx.connection.close()


@tool(writes=True)
def replace_gate(ctx: ToolContext) -> None:
    with contextlib.suppress(sqlite3.DatabaseError):
        ctx.connection.create_function("_ONRECORD_gate", 1, lambda step: 1)
    _raise_rollback(ctx)
    _pick(ctx, "ungated")


@tool(writes=True)
def drop_gate(ctx: ToolContext) -> None:
    with contextlib.suppress(sqlite3.DatabaseError):
        ctx.execute('DROP TRIGGER temp."_onrecord_gate_2_I"')
    _raise_rollback(ctx)
    _pick(ctx, "ungated")


@tool
def ask_gate(ctx: ToolContext) -> Any:
    try:
        return ctx.one("SELECT _onrecord_gate(0) AS allowed")
    except sqlite3.DatabaseError:
        return None


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("lift_guard", "set_authorizer: the world's authorizer is onrecord's guard"),
        ("close_world", "close: the world's connection outlives every call"),
        ("replace_gate", "create_function('_ONRECORD_gate'): that name is onrecord's own"),
        ("drop_gate", "DROP TRIGGER temp._onrecord_gate_2_I: that name is onrecord's own"),
        ("ask_gate", "_onrecord_gate(): that function is onrecord's own, for its triggers"),
    ],
)
def test_the_guard_itself_cannot_be_taken_down_by_a_tool(
    snap: Snapshot, tmp_path: Path, name: str, reason: str
) -> None:
    tools = [lift_guard, close_world, replace_gate, drop_gate, ask_gate, restock]
    with ToolWorld(snap, tools, path=tmp_path / "guard.db") as world:
        before = _evidence(world)
        event = world.call(name)
        assert event["error"] == {"type": "forbidden_statement", "message": f"{name}: {reason}"}
        _assert_nothing_changed(world, before, event)
        _assert_next_calls_work(world)
        world.reset()  # the reset keeps onrecord's TEMP triggers, drops a tool's
        names = world.conn.execute("SELECT name FROM temp.sqlite_schema").fetchall()
        assert len(names) == 3 * len(snap.tables)
