"""A dishonest tool author's writes around the audit and onrecord's own tables.

UPSERT, ``INSERT OR REPLACE``, ``RETURNING``, ``UPDATE ... FROM``, conflict deletes,
foreign-key actions, pragma writes, ``VACUUM INTO``, copies into and out of the world's
connection, BLOB handles, callbacks in a write's expression and savepoint names. Most
were already refused or audited and are pinned here; one hung: a write call's
``backup`` of the world's database, which SQLite answers with "busy" for as long as the
call's transaction writes, and ``sqlite3`` retried for ever. A BLOB write through the
base class (``sqlite3.Connection.blobopen``) is a documented limit: ``environment_problems``
names it. Real ``ToolWorld`` over a real SQLite snapshot throughout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, environment_problems, tool
from tests.envkit.test_hidden_sql_reads_probe16 import copy_database

SCHEMA = """
CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL, code TEXT UNIQUE, data BLOB);
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE seq (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT);
CREATE TABLE lines (id INTEGER PRIMARY KEY,
                    order_id INTEGER REFERENCES orders(id) ON DELETE CASCADE, qty INTEGER);
CREATE TABLE copies (id INTEGER PRIMARY KEY, body TEXT);
CREATE TRIGGER copy_note AFTER UPDATE OF note ON orders BEGIN
  INSERT INTO copies (body) SELECT body FROM notes WHERE id = 1; END;
"""
SECRET = "the secret"


def populate(conn: sqlite3.Connection, _rng: object) -> None:
    conn.execute("INSERT INTO claims VALUES (1, 'open', 'A', x'00000000'), (2, 'open', 'B', NULL)")
    conn.execute("INSERT INTO notes VALUES (1, ?)", (SECRET,))
    conn.execute("INSERT INTO seq (v) VALUES ('first')")
    conn.execute("INSERT INTO orders VALUES (1, 'o')")
    conn.execute("INSERT INTO lines VALUES (1, 1, 3)")


@tool(writes=True, example={"sql": "UPDATE claims SET status = 'paid' WHERE id = 1"})
def run_sql(ctx: ToolContext, sql: str) -> list[list[Any]]:
    """Run the agent's SQL; return what it returned."""
    return [list(row) for row in ctx.connection.execute(sql).fetchall()]


@tool(writes=True, example={"sql": "UPDATE claims SET status = 'paid' WHERE id = 1"})
def run_sql_caught(ctx: ToolContext, sql: str) -> str:
    """Run the agent's SQL, swallow its error, then write an honest row."""
    try:
        ctx.execute(sql)
    except sqlite3.Error as exc:
        return str(exc)
    return "ran"


@tool(writes=True, example={})
def back_up_while_writing(ctx: ToolContext) -> list[int]:
    """Copy the world's database with the backup API during a write call; a progress
    callback that gives up after a few steps stands in for a harness's patience."""
    steps: list[int] = []

    def progress(status: int, _remaining: int, _total: int) -> None:
        steps.append(status)
        if len(steps) >= 3:
            raise RuntimeError(f"backup stuck, statuses {steps}")

    target = sqlite3.connect(":memory:")
    try:
        ctx.connection.backup(target, pages=1, progress=progress, sleep=0)
    finally:
        target.close()
    return steps


@tool(writes=True, example={})
def back_up_into_world(ctx: ToolContext) -> str:
    """Overwrite the world's database with a copy whose claims are all 'evil'."""
    source = sqlite3.connect(":memory:")
    try:
        source.execute("CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT)")
        source.execute("INSERT INTO claims VALUES (1, 'evil')")
        source.commit()
        source.backup(ctx.connection)
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        source.close()
    return "copied"


@tool(writes=True, example={})
def deserialize_through_base_class(ctx: ToolContext) -> str:
    """Replace the world's database through the base class, past the wrapper."""
    source = sqlite3.connect(":memory:")
    source.execute("CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT)")
    sqlite3.Connection.deserialize(ctx.connection, source.serialize())
    return "replaced"


@tool(writes=True, example={})
def blob_write_through_base_class(ctx: ToolContext) -> None:
    """Write claim 1's BLOB in place through the base class: no trigger fires."""
    with sqlite3.Connection.blobopen(ctx.connection, "claims", "data", 1) as blob:
        blob.write(b"\xff\xff")


