"""Fast reset: put back only the rows an episode changed, as the audit history lists them.

A restore with the backup API rewrites every page and bumps the schema cookie, so every
connection to the file (the world's own, observers, the runner's check reader) re-parses
the whole schema, audit triggers included, on its next statement: ~1 ms on the
remittance schema, more than an episode's own queries. When the audit history provably
holds every change since the last full restore, undoing those rows gives the same state
(same rows and rowids, same ``sqlite_sequence``, empty history, the snapshot's context
row) without touching the schema.

"Provably" means, checked at every reset: the schema cookie is the one the last full
restore left (no table, index or trigger was created, dropped or altered) and so are
``user_version`` and ``application_id``, no other connection committed a write (one
without ``recursive_triggers`` deletes the rows an ``INSERT OR REPLACE`` displaces
without firing the audit's delete trigger), the history is gapless (its event numbers are
exactly ``1..seq``, so no audit row was deleted).
Foreign-key enforcement (``ToolWorld(..., foreign_keys=True)``) is switched off for the
undo alone: the cascades an episode's statements caused fired the audit's triggers and
are in its history like any change, but the undo's own deletes would cascade again (to
rows the history does not list) and its deletes and inserts, in no particular order,
could be refused half-way. The rows put back are the snapshot's, unchecked, as a page
copy puts them back.
A history or a snapshot row holding TEXT that is not UTF-8 (which Python cannot read
back, nor bind as TEXT), or a snapshot row its table's constraints refuse on re-insert (a
row older than a ``CHECK``), makes the undo give way to the full restore, which copies
bytes.
Checked once per world: every table is audited, the only triggers are the audit's, no
virtual tables, no ``sqlite_stat`` tables (ANALYZE writes them unaudited), an empty
history in the snapshot. Otherwise, or when more than ``UNDO_LIMIT`` row events were
recorded (copying every page is then cheaper), the world restores the snapshot in full.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from onrecord.envkit._sql import (
    INTERNAL_PREFIX,
    Table,
    internal,
    key_collations,
    key_equals,
    quote,
    rowid_alias,
)
from onrecord.envkit._text import undecodable
from onrecord.envkit.audit import CTX, audit_tables, read_audit

__all__ = ["UNDO_LIMIT", "RowUndo"]

UNDO_LIMIT = 512
"""Most audit events an undo handles; past it a page copy is as fast (measured)."""

# The schema cookie, the header fields a page copy restores but an undo would not, and
# the count of commits by other connections (``data_version``): one that does not set
# ``recursive_triggers`` deletes the rows an INSERT OR REPLACE displaces unaudited.
_SEQUENCE = internal("SELECT rowid, name, seq FROM sqlite_sequence ORDER BY rowid")
_HEADER = internal(
    "SELECT * FROM pragma_schema_version, pragma_user_version, pragma_application_id, "
    "pragma_data_version"
)


# Marked as onrecord's (``internal``): a tool's identical text must never find these
# cached statements, which the guard refuses to tools.
_KEYS_OFF = internal("PRAGMA foreign_keys = OFF")
_KEYS_ON = internal("PRAGMA foreign_keys = ON")
_SEQ = internal(f"SELECT seq FROM {CTX}")


@dataclass(frozen=True)
class _TableUndo:
    """Prepared statements that put one table's rows back by key."""

    table: Table
    shadow: str
    delete: str
    fetch: str
    insert: str


