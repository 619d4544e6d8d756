"""A tool copying the world's database (``serialize``, ``backup`` on ``ctx.connection``).

A copy of ``main`` holds every hidden table's rows, read past the authorizer: it is
noted as a read of each (``note_copy``). A backup cannot run at all inside a write call:
the call's savepoint holds ``main``'s write transaction (its first statement sets the
context row's step), and SQLite answers every ``sqlite3_backup_step`` from a source in a
write transaction with ``SQLITE_BUSY``, which ``sqlite3`` retries, sleeping, for ever. The
call (and the run) hung; it is refused at once instead (``refuse_stuck_backup``).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from onrecord.envkit._guard import StatementGuard

__all__ = ["note_copy", "refuse_stuck_backup"]


def note_copy(guard: StatementGuard | None, name: Any) -> None:
    """Note a copy of schema ``name`` as a read of every hidden table when it is main."""
    if guard is not None and str(name).lower() == "main":
        guard.note_hidden(sorted(guard.hidden))


def refuse_stuck_backup(conn: sqlite3.Connection, guard: StatementGuard | None, name: Any) -> None:
    """Raise ``OperationalError`` for a backup of ``main`` a write call's tool starts,
    which SQLite would answer with ``SQLITE_BUSY`` at every retry (see the module doc)."""
    if (
        guard is not None
        and guard.active
        and guard.step is not None
        and conn.in_transaction
        and str(name).lower() == "main"
    ):
        raise sqlite3.OperationalError(
            "backup: the call's own transaction is writing the world's database, and SQLite "
            "copies no database its connection is writing (sqlite3 would retry for ever); "
            "copy it from a read-only tool (writes=False), or read the rows you need with SQL"
        )