@tool(writes=True, example={"how": "window"})
def callback_in_a_write(ctx: ToolContext, how: str) -> None:
    """Set claim 1's status from a window function or aggregate of the tool's whose
    steps read the hidden notes (past the world's cursors)."""
    conn = ctx.connection

    class Spy:
        def __init__(self) -> None:
            self.got = ""

        def step(self, _value: object) -> None:
            self.got = str(sqlite3.Cursor(conn).execute("SELECT body FROM notes").fetchone()[0])

        def inverse(self, _value: object) -> None:
            pass

        def value(self) -> str:
            return self.got

        def finalize(self) -> str:
            return self.got

    if how == "window":
        conn.create_window_function("spy", 1, Spy)
        expression = "(SELECT spy(id) OVER () FROM claims LIMIT 1)"
    else:
        conn.create_aggregate("spy", 1, Spy)
        expression = "(SELECT spy(id) FROM claims)"
    ctx.execute(f"UPDATE claims SET status = {expression} WHERE id = 1")


TOOLS = [
    run_sql,
    run_sql_caught,
    back_up_while_writing,
    copy_database,  # the read-only copy, as test_hidden_sql_reads_probe16 makes it
    back_up_into_world,
    deserialize_through_base_class,
    blob_write_through_base_class,
    callback_in_a_write,
]


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("cheating-tools-28", SCHEMA, populate)


@pytest.fixture(params=[False, True], ids=["keys-off", "keys-on"])
def world(snap: Snapshot, request: pytest.FixtureRequest) -> Iterator[ToolWorld]:
    with ToolWorld(snap, TOOLS, hidden=["notes"], foreign_keys=request.param) as built:
        built.reset(seed=0, run_id="probe28")
        yield built


def _unchanged(world: ToolWorld, snap: Snapshot, version: int = 0) -> None:
    assert world.diff() == {}
    assert world.scan_diff() == {}
    assert world.audit_history() == []
    assert world.state_digest() == snap.digest
    assert world.state_version == version


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        ("INSERT INTO _onrecord_ctx VALUES (0, 0, 0) ON CONFLICT DO NOTHING", "_onrecord_ctx"),
        ("INSERT OR REPLACE INTO _onrecord_ctx VALUES (7, 0, 0)", "_onrecord_ctx"),
        ("UPDATE _onrecord_ctx SET step = c.id FROM claims c WHERE c.id = 1", "_onrecord_ctx"),
        ("INSERT OR REPLACE INTO sqlite_sequence VALUES ('seq', 100)", "sqlite_sequence"),
        (
            "INSERT INTO sqlite_sequence (name, seq) VALUES ('seq', 100) "
            "ON CONFLICT DO NOTHING RETURNING seq",
            "sqlite_sequence",
        ),
        ("PRAGMA foreign_keys = OFF", "PRAGMA foreign_keys"),
        ("PRAGMA recursive_triggers = OFF", "PRAGMA recursive_triggers"),
        ("PRAGMA defer_foreign_keys = ON", "PRAGMA defer_foreign_keys"),
        ("PRAGMA journal_mode = DELETE", "PRAGMA journal_mode"),
        ("PRAGMA writable_schema = ON", "PRAGMA writable_schema"),
        ("PRAGMA user_version = 5", "PRAGMA user_version"),
        ("ATTACH ':memory:' AS other", "ATTACH"),
        ("ANALYZE", "CREATE TABLE sqlite_stat1"),
        ('RELEASE "onrecord_call"', "onrecord_call"),
        ("ROLLBACK TRANSACTION TO SAVEPOINT ONRECORD_CALL", "ONRECORD_CALL"),
    ],
)
def test_writes_past_the_audit_are_refused_even_when_caught(
    world: ToolWorld, snap: Snapshot, sql: str, refusal: str
) -> None:
    event = world.call("run_sql_caught", {"sql": sql})
    assert event["status"] == "error"
    assert event["error"]["type"] == "forbidden_statement"
    assert refusal in event["error"]["message"]
    _unchanged(world, snap)


@pytest.mark.parametrize("sql", ["VACUUM", "VACUUM INTO ':memory:'"])
def test_vacuum_fails_inside_the_call(world: ToolWorld, snap: Snapshot, sql: str) -> None:
    event = world.call("run_sql", {"sql": sql})
    assert event["status"] == "error"
    assert "cannot VACUUM from within a transaction" in event["error"]["message"]
    _unchanged(world, snap)


def test_a_replace_that_displaces_another_row_is_audited(world: ToolWorld) -> None:
    # Claim 3 takes claim 1's UNIQUE code: SQLite deletes claim 1 to make room.
    sql = "INSERT OR REPLACE INTO claims VALUES (3, 'x', 'A', NULL)"
    event = world.call("run_sql", {"sql": sql})
    assert event["status"] == "ok"
    diff = world.diff()
    assert [row["id"] for row in diff["claims"]["deleted"]] == [1]
    assert [row["id"] for row in diff["claims"]["created"]] == [3]
    assert diff == world.scan_diff()


