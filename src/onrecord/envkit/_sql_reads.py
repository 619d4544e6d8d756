"""Reads of a hidden table made by a tool's own SQL, not through ``ctx.reveal``.

The guard's authorizer (``_guard``) is asked, as each statement a tool runs is prepared,
which tables and columns it reads; a read of a hidden table of ``main`` is noted for the
step (``StatementGuard.sql_reads``). Which rows the statement then read SQLite does not
say, so the step's event logs ``{"table": name, "rows": "unknown"}``: an entry with no
``key``, which no reveal ever logs (a reveal's key may itself be ``null``, a NULL key),
so a check can never take it for a read of one row.

A statement runs from ``sqlite3``'s cache without being prepared again, so without the
authorizer: once a call read a hidden table by SQL, the next call expires every prepared
statement first (the guard's ``stale``), and a cached statement that reads a hidden
table is prepared, and noted, again in whichever later step runs it. (A text the world's
owner ran on ``world.conn`` between calls, which a tool later types, is not: see
docs/envkit.md.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from onrecord.envkit._sql import internal

__all__ = ["UNKNOWN_ROWS", "event_reads", "unknown_rows"]

UNKNOWN_ROWS = "unknown"
"""The ``rows`` of a read logged for a tool's own SQL: which rows it read is unknown."""
_TEMP_NAMED = internal(
    "SELECT 1 FROM temp.sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE"
)


def event_reads(
    conn: sqlite3.Connection, reveals: list[dict[str, Any]], tables: dict[str, bool]
) -> list[dict[str, Any]]:
    """An event's ``reads``: the reveals in call order, then one table-level read per
    hidden table the call's own SQL read and revealed nothing of, by name (a stable
    order, whatever order the statements were prepared in). ``tables`` maps each to
    whether a read was surely of ``main``'s table; one read only for no column, by an
    unqualified name, is of a TEMP table if one of that name exists now (SQLite names
    such a read as written)."""
    if not tables:
        return reveals  # the common case: the very list ctx.reveal appended to
    # A call that revealed rows of a table declared what it showed of it: its SQL over
    # that table (the query that found the rows to reveal, an UPDATE's WHERE) is the
    # work behind the reveals, and logging it as well would turn every "was row K read
    # first" into "unknown" for the usual find-then-reveal tool.
    revealed = {read["table"] for read in reveals}
    names = sorted(
        table
        for table, surely in tables.items()
        if table not in revealed and (surely or not _shadowed(conn, table))
    )
    return reveals + [{"table": table, "rows": UNKNOWN_ROWS} for table in names]


def _shadowed(conn: sqlite3.Connection, table: str) -> bool:
    """Whether a TEMP table or view named ``table`` exists (SQLite looks there first)."""
    found = conn.execute(_TEMP_NAMED, (table,)).fetchone()
    return found is not None


def unknown_rows(read: Mapping[str, Any]) -> bool:
    """Whether a logged read is a table-level read by SQL (rows unknown), not a reveal."""
    return "key" not in read and read.get("rows") == UNKNOWN_ROWS