class RowUndo:
    """Undoes audited row changes of a world's connection (see the module docstring)."""

    def __init__(
        self, snapshot: sqlite3.Connection, conn: sqlite3.Connection, *, foreign_keys: bool
    ) -> None:
        """``snapshot`` is the pristine connection; ``conn`` was just fully restored;
        ``foreign_keys`` is whether the world enforces them (``ToolWorld``'s option)."""
        self._snapshot = snapshot
        self._foreign_keys = foreign_keys
        rowless = {row[1] for row in conn.execute(internal("PRAGMA main.table_list")) if row[4]}
        self._tables = [
            _prepare(
                table,
                shadow,
                table.name not in rowless and _declared_key(conn, table),
                key_collations(conn, "main", table),
            )
            for table, shadow in audit_tables(conn)
        ]
        self._ctx = snapshot.execute(internal(f"SELECT step, seq, version FROM {CTX}")).fetchone()
        self._sequence = _sequence_rows(snapshot)
        self.usable = all(item is not None for item in self._tables) and _undoable(
            snapshot, self._ctx
        )
        self._cookie: tuple[int, int, int, int] | None = None

    def restored(self, conn: sqlite3.Connection) -> None:
        """Remember the schema cookie (and header fields) a full restore left."""
        self._cookie = conn.execute(_HEADER).fetchone()

    def undo(self, conn: sqlite3.Connection) -> bool:
        """Put back every audited change; ``False`` (nothing done) when a full restore is
        needed instead."""
        if not self.usable or self._cookie is None:
            return False
        # The pragma is a no-op inside a transaction, so it is set around the undo's.
        # Setting it expires every prepared statement of the connection (each is prepared
        # again on its next use), so it is left alone when the history is empty.
        # Whether keys are enforced is the world's option, not what the connection says:
        # an undo interrupted (Ctrl-C) before it set the pragma back left them off, and
        # reading them off would have kept them off for every later episode.
        if not self._foreign_keys or (
            not conn.execute(_SEQ).fetchone()[0]
            and conn.execute(internal("PRAGMA foreign_keys")).fetchone()[0]
        ):
            return self._in_transaction(conn)
        conn.execute(_KEYS_OFF)
        try:
            return self._in_transaction(conn)
        finally:
            if conn.in_transaction:  # a failed COMMIT: the pragma must still come back
                conn.execute(internal("ROLLBACK"))
            conn.execute(_KEYS_ON)

    def _in_transaction(self, conn: sqlite3.Connection) -> bool:
        conn.execute(internal("BEGIN IMMEDIATE"))
        try:
            done = self._undo(conn)
        except BaseException as exc:
            conn.execute(internal("ROLLBACK"))
            # TEXT that is not UTF-8, or a snapshot row its own table now refuses (a row
            # older than a CHECK, written with ignore_check_constraints): the page copy
            # puts the snapshot's rows back as they are, where a re-insert cannot.
            if undecodable(exc) or isinstance(exc, sqlite3.IntegrityError):
                return False
            raise
        conn.execute(internal("COMMIT" if done else "ROLLBACK"))
        return done

    def _undo(self, conn: sqlite3.Connection) -> bool:
        if conn.execute(_HEADER).fetchone() != self._cookie:
            return False
        seq = conn.execute(_SEQ).fetchone()[0]
        if seq > UNDO_LIMIT:
            return False
        touched = self._touched(conn, seq)
        if touched is None:
            return False
        for item, keys in touched:
            self._put_back(conn, item, keys)
        for item, _ in touched:  # the undo's own writes were audited too
            conn.execute(internal(f"DELETE FROM {quote(item.shadow)}"))
        # Compared even when no row was touched: the owner may write sqlite_sequence on
        # the world's connection between calls (a tool may not, see _guard), unaudited,
        # and the next episode's AUTOINCREMENT ids would start elsewhere.
        if self._sequence is not None and conn.execute(_SEQUENCE).fetchall() != self._sequence:
            conn.execute(internal("DELETE FROM sqlite_sequence"))
            conn.executemany(
                internal("INSERT INTO sqlite_sequence (rowid, name, seq) VALUES (?, ?, ?)"),
                self._sequence,
            )
        conn.execute(internal(f"UPDATE {CTX} SET step = ?, seq = ?, version = ?"), self._ctx)
        return True

    def _touched(
        self, conn: sqlite3.Connection, seq: int
    ) -> list[tuple[_TableUndo, set[Any]]] | None:
        """Keys each table's history names; ``None`` when the history has gaps."""
        touched, events, highest = [], 0, 0
        items = {item.table.name: item for item in self._tables if item is not None}
        layout = [(item.table, item.shadow) for item in items.values()]
        for table, rows in read_audit(conn, layout=layout, strict=True):
            item = items[table.name]
            width, key_of = len(table.columns), table.key_of
            keys: set[Any] = set()
            for row in rows:
                if row[2] != "I":
                    keys.add(key_of(row[3 : 3 + width]))
                if row[2] != "D":
                    keys.add(key_of(row[3 + width :]))
            touched.append((item, keys))
            events += len(rows)
            highest = max(highest, max(row[0] for row in rows))
        return touched if events == highest == seq else None

    def _put_back(self, conn: sqlite3.Connection, item: _TableUndo, keys: set[Any]) -> None:
        params = [key if isinstance(key, tuple) else (key,) for key in keys]
        conn.executemany(item.delete, params)
        rows = [row for key in params for row in self._snapshot.execute(item.fetch, key)]
        conn.executemany(item.insert, rows)