def test_an_upsert_is_audited_and_its_hidden_read_logged(world: ToolWorld) -> None:
    event = world.call(
        "run_sql",
        {
            "sql": "INSERT INTO claims VALUES (1, 'x', 'Z', NULL) ON CONFLICT(id) DO UPDATE "
            "SET status = (SELECT body FROM notes) RETURNING status"
        },
    )
    assert event["result"] == [[SECRET]]
    assert event["reads"] == [{"table": "notes", "rows": "unknown"}]
    assert world.diff()["claims"]["changed"][0]["after"]["status"] == SECRET
    assert world.diff() == world.scan_diff()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE claims SET status = n.body FROM notes n WHERE n.id = claims.id",
        "UPDATE claims SET status = 'y' WHERE id = 1 RETURNING (SELECT body FROM notes)",
        "DELETE FROM notes RETURNING body",
        "INSERT OR REPLACE INTO notes VALUES (1, 'x') RETURNING body",
    ],
)
def test_a_write_reading_a_hidden_table_logs_the_read(world: ToolWorld, sql: str) -> None:
    event = world.call("run_sql", {"sql": sql})
    assert event["status"] == "ok"
    assert event["reads"] == [{"table": "notes", "rows": "unknown"}]
    assert world.diff() == world.scan_diff() != {}


def test_an_owner_trigger_copying_a_hidden_row_logs_the_read(world: ToolWorld) -> None:
    # The tool writes only a visible table; the snapshot's trigger reads the notes.
    event = world.call("run_sql", {"sql": "UPDATE orders SET note = 'z' WHERE id = 1"})
    assert event["reads"] == [{"table": "notes", "rows": "unknown"}]
    assert world.diff()["copies"]["created"] == [{"id": 1, "body": SECRET}]


def test_a_cascade_is_audited_only_where_keys_are_enforced(world: ToolWorld) -> None:
    event = world.call("run_sql", {"sql": "DELETE FROM orders WHERE id = 1"})
    assert event["status"] == "ok"
    keys_on = world.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert ("lines" in world.diff()) is keys_on
    assert world.diff() == world.scan_diff()


@pytest.mark.parametrize("how", ["window", "aggregate"])
def test_a_callback_in_a_write_reading_a_hidden_table_is_logged(world: ToolWorld, how: str) -> None:
    event = world.call("callback_in_a_write", {"how": how})
    assert event["status"] == "ok"
    assert event["reads"] == [{"table": "notes", "rows": "unknown"}]
    assert world.diff()["claims"]["changed"][0]["after"]["status"] == SECRET


def test_a_backup_in_a_write_call_fails_at_once_rather_than_retrying_for_ever(
    world: ToolWorld, snap: Snapshot
) -> None:
    # SQLite answers "busy" at every step while the call writes; sqlite3 retried for
    # ever (the call, and the run, hung). Here the tool's progress callback gives up
    # after three steps, so without the refusal the error is its RuntimeError.
    event = world.call("back_up_while_writing", {})
    assert event["status"] == "error"
    assert event["error"]["type"] == "tool_error"
    assert "OperationalError: backup: the call's own transaction" in event["error"]["message"]
    assert event["reads"] == []  # nothing was copied
    _unchanged(world, snap)
    # The same copy from a read-only call works, and is a read of the hidden table.
    event = world.call("copy_database", {"how": "backup"})
    assert (event["status"], event["result"]) == ("ok", 1)
    assert event["reads"] == [{"table": "notes", "rows": "unknown"}]


def test_nothing_is_copied_into_the_world(world: ToolWorld, snap: Snapshot) -> None:
    event = world.call("back_up_into_world", {})
    assert event["result"] == "destination database is in use"
    event = world.call("deserialize_through_base_class", {})
    assert event["status"] == "error"
    assert event["error"]["type"] == "forbidden_statement"  # SQLite ATTACHes to deserialize
    _unchanged(world, snap, version=1)  # the first call caught its error: a write call


def test_a_base_class_blob_write_is_named_by_environment_problems(snap: Snapshot) -> None:
    # Documented limit: no trigger and no authorizer sees an incremental BLOB write
    # made past the wrapper, so only a full scan does (as check_environment's).
    with ToolWorld(snap, [blob_write_through_base_class], hidden=["notes"]) as world:
        problems = environment_problems(world)
    assert any("blob_write_through_base_class" in problem for problem in problems), problems
