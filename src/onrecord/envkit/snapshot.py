"""Start snapshots: a named, content-addressed start state held in memory.

A snapshot is built once (from a SQLite file, or from a schema plus a seeded data
generator), gets the audit triggers installed, and then stays read-only in an
in-memory database. Every reset copies it into the world's open connection with the
SQLite backup API, so readers of the world's file always see either the old or the new
state, never a mix (no file copies under an open reader, no stale ``-wal``).
"""

from __future__ import annotations

import inspect
import os
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onrecord._exceptions import describe
from onrecord.envkit._sql import INTERNAL_PREFIX, Table, internal, quote, readonly_uri, user_tables
from onrecord.envkit.audit import CTX, audit_tables, install_audit
from onrecord.envkit.state import state_digest
from onrecord.errors import InputError

__all__ = [
    "Populate",
    "Snapshot",
    "SnapshotError",
    "existing_database",
    "new_database",
    "path_argument",
    "readonly_uri",
]

Populate = Callable[[sqlite3.Connection, random.Random], object]
"""``populate(conn, rng)`` inserts seed rows; ``rng`` is seeded, so data is reproducible.
What it returns is ignored (``lambda conn, rng: conn.executemany(...)`` returns a cursor)."""


class SnapshotError(InputError):
    """A snapshot cannot be built from what was given."""


