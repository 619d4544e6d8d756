"""A snapshot whose rows its own CHECK constraints refuse (rows older than the CHECK, or
written with ``PRAGMA ignore_check_constraints``), as real business files hold: a reset
after an episode that touched such a row must put it back, not raise for ever."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

LEGACY = """
CREATE TABLE acct (id INTEGER PRIMARY KEY, bal INTEGER CHECK (bal >= 0), code TEXT NOT NULL);
CREATE TABLE hold (id INTEGER PRIMARY KEY, acct INTEGER REFERENCES acct (id) ON DELETE CASCADE);
PRAGMA ignore_check_constraints = ON;
INSERT INTO acct VALUES (1, -5, 'a'), (2, 10, 'b');
INSERT INTO hold VALUES (1, 1);
"""


@tool(writes=True, example={"statement": "UPDATE acct SET bal = 0 WHERE id = 1"})
def run(ctx: ToolContext, statement: str) -> None:
    """Run one statement."""
    ctx.execute(statement)


def _legacy_snapshot(tmp_path: Path) -> tuple[Snapshot, Path]:
    path = tmp_path / "legacy.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(LEGACY)
    return Snapshot.from_file(path), path


def _rows(path: Path) -> list[tuple[object, ...]]:
    """Ground truth independent of the kit: every row with its rowid, quoted by SQLite."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [
            *conn.execute("SELECT rowid, quote(bal), code FROM acct ORDER BY rowid"),
            *conn.execute("SELECT rowid, acct FROM hold ORDER BY rowid"),
        ]


@pytest.mark.parametrize("foreign_keys", [False, True])
@pytest.mark.parametrize(
    "statement",
    ["UPDATE acct SET bal = 0 WHERE id = 1", "DELETE FROM acct WHERE id = 1"],
)
def test_reset_puts_back_a_row_its_check_refuses(
    tmp_path: Path, foreign_keys: bool, statement: str
) -> None:
    # Was: the undo re-inserted the snapshot row, the CHECK refused it, and every reset
    # raised IntegrityError (the world could never start another episode).
    snap, source = _legacy_snapshot(tmp_path)
    with ToolWorld(snap, [run], path=tmp_path / "w.db", foreign_keys=foreign_keys) as world:
        for _ in range(2):
            assert world.call("run", {"statement": statement})["status"] == "ok"
            assert world.diff() == world.scan_diff() != {}
            world.reset()
            assert world.state_digest() == snap.digest
            assert world.diff() == {}
        world.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert _rows(tmp_path / "w.db") == _rows(source)
