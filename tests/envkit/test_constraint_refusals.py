"""A write the database refuses (a trigger's ``RAISE``, a ``CHECK`` constraint) is a
``tool_error`` with SQLite's message, as docs/envkit.md (Tools) says, and a tool that
means it as the agent's rule violation says so with ``ctx.reject``: both undo the call
whatever the trigger's conflict mode, and the world takes the next call as usual."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, replay, save_episode, tool

SCHEMA = """
CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL,
                    shelf INTEGER NOT NULL CHECK (shelf BETWEEN 1 AND 9));
CREATE TABLE picks (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL);
CREATE TRIGGER no_negative BEFORE UPDATE OF stock ON items WHEN NEW.stock < 0
BEGIN SELECT RAISE({mode}, 'stock cannot go negative'); END;
"""


def _snapshot(mode: str) -> Snapshot:
    return Snapshot.build(
        f"refusals-{mode.lower()}",
        SCHEMA.format(mode=mode),
        lambda conn, _: conn.execute("INSERT INTO items VALUES ('bolt', 3, 1)"),
    )


_OVERDRAW = """    ctx.execute("UPDATE items SET stock = stock - ? WHERE sku = 'bolt'", (qty,))"""
_MOVE = """    ctx.execute("UPDATE items SET shelf = ? WHERE sku = 'bolt'", (shelf,))"""


def _line_of(text: str) -> int:
    """The number of the line of this file that is ``text``."""
    with open(__file__, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


@tool(writes=True)
def pick(ctx: ToolContext, qty: int) -> None:
    """Pick without a check of its own: the schema's trigger refuses an overdraw."""
    ctx.execute("INSERT INTO picks (sku, qty) VALUES ('bolt', ?)", (qty,))
    ctx.execute("UPDATE items SET stock = stock - ? WHERE sku = 'bolt'", (qty,))


@tool(writes=True)
def pick_or_reject(ctx: ToolContext, qty: int) -> None:
    """Pick; the schema's refusal is the agent's rule violation."""
    ctx.execute("INSERT INTO picks (sku, qty) VALUES ('bolt', ?)", (qty,))
    try:
        ctx.execute("UPDATE items SET stock = stock - ? WHERE sku = 'bolt'", (qty,))
    except sqlite3.IntegrityError as exc:
        ctx.reject(str(exc))


@tool(writes=True)
def move(ctx: ToolContext, shelf: int) -> None:
    """Move the item to a shelf (the CHECK constraint bounds it)."""
    ctx.execute("UPDATE items SET shelf = ? WHERE sku = 'bolt'", (shelf,))


@pytest.mark.parametrize("mode", ["ABORT", "FAIL", "ROLLBACK"])
def test_a_trigger_refusal_is_a_tool_error_or_a_rejection_the_tool_declares(mode: str) -> None:
    snap = _snapshot(mode)
    with ToolWorld(snap, [pick, pick_or_reject, move]) as world:
        refused = world.call("pick", {"qty": 5})
        assert refused["status"] == "error"
        assert refused["error"] == {
            "type": "tool_error",
            # Named with the tool's statement that SQLite refused (round 50).
            "message": "pick: IntegrityError: stock cannot go negative"
            f" (at {__file__}:{_line_of(_OVERDRAW)} in pick)",
        }
        declared = world.call("pick_or_reject", {"qty": 5})
        assert declared["status"] == "rejected"
        assert declared["error"] == {
            "type": "rule_violation",
            "message": "stock cannot go negative",
        }
        for event in (refused, declared):  # the insert before the refusal is undone
            assert event["state_version"] == 0
        assert world.audit_history() == []
        assert world.diff() == {}
        assert not world.conn.in_transaction
        assert world.state_digest() == snap.digest
        assert world.call("pick", {"qty": 2})["status"] == "ok"
        assert world.table_rows("items")[0]["stock"] == 1
        assert [e["step"] for e in world.audit_history()] == [3, 3]


def test_a_check_constraint_is_a_tool_error_and_replays_alike(tmp_path: Path) -> None:
    snap = _snapshot("ABORT")
    with ToolWorld(snap, [pick, pick_or_reject, move]) as world:
        world.reset(seed=4)
        event = world.call("move", {"shelf": 12})
        assert event["status"] == "error"
        assert event["error"]["type"] == "tool_error"
        assert event["error"]["message"] == (
            "move: IntegrityError: CHECK constraint failed: shelf BETWEEN 1 AND 9"
            f" (at {__file__}:{_line_of(_MOVE)} in move)"
        )
        assert (event["state_version"], world.audit_history()) == (0, [])
        assert world.conn.execute("SELECT sku, stock, shelf FROM items").fetchall() == [
            ("bolt", 3, 1)
        ]
        assert world.call("move", {"shelf": 2})["status"] == "ok"
        assert world.conn.execute("SELECT shelf FROM items").fetchall() == [(2,)]
        episode = save_episode(world, tmp_path / "episode")
        assert replay(world, episode).matches  # the status recorded is the status replayed