class Snapshot:
    """A named start state; its identity is :attr:`digest`, the content digest of its
    user tables (see :func:`~onrecord.envkit.state_digest`)."""

    def __init__(self, name: str, conn: sqlite3.Connection) -> None:
        """Use :meth:`from_file` or :meth:`build`."""
        if not isinstance(name, str) or not name.strip():
            raise SnapshotError(f"Snapshot name must be a non-empty string, got {name!r}")
        self.name = name
        self._conn = conn
        self.source: Path | None = None
        """The file :meth:`from_file` loaded, which is never written to, else ``None``."""
        if _has_audit(conn) and _audit_current(conn):
            _clear_history(conn)  # a saved snapshot or episode database: kept as it is
        else:
            # One migrated since it was saved (a table or a column added) has triggers
            # that would not audit what is new, so the diff would miss changes there.
            _drop_audit(conn)
            install_audit(conn)
        self.digest = state_digest(conn)
        self.tables: tuple[Table, ...] = tuple(table for table, _ in audit_tables(conn))
        conn.execute(internal("PRAGMA query_only = ON"))  # the pristine copy never changes

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], name: str | None = None) -> Snapshot:
        """Load a SQLite file (opened read-only; the file itself is never changed: saving
        the snapshot, or a world built from it, to that path is refused)."""
        file = existing_database(path, "snapshot file")
        conn = _memory_connection()
        try:
            source = sqlite3.connect(readonly_uri(file), uri=True)
            try:
                source.backup(conn)
            finally:
                source.close()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise SnapshotError(f"{str(file)!r} is not a readable SQLite database: {exc}") from exc
        try:
            snapshot = cls(name or file.stem, conn)
        except BaseException:  # refused (a NULL key, a bad name): nothing left open
            conn.close()
            raise
        snapshot.source = file.resolve()
        return snapshot

    @classmethod
    def build(
        cls, name: str, schema: str, populate: Populate | None = None, *, seed: int = 0
    ) -> Snapshot:
        """Run ``schema`` (SQL script), then ``populate(conn, random.Random(seed))``."""
        _check_build(name, schema, populate)
        conn = _memory_connection()
        try:  # a build that fails leaves nothing: the in-memory database is closed
            _run_schema(name, conn, schema)
            if populate is not None:
                _populate(name, conn, populate, seed)
            return cls(name, conn)
        except BaseException:
            conn.close()
            raise

    @property
    def connection(self) -> sqlite3.Connection:
        """The pristine in-memory database (read-only; used as the backup source)."""
        return self._conn

    def restore_into(self, conn: sqlite3.Connection) -> None:
        """Replace every page of ``conn``'s main database with the snapshot."""
        self._conn.backup(conn)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the snapshot (with its audit triggers) to a SQLite file. An existing
        file is refused unless ``overwrite=True``; the file it was loaded from, always."""
        target = new_database(path, "Snapshot.save path", overwrite=overwrite, source=self.source)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            out = sqlite3.connect(target)
            try:
                self._conn.backup(out)
            finally:
                out.close()
        except (OSError, sqlite3.Error) as exc:
            raise SnapshotError(
                f"Snapshot.save path {str(target)!r} could not be written: {exc}; pass the "
                "path of a file in a writable directory"
            ) from exc
        return target

    def identity(self) -> dict[str, str]:
        """``{"name", "digest"}``, as recorded in every episode started from it."""
        return {"name": self.name, "digest": self.digest}

    def __repr__(self) -> str:
        return f"Snapshot({self.name!r}, digest={self.digest[:12]}…)"


def _check_build(name: str, schema: object, populate: object) -> None:
    """Refuse arguments ``executescript`` and the call of ``populate`` would fail on with
    a bare TypeError that names neither the snapshot nor the argument."""
    if not isinstance(schema, str):
        raise SnapshotError(
            f"snapshot {name!r}: schema must be an SQL script (a string of CREATE "
            f"statements), got {type(schema).__name__} {schema!r:.80}"
        )
    if populate is not None and not callable(populate):
        raise SnapshotError(
            f"snapshot {name!r}: populate must be a function populate(conn, rng) that "
            f"inserts the rows, got {type(populate).__name__} {populate!r:.80}; put SQL "
            "text in the schema script instead"
        )


def _run_schema(name: str, conn: sqlite3.Connection, schema: str) -> None:
    try:
        conn.executescript(schema)
    except sqlite3.Error as exc:
        raise SnapshotError(f"snapshot {name!r}: the schema script failed: {exc}") from exc
    if conn.in_transaction:  # the populate's BEGIN (or the snapshot's) would fail on it
        raise SnapshotError(
            f"snapshot {name!r}: the schema script left a transaction open (a BEGIN "
            "without its COMMIT); end it with COMMIT or remove the BEGIN"
        )


def _populate(name: str, conn: sqlite3.Connection, populate: Populate, seed: int) -> None:
    """Run ``populate`` in one transaction (one it commits midway is continued in
    autocommit: the rows are the same, and a failure keeps none of them either way)."""
    conn.execute(internal("BEGIN"))
    run: Callable[..., object] = populate  # what it returns is checked below
    try:
        result = run(conn, random.Random(seed))
        open_now = conn.in_transaction
    except sqlite3.Error as exc:
        if _closed(conn):
            raise SnapshotError(
                f"snapshot {name!r}: populate closed the connection; leave it open "
                "(the snapshot keeps it)"
            ) from exc
        # Its SQL, named as the schema script's is.
        raise SnapshotError(
            f"snapshot {name!r}: populate failed: {describe(exc)}; "
            "fix the SQL your populate function runs"
        ) from exc
    if inspect.isgenerator(result) or inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # no "never awaited" warning on top of this error
        raise SnapshotError(
            f"snapshot {name!r}: populate returned a {type(result).__name__} without running "
            "its body, so no row was inserted; make it a plain function populate(conn, rng)"
        )
    if open_now:  # populate may have committed itself (conn.commit())
        conn.execute(internal("COMMIT"))


def _closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.total_changes  # noqa: B018 (raises on a closed connection)
    except sqlite3.ProgrammingError:
        return True
    return False


def _memory_connection() -> sqlite3.Connection:
    # uri=True lets the pristine connection ATTACH the world file read-only for scans.
    return sqlite3.connect("file::memory:", uri=True, isolation_level=None, check_same_thread=False)


def _has_audit(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute(internal("SELECT 1 FROM sqlite_schema WHERE name = ?"), (CTX,)).fetchone()
        is not None
    )


def _clear_history(conn: sqlite3.Connection) -> None:
    for _, shadow in audit_tables(conn):
        conn.execute(internal(f"DELETE FROM {quote(shadow)}"))
    conn.execute(internal(f"UPDATE {CTX} SET step = 0, seq = 0, version = 0"))


def _audit_current(conn: sqlite3.Connection) -> bool:
    """Whether the installed audit covers exactly the user tables as they are now."""
    try:
        registered = audit_tables(conn)
    except sqlite3.Error:  # no registry, or not ours
        return False
    layouts = {table.name: (table.columns, table.key) for table in user_tables(conn)}
    if {table.name: (table.columns, table.key) for table, _ in registered} != layouts:
        return False
    triggers = {row[0] for row in conn.execute(internal("SELECT name FROM sqlite_schema"))}
    return all(f"{shadow}_{op}" in triggers for _, shadow in registered for op in "IDU")


def _drop_audit(conn: sqlite3.Connection) -> None:
    """Remove onrecord's audit (context row, registry, shadow tables, their triggers)."""
    prefix = f"{INTERNAL_PREFIX}audit_"
    objects = conn.execute(
        internal(
            "SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'trigger') "
            "AND substr(name, 1, ?) = ? ORDER BY type DESC"
        ),  # triggers first
        (len(prefix), prefix),
    ).fetchall()
    conn.execute(internal("BEGIN"))
    for kind, name in objects:
        conn.execute(internal(f"DROP {kind.upper()} IF EXISTS {quote(name)}"))
    # Only onrecord's own (exact name): DROP matches names ignoring case, and would drop a
    # user's table "_ONRECORD_CTX" with its rows (the install refuses that name instead).
    if _has_audit(conn):
        conn.execute(internal(f"DROP TABLE {CTX}"))
    conn.execute(internal("COMMIT"))