def _declared_key(conn: sqlite3.Connection, table: Table) -> bool:
    """Whether the key is declared columns (not the rowid under one of its names)."""
    stored = {
        row[1].lower() for row in conn.execute(internal(f"PRAGMA table_info({quote(table.name)})"))
    }
    return any(column.lower() in stored for column in table.key)


def _prepare(
    table: Table, shadow: str, keeps_rowid: bool, collations: Sequence[str | None]
) -> _TableUndo | None:
    """The statements for ``table``, or ``None`` when its rowids cannot be restored.
    ``keeps_rowid``: the table has a rowid apart from its declared key."""
    # Keys match byte for byte, as the history (keyed in Python) tells them apart.
    where = " AND ".join(
        key_equals(column, "", f"?{index}", collation)
        for index, (column, collation) in enumerate(zip(table.key, collations, strict=True), 1)
    )
    columns: Sequence[str] = table.columns
    if keeps_rowid:
        # Restored rows keep their rowids, so scans in rowid order stay identical.
        alias = rowid_alias(columns)
        if alias is None:
            return None
        columns = (alias, *columns)
    names = ", ".join(map(quote, columns))
    marks = ", ".join("?" for _ in columns)
    return _TableUndo(
        table,
        shadow,
        internal(f"DELETE FROM {quote(table.name)} WHERE {where}"),
        internal(f"SELECT {names} FROM {quote(table.name)} WHERE {where}"),
        internal(f"INSERT INTO {quote(table.name)} ({names}) VALUES ({marks})"),
    )


def _undoable(snapshot: sqlite3.Connection, ctx: tuple[int, int, int]) -> bool:
    """Whether every change a tool can make is audited (see the module docstring)."""
    audited = {table.name for table, _ in audit_tables(snapshot)}
    for _, name, kind, *_ in snapshot.execute(internal("PRAGMA main.table_list")).fetchall():
        if kind == "view" or name.startswith(INTERNAL_PREFIX):
            continue
        if kind != "table" or name.startswith("sqlite_stat"):
            return False
        if name not in audited and name not in ("sqlite_schema", "sqlite_sequence"):
            return False
    triggers = snapshot.execute(internal("SELECT name FROM sqlite_schema WHERE type = 'trigger'"))
    if any(not name.startswith(INTERNAL_PREFIX) for (name,) in triggers):
        return False
    shadows = [shadow for _, shadow in audit_tables(snapshot)]
    history = any(
        snapshot.execute(internal(f"SELECT 1 FROM {quote(shadow)} LIMIT 1")).fetchone()
        for shadow in shadows
    )
    return ctx[1] == 0 and not history


def _sequence_rows(snapshot: sqlite3.Connection) -> list[tuple[Any, ...]] | None:
    exists = snapshot.execute(
        internal("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence'")
    ).fetchone()
    if exists is None:
        return None
    return snapshot.execute(_SEQUENCE).fetchall()
