"""What a tool function receives: parameterized SQL, seeded randomness, hidden reads."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from onrecord.envkit._guard import StatementGuard
from onrecord.envkit._outcome import safe_repr
from onrecord.envkit._portable import portable
from onrecord.envkit._sql import Table, internal, portable_value, quote, row_dict
from onrecord.envkit._sql_reads import event_reads, quiet
from onrecord.envkit._text import lossless, plain_rows, raw_text, reads_only, undecodable
from onrecord.errors import InputError, OnrecordError, PortabilityError

__all__ = ["ToolContext", "ToolRejected", "Tracer"]

Tracer = Callable[[str, Sequence[Any]], None]
"""``tracer(sql, params)`` sees every statement a tool runs through its context."""


class ToolRejected(OnrecordError):
    """Raised by a tool to refuse a call that breaks a domain rule; the call is rolled
    back and logged as rejected with this message."""


class ToolContext:
    """Handed to every tool call as its first argument."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        step: int,
        seed: int,
        hidden: dict[str, Table],
        tracer: Tracer | None,
    ) -> None:
        self.connection = conn
        """The world's connection; prefer :meth:`execute`, which the tracer sees."""
        self.step = step
        """The step number of this call (1 for the first call of an episode)."""
        self.reads: list[dict[str, Any]] = []
        """Hidden records revealed by this call: ``{"table", "key"}``."""
        self.sql_reads: dict[str, bool] = {}
        """Hidden tables this call's own SQL read, outside :meth:`reveal` (the world's
        guard notes them as statements are prepared: see ``_sql_reads``)."""
        self._guard = getattr(conn, "guard", None)
        if isinstance(self._guard, StatementGuard):
            self._guard.sql_reads = self.sql_reads  # this call's, from now on
        self._seed = seed
        self._hidden = hidden
        self._tracer = tracer
        self._rng: random.Random | None = None

    @property
    def rng(self) -> random.Random:
        """Randomness for this call, derived from the episode seed and the step, so a
        replay of the same step draws the same numbers."""
        if self._rng is None:
            self._rng = random.Random(f"{self._seed}:{self.step}")
        return self._rng

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run one statement with bound parameters (never format values into ``sql``)."""
        if self._tracer is not None:
            self._tracer(sql, params if isinstance(params, Sequence) else [params])
        return self.connection.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows of a query as dicts (column name → value).

        TEXT whose bytes are not valid UTF-8, which ``sqlite3`` refuses to read, comes
        back as :class:`~onrecord.envkit.RawText` (the statement is read again, only
        when it meets such text and only when it writes nothing: a statement that
        wrote, ``... RETURNING``, fails as before)."""
        try:
            return _rows(self.execute(sql, params))
        except sqlite3.OperationalError as exc:
            if not undecodable(exc) or not reads_only(self.connection, sql, params):
                raise
        with raw_text(self.connection):  # the tracer has seen this statement already
            return _rows(self.connection.execute(sql, params))

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> dict[str, Any] | None:
        """The first row of a query as a dict, or ``None``."""
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def reveal(self, table: str, key: Any) -> dict[str, Any] | None:
        """Read one hidden record by key; the read is logged with this call's event."""
        layout = self._hidden.get(table)
        if layout is None:
            # Still a ToolRejected (rule_violation): recorded episodes hold this status,
            # replay compares it, and a tool may catch it; the text says whose bug it is.
            raise ToolRejected(
                f"tool bug, not the agent's: ctx.reveal({safe_repr(table, 100)}, ...) "
                f"names a table that is not a hidden table of this world (hidden tables: "
                f"{sorted(self._hidden) or 'none'}); declare it with "
                f"ToolWorld(..., hidden=[{safe_repr(table, 100)}]), or read it with "
                "ctx.query / ctx.one"
            )
        values = list(key) if isinstance(key, list | tuple) else [key]
        if len(values) != len(layout.key):
            raise InputError(
                f"reveal({table!r}, {safe_repr(key, 100)}): the key of {table!r} is "
                f"{', '.join(layout.key)}; pass {len(layout.key)} value(s)"
                + (" as a list" if len(layout.key) > 1 else "")
            )
        where = " AND ".join(f"{quote(column)} = ?" for column in layout.key)
        # main.: a TEMP table or view a tool created under the hidden table's name
        # would otherwise be read instead, and logged as a read of the real row.
        sql = f"SELECT {layout.select_list()} FROM main.{quote(table)} WHERE {where}"
        bound = _bindable(values)  # logged as bound when no row is found
        read = (internal(sql), bound)
        if self._tracer is not None:
            self._tracer(sql, values)
        # A tool's row factory would forge the row, its callbacks run SQL as the reveal's.
        with plain_rows(self.connection), quiet(self.connection), self._revealing():
            # INTERNAL: a tool typing this text must not be served the statement prepared
            # here, whose read the guard left to this reveal to log.
            row = lossless(self.connection, lambda: _first(self.connection.execute(*read)))
        if row is None:  # nothing read: the key as asked for
            self.reads.append({"table": table, "key": _logged_key(bound)})
            return None
        # The key of the row read, as stored: SQLite matched the key sent under the
        # column's collation and affinity ('A' finds 'a' under COLLATE NOCASE, 1 finds
        # '1' in a TEXT key), and the audit keys rows as stored, byte for byte.
        stored = [row[position] for position in layout.key_positions]
        self.reads.append({"table": table, "key": _logged_key(stored)})
        return row_dict(layout, row)

    @contextmanager
    def _revealing(self) -> Iterator[None]:
        """The guard leaves the read of the block's statement to :meth:`reveal` to log."""
        guard = self._guard
        if not isinstance(guard, StatementGuard):
            yield
            return
        was, guard.revealing = guard.revealing, threading.get_ident()
        try:
            yield
        finally:
            guard.revealing = was

    def logged_reads(self) -> list[dict[str, Any]]:
        """The event's ``reads``: each reveal, then ``{"table", "rows": "unknown"}`` for
        each hidden table this call's own SQL read (``_sql_reads``)."""
        return event_reads(self.connection, self.reads, self.sql_reads)

    @staticmethod
    def reject(message: str) -> NoReturn:
        """Refuse the call (domain rule violation); nothing it wrote is kept."""
        raise ToolRejected(message)