def path_argument(value: Any, where: str, error: type[InputError] = InputError) -> Path:
    """``value`` as a path, refusing what is not one (``None``, a number) by name, where
    ``Path(value)`` would raise a bare TypeError."""
    if isinstance(value, str | os.PathLike):
        try:
            return Path(value)
        except TypeError:  # an os.PathLike of bytes
            pass
    raise error(
        f"{where} must be a path (a str or pathlib.Path), got {type(value).__name__} {value!r:.80}"
    )


def existing_database(value: Any, where: str) -> Path:
    """The path of a database file to read, refused (``SnapshotError`` naming ``where``)
    when it is not a path, is a directory or does not exist."""
    path = path_argument(value, where, SnapshotError)
    if path.is_dir():
        raise SnapshotError(
            f"{where} {str(path)!r} is a directory; pass the path of a SQLite database file in it"
        )
    if not path.is_file():
        raise SnapshotError(
            f"{where} {str(path)!r} does not exist; pass the path of a SQLite database"
        )
    return path


def new_database(value: Any, where: str, *, overwrite: Any, source: Path | None) -> Path:
    """The path of a database file to write, refused (``InputError`` naming ``where``) when
    it is a directory, the snapshot's source file (whatever ``overwrite`` says: loading
    promises never to change it), or an existing file and ``overwrite`` is not True. An
    empty file holds nothing to lose (a ``tempfile`` placeholder), so it is no refusal."""
    if type(overwrite) is not bool:
        raise InputError(f"{where}: overwrite must be True or False, got {overwrite!r:.80}")
    path = path_argument(value, where)
    if path.is_dir():
        raise InputError(f"{where} {str(path)!r} is a directory; pass the path of a file in it")
    if source is not None and _same_file(path, source):
        raise InputError(
            f"{where} {str(path)!r} is the file the snapshot was loaded from "
            "(Snapshot.from_file never changes it); pass another path"
        )
    empty = path.is_file() and path.stat().st_size == 0
    if not overwrite and path.exists() and not empty:
        raise InputError(
            f"{where} {str(path)!r} already exists and would be overwritten; pass "
            "overwrite=True to replace it, or a path that does not exist yet"
        )
    return path


def _same_file(path: Path, source: Path) -> bool:
    """Whether ``path`` names ``source``, through links and relative paths too."""
    try:
        return os.path.samefile(path, source)
    except OSError:  # one of them does not exist (any more)
        return path.resolve() == source
