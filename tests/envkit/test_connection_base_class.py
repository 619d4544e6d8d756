"""A tool calling ``sqlite3.Connection``'s methods on the world's connection directly
(``sqlite3.Connection.setlimit(ctx.connection, ...)``) bypasses the wrapper's overrides
(docs/envkit.md, "What lives on the connection"): what the call's end puts back is
compared or set again whatever way it was changed, and a collation so registered is
removed at reset. Real SQLite files throughout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

BASE = sqlite3.Connection


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    def populate(conn: sqlite3.Connection, _: object) -> None:
        conn.executemany("INSERT INTO items VALUES (?, ?)", [("a", 1), ("b", 2)])

    return Snapshot.build(
        "base-class", "CREATE TABLE items (sku TEXT PRIMARY KEY, n INT);", populate
    )


@tool(writes=True)
def bump(ctx: ToolContext) -> None:
    ctx.execute("UPDATE items SET n = n + 1 WHERE sku = 'a'")


@tool
def sorted_loosely(ctx: ToolContext) -> Any:
    try:
        return [r["sku"] for r in ctx.query("SELECT sku FROM items ORDER BY sku COLLATE loose")]
    except sqlite3.OperationalError as exc:
        return str(exc)


def _world(snap: Snapshot, path: Path, body: Callable[[sqlite3.Connection], None]) -> ToolWorld:
    @tool(name="misbehave")
    def misbehave(ctx: ToolContext) -> None:
        body(ctx.connection)

    world = ToolWorld(snap, [bump, sorted_loosely, misbehave], path=path)
    assert world.call("misbehave")["status"] == "ok"
    return world


def test_a_limit_set_through_the_base_class_lasts_for_the_call_only(
    snap: Snapshot, tmp_path: Path
) -> None:
    limits = {c: getattr(sqlite3, c) for c in ("SQLITE_LIMIT_LENGTH", "SQLITE_LIMIT_SQL_LENGTH")}
    with ToolWorld(snap, [], path=tmp_path / "fresh.db") as fresh:
        expected = {name: fresh.conn.getlimit(c) for name, c in limits.items()}

    def body(conn: sqlite3.Connection) -> None:
        for category in limits.values():
            BASE.setlimit(conn, category, 20)

    with _world(snap, tmp_path / "world.db", body) as world:
        assert {name: world.conn.getlimit(c) for name, c in limits.items()} == expected
        world.reset()
        assert world.call("bump")["status"] == "ok"
        assert world.state_digest()  # the harness's reads fit again


def test_callbacks_set_through_the_base_class_are_the_owners_again(
    snap: Snapshot, tmp_path: Path
) -> None:
    traced: list[str] = []
    progress: list[int] = []

    def body(conn: sqlite3.Connection) -> None:
        BASE.set_trace_callback(conn, traced.append)
        BASE.set_progress_handler(conn, lambda: progress.append(1), 1)

    with _world(snap, tmp_path / "world.db", body) as world:
        traced.clear(), progress.clear()
        world.reset()
        assert world.call("bump")["status"] == "ok"
        assert world.diff()
        assert (traced, progress) == ([], [])


def test_a_collation_registered_through_the_base_class_is_removed_at_reset(
    snap: Snapshot, tmp_path: Path
) -> None:
    def body(conn: sqlite3.Connection) -> None:
        BASE.create_collation(conn, "loose", lambda a, b: (a < b) - (a > b))

    with _world(snap, tmp_path / "world.db", body) as world:
        assert world.call("sorted_loosely")["result"] == ["b", "a"]  # its episode's
        world.reset()
        assert world.call("sorted_loosely")["result"] == "no such collation sequence: loose"
