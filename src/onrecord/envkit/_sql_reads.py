"""Reads of a hidden table made by a tool's own SQL, not through ``ctx.reveal``.

The guard's authorizer (``_guard``) is asked, as each statement a tool runs is prepared,
which tables and columns it reads; a read of a hidden table of ``main`` is noted for the
step (``StatementGuard.sql_reads``). Which rows the statement then read SQLite does not
say, so the step's event logs ``{"table": name, "rows": "unknown"}``: an entry with no
``key``, which no reveal ever logs (a reveal's key may itself be ``null``, a NULL key),
so a check can never take it for a read of one row.

A statement runs from ``sqlite3``'s cache without being prepared again, so without the
authorizer. The world's cursors (``TrackedCursor``: ``connection.execute``,
``executemany`` and ``cursor()`` all make one) tell the guard the text they run; a text
whose preparation read a hidden table is remembered (``read_texts``) and noted at every
step that runs it. Expiring every prepared statement instead, as a first version did,
cost the remittance runs a third of their throughput (each statement and its audit
triggers prepared again after every notes lookup). A statement prepared past those
cursors (``sqlite3.Cursor(connection)``, the base class's ``execute``) still has every
statement expired before the next call, and so is noted when next prepared. A TEMP
object created or dropped has SQLite prepare every statement again, so ``read_texts``
is forgotten once the TEMP schema's version moved (``_check_temp``): a view redefined
over another table would otherwise be noted as reading the old one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from functools import cache
from typing import TYPE_CHECKING, Any

from onrecord.envkit._sql import INTERNAL, internal

if TYPE_CHECKING:
    from onrecord.envkit._guard import StatementGuard

__all__ = [
    "UNKNOWN_ROWS",
    "TrackedCursor",
    "event_reads",
    "quiet",
    "temp_changing",
    "temp_version",
    "tracked",
    "unknown_rows",
]

UNKNOWN_ROWS = "unknown"
"""The ``rows`` of a read logged for a tool's own SQL: which rows it read is unknown."""
_TEMP_NAMING = frozenset(
    {
        sqlite3.SQLITE_CREATE_TEMP_TABLE,
        sqlite3.SQLITE_CREATE_TEMP_VIEW,
        sqlite3.SQLITE_DROP_TEMP_TABLE,
        sqlite3.SQLITE_DROP_TEMP_VIEW,
    }
)
"""TEMP changes whose first argument names a table or view unqualified SQL may read."""
_TEMP_VERSION = internal("PRAGMA temp.schema_version")
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
    unqualified name, is of a TEMP table if one of that name exists now and none came
    or went since (``temp_changing``; SQLite names such a read as written)."""
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


def temp_changing(guard: StatementGuard, action: int, name: str | None) -> None:
    """A TEMP object is about to be created or dropped (the authorizer asks as each such
    statement is about to run). A bare read of a hidden table this call noted before a
    TEMP table or view of its name came or went may have been of ``main``'s table, so it
    is taken as one, with no SQL run: ``event_reads`` looks at the TEMP schema at the
    end of the call only for reads that all met the TEMP tables the end has. (A read of
    a TEMP ``notes`` then dropped or created again in the call is logged too: rare, and
    on the safe side.)"""
    guard.temp_dirty = True  # checked by version: the statement may still fail
    table = guard.hidden_named(name or "") if action in _TEMP_NAMING else None
    if table is not None and guard.active and guard.sql_reads.get(table) is False:
        guard.sql_reads[table] = True


def _shadowed(conn: sqlite3.Connection, table: str) -> bool:
    """Whether a TEMP table or view named ``table`` exists (SQLite looks there first)."""
    found = conn.execute(_TEMP_NAMED, (table,)).fetchone()
    return found is not None


def unknown_rows(read: Mapping[str, Any]) -> bool:
    """Whether a logged read is a table-level read by SQL (rows unknown), not a reveal."""
    return "key" not in read and read.get("rows") == UNKNOWN_ROWS


class TrackedCursor(sqlite3.Cursor):
    """A cursor of the world's connection: the guard knows the text of the statement it
    runs, to note a cached statement's hidden reads each time it runs (module doc)."""

    def execute(self, sql: str, parameters: Any = (), /) -> TrackedCursor:
        guard, previous = _running(self, sql)
        try:
            return super().execute(sql, parameters)
        finally:
            if guard is not None:
                guard.running = previous

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> TrackedCursor:
        guard, previous = _running(self, sql)
        try:
            return super().executemany(sql, parameters)
        finally:
            if guard is not None:
                guard.running = previous


def _running(
    cursor: sqlite3.Cursor, sql: Any
) -> tuple[StatementGuard | None, tuple[int, str] | None]:
    """Tell the guard that ``sql`` runs now on this thread; in a tool's call, note the
    hidden reads its text is known for. Returns what to restore after."""
    guard: StatementGuard | None = getattr(cursor.connection, "guard", None)
    if guard is None or type(sql) is not str:
        return None, None
    if guard.temp_dirty:
        _check_temp(cursor.connection, guard)
    previous, ident = guard.running, threading.get_ident()
    guard.running = (ident, sql)
    reads = guard.read_texts.get(sql) if guard.active else None
    if reads and guard.revealing != ident and INTERNAL not in sql:
        for table, main in reads.items():
            guard.sql_reads[table] = main or guard.sql_reads.get(table, False)
    return guard, previous


def _check_temp(conn: sqlite3.Connection, guard: StatementGuard) -> None:
    """After a TEMP object was created or dropped, forget what texts were known to read
    if the TEMP schema did change: SQLite then prepares every statement again at its
    next run, under the guard, so a view redefined over another table is noted as it
    now reads. (A failed ``CREATE TEMP TABLE IF NOT EXISTS`` changed nothing: the
    cached statements still read what ``read_texts`` says.)"""
    guard.temp_dirty = False
    if guard.temp_version is None:  # before the first call: taken as it begins
        return
    version = temp_version(conn)
    if version != guard.temp_version:
        guard.read_texts.clear()
        guard.temp_version = version


def temp_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA temp.schema_version``, whatever row factory a tool or the owner set."""
    cursor = conn.cursor()
    cursor.row_factory = None
    with quiet(conn):
        version: int = cursor.execute(_TEMP_VERSION).fetchone()[0]
    return version


def quiet(conn: sqlite3.Connection) -> AbstractContextManager[None]:
    """A block where onrecord's own statement runs with no trace callback or progress
    handler of the running tool's (``WorldConnection.quiet``): SQL the tool ran from one
    would be taken for onrecord's own (a reveal's reads, ``_ours``) and go unlogged."""
    method = getattr(conn, "quiet", None)
    return nullcontext() if method is None else method()


@cache
def tracked(factory: type[sqlite3.Cursor]) -> type[sqlite3.Cursor]:
    """``factory`` (a tool's cursor class) made a ``TrackedCursor`` too."""
    if issubclass(factory, TrackedCursor) or factory is sqlite3.Cursor:
        return TrackedCursor if factory is sqlite3.Cursor else factory
    return type(f"Tracked{factory.__name__}", (TrackedCursor, factory), {})
