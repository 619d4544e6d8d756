"""onrecord's own statements on the world's connection are never ones a tool can reuse.

SQLite asks the authorizer when a statement is prepared, and ``sqlite3`` caches prepared
statements by their text: a tool typing the exact text of a statement the world ran
outside the guard gets the cached, already-approved one. Every statement the world runs
on its connection therefore carries ``_guard.INTERNAL`` (``_sql.internal``).
"""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from onrecord import envkit
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool
from onrecord.envkit._guard import INTERNAL

SCHEMA = """
CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL);
"""
TOOL_TAG = "/* tool */"


def _populate(conn: sqlite3.Connection, _: object) -> None:
    conn.executemany("INSERT INTO items VALUES (?, ?)", [("a", 1), ("b", 2)])
    conn.execute("INSERT INTO notes (body) VALUES ('first')")


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("internal-statements", SCHEMA, _populate)


@tool(writes=True)
def restock(ctx: ToolContext, sku: str = "a") -> None:
    ctx.execute(f"UPDATE items SET stock = stock + 1 WHERE sku = ? {TOOL_TAG}", (sku,))


@tool(writes=True)
def note(ctx: ToolContext) -> None:
    ctx.execute(f"INSERT INTO notes (body) VALUES ('more') {TOOL_TAG}")


@tool
def look(ctx: ToolContext) -> Any:
    return ctx.one(f"SELECT count(*) AS n FROM items {TOOL_TAG}")


@tool(writes=True)
def fails(ctx: ToolContext) -> None:
    ctx.execute(f"UPDATE items SET stock = 0 {TOOL_TAG}")
    raise RuntimeError("after its write")


def test_a_tool_cannot_reuse_the_undos_delete_to_wipe_the_history(
    snap: Snapshot, tmp_path: Path
) -> None:
    # Before: the undo's ``DELETE FROM "_onrecord_audit_0"`` (run at reset, outside the
    # guard) was cached under that text, so a tool typing it deleted the history of its
    # own write: the call succeeded with an empty audit history and diff.
    @tool(writes=True)
    def wipe(ctx: ToolContext) -> None:
        ctx.execute("UPDATE items SET stock = 50 WHERE sku = 'b'")
        ctx.connection.execute('DELETE FROM "_onrecord_audit_0"')

    with ToolWorld(snap, [restock, wipe], path=tmp_path / "world.db") as world:
        world.call("restock")
        world.reset()  # the undo deletes the shadow rows of items
        event = world.call("wipe")
        assert event["error"]["type"] == "forbidden_statement"
        assert world.diff() == {}
        assert world.conn.execute("SELECT stock FROM items WHERE sku = 'b'").fetchone() == (2,)
        assert world.call("restock")["status"] == "ok"
        assert [(e["step"], e["key"]) for e in world.audit_history()] == [(2, "a")]


def test_every_statement_the_world_runs_on_its_connection_is_marked(
    snap: Snapshot, tmp_path: Path
) -> None:
    traced: list[str] = []
    world = ToolWorld(snap, [restock, note, look, fails], path=tmp_path / "world.db")
    world.conn.set_trace_callback(traced.append)  # the owner's: kept across calls
    try:
        for index in range(2):  # the second reset undoes rows; a forced one copies pages
            for name in ("restock", "note", "look", "fails"):
                world.call(name)
            world.audit_history()
            world.diff()
            world.state_digest()
            save_episode(world, tmp_path / f"episode{index}")
            world.reset()
        world.conn.execute(f"ALTER TABLE notes ADD COLUMN extra {TOOL_TAG}")
        world.reset()  # a schema change: the reset copies pages
    finally:
        world.close()
    # "-- TRIGGER ..." and "-- PRAGMA ..." are programs SQLite runs inside a statement.
    own = [sql for sql in traced if TOOL_TAG not in sql and not sql.startswith("-- ")]
    assert len(own) > 50
    assert [sql for sql in own if not sql.endswith(INTERNAL)] == []


# Statements that are not onrecord's own text, or whose text was marked where it was built.
_NOT_MARKED_HERE = {
    ("_text.py", '"EXPLAIN " + sql'),  # the tool's own statement, explained in its call
    ("snapshot.py", "schema"),  # the owner's schema script, on the snapshot's connection
    ("_connection.py", "sql_script"),  # the caller's script (refused inside a tool)
    ("_connection.py", "sql"),  # the caller's statement, on a world cursor
    ("_sql_reads.py", "sql"),  # the world cursor running the caller's statement
    ("_undo.py", "item.delete"),  # built by internal() in _prepare
    ("_undo.py", "item.fetch"),
    ("_undo.py", "item.insert"),
    ("audit.py", "sql"),  # built by internal() a line above
    ("state.py", "sql"),  # _ordered_select returns internal()
    ("state.py", "_ordered_select(schema, table)"),
}


def test_the_kits_sources_run_only_marked_statements() -> None:
    # Catches a statement a new code path adds, where the trace above would not run.
    root = Path(envkit.__file__).parent
    unmarked = []
    for path in sorted(root.glob("*.py")):
        if path.name == "context.py":  # ToolContext runs the tool's own SQL
            continue
        source = path.read_text()
        tree = ast.parse(source)
        marked = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign) and _is_internal(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
                and node.args
            ):
                continue
            sql = node.args[0]
            text = ast.get_source_segment(source, sql)
            if _is_internal(sql) or (isinstance(sql, ast.Name) and sql.id in marked):
                continue
            if (path.name, text) not in _NOT_MARKED_HERE:
                unmarked.append(f"{path.name}:{node.lineno}: {text}")
    assert unmarked == []


def _is_internal(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "internal"