def _bindable(values: list[Any]) -> list[Any]:
    """The key's values as SQLite will bind them, adapted here, as the tool's code: a
    value's ``__conform__`` (or an adapter of its type) run while the reveal's statement
    binds it would have its SQL taken for the reveal's, a hidden read unlogged. The
    result is of exact built-in types, which binding adapts no further (unless an
    adapter for ``int``, ``str``... itself is registered: see docs/envkit.md)."""
    return [_plain(sqlite3.adapt(value, sqlite3.PrepareProtocol, value)) for value in values]


_COPIES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (int, int.__int__),
    (float, float.__float__),
    (str, str.__str__),
)


def _plain(value: Any) -> Any:
    """``value`` (adapted) as the exact built-in type SQLite binds it as."""
    if value is None or type(value) in (int, float, str, bytes):
        return value
    # A subclass (bool) is bound by its stored value, which the base's own method
    # copies (``int(value)`` would run the subclass's ``__int__``).
    for base, copy in _COPIES:
        if isinstance(value, base):
            return copy(value)
    try:
        return bytes(memoryview(value))  # bytearray, memoryview: bound as a BLOB
    except TypeError:
        raise sqlite3.ProgrammingError(
            f"reveal: type {type(value).__name__!r} is not supported as a key value"
        ) from None


def _first(cursor: sqlite3.Cursor) -> Any:
    cursor.row_factory = None  # applied as rows are fetched
    return cursor.fetchone()


def _rows(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _logged_key(values: list[Any]) -> Any:
    """A revealed key as the audit writes keys (a scalar for one column, BLOBs as
    ``{"$blob": hex}``), so it is JSON in memory as in the saved log and matches the
    audit's keys in ``read_steps``; a value JSON cannot hold is logged as its repr."""
    key = [portable_value(value) for value in values]
    try:
        return portable(key[0] if len(key) == 1 else key, "key")
    except PortabilityError:
        return {"$unportable": safe_repr(values)}
