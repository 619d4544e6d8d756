"""An owner trigger that writes the table it fires on (the common ``updated_at`` one)
recurses in the world, which runs with ``recursive_triggers`` on: the failed call says
why and how to declare the trigger, and the documented form works."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = """
CREATE TABLE claim (id INTEGER PRIMARY KEY, status TEXT NOT NULL, updated_at INTEGER);
INSERT INTO claim VALUES (1, 'open', 0);
"""
SELF_UPDATING = """
CREATE TRIGGER touch AFTER UPDATE ON claim
BEGIN UPDATE claim SET updated_at = updated_at + 1 WHERE id = NEW.id; END;
"""
DECLARED = """
CREATE TRIGGER touch AFTER UPDATE OF status ON claim
BEGIN UPDATE claim SET updated_at = updated_at + 1 WHERE id = NEW.id; END;
"""


@tool(writes=True, example={"status": "paid"})
def set_status(ctx: ToolContext, status: str) -> None:
    """Set the claim's status."""
    ctx.execute("UPDATE claim SET status = ? WHERE id = 1", (status,))


def _world(tmp_path: Path, trigger: str) -> ToolWorld:
    path = tmp_path / "claims.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA + trigger)
        conn.execute("UPDATE claim SET status = 'open'")  # fine in the application
    return ToolWorld(Snapshot.from_file(path), [set_status], path=tmp_path / "world.db")


@pytest.mark.parametrize("trigger", [SELF_UPDATING, DECLARED], ids=["self-updating", "declared"])
def test_a_self_updating_trigger_says_how_to_declare_it(tmp_path: Path, trigger: str) -> None:
    with _world(tmp_path, trigger) as world:
        outcome = world.call("set_status", {"status": "paid"})
        if trigger is DECLARED:
            assert outcome["status"] == "ok"
            assert world.conn.execute("SELECT status, updated_at FROM claim").fetchone() == (
                "paid",
                2,
            )
            return
        assert outcome["status"] == "error"
        text = outcome["error"]["message"]
        assert "too many levels of trigger recursion" in text
        assert "PRAGMA recursive_triggers = ON" in text
        assert "AFTER UPDATE OF the columns it reads" in text
        assert world.conn.execute("SELECT status, updated_at FROM claim").fetchone() == (
            "open",
            1,
        )
