"""TEXT values that are not valid UTF-8, read without loss.

SQLite stores whatever bytes it is given as TEXT (``CAST(x'ff' AS TEXT)``, or a database
written by other software); Python's ``sqlite3`` refuses to read such a value
(``OperationalError: Could not decode to UTF-8 column ...``). The kit's readers (audit,
diff, digest, observer, reveal) read as usual and, only when SQLite raises that, read
again with :meth:`RawText.decode` as the connection's ``text_factory``: valid text is a
``str`` as always, other text a :class:`RawText` holding its bytes, written into JSON as
``{"$text": hex}``. The common path pays nothing (no Python call per value).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = [
    "TEXT_TAG",
    "RawText",
    "lossless",
    "plain_rows",
    "raw_text",
    "reads_only",
    "undecodable",
]

TEXT_TAG = "$text"
_T = TypeVar("_T")
_UNDECODABLE = "Could not decode to UTF-8"


class RawText:
    """A TEXT value whose bytes are not valid UTF-8 (``typeof`` is ``'text'``).

    Equal only to a ``RawText`` with the same bytes: never to a ``str`` nor to the BLOB
    (``bytes``) with those bytes, which SQLite keeps apart too."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        """The value's bytes, exactly as SQLite stores them."""

    @staticmethod
    def decode(data: bytes) -> str | RawText:
        """A ``text_factory`` for ``sqlite3`` connections: valid UTF-8 as ``str`` (decoded
        as strictly as ``sqlite3`` does), anything else as ``RawText``."""
        try:
            return data.decode()
        except UnicodeDecodeError:
            return RawText(data)

    def __eq__(self, other: object) -> bool:
        return type(other) is RawText and other.data == self.data

    def __hash__(self) -> int:
        return hash((TEXT_TAG, self.data))

    def __lt__(self, other: object) -> bool:
        if type(other) is not RawText:
            return NotImplemented
        return self.data < other.data

    def __repr__(self) -> str:
        return f"RawText({self.data!r})"


def undecodable(exc: BaseException) -> bool:
    """Whether ``exc`` is ``sqlite3`` refusing to read TEXT that is not UTF-8."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(_UNDECODABLE)


@contextmanager
def raw_text(conn: sqlite3.Connection) -> Iterator[None]:
    """Within the block, ``conn`` reads TEXT with :meth:`RawText.decode`."""
    previous: Any = conn.text_factory
    conn.text_factory = RawText.decode
    try:
        yield
    finally:
        conn.text_factory = previous


@contextmanager
def plain_rows(conn: sqlite3.Connection) -> Iterator[None]:
    """Within the block, ``conn`` reads TEXT as ``str`` whatever ``text_factory`` a tool
    set for its call (``ToolContext.reveal`` logs what it read from such rows)."""
    previous: Any = conn.text_factory
    if previous is str:
        yield
        return
    conn.text_factory = str
    try:
        yield
    finally:
        conn.text_factory = previous


def lossless(conn: sqlite3.Connection, read: Callable[[], _T]) -> _T:
    """``read()``, or, when it meets TEXT that is not UTF-8, ``read()`` again with such
    text read as :class:`RawText` (``read`` must only read, through ``conn``)."""
    try:
        return read()
    except sqlite3.OperationalError as exc:
        if not undecodable(exc):
            raise
    with raw_text(conn):
        return read()


_WRITING_OPCODES = frozenset({"Checkpoint", "JournalMode", "Vacuum", "VUpdate"})


def reads_only(conn: sqlite3.Connection, sql: str, params: Any = ()) -> bool:
    """Whether the statement ``sql`` only reads, as ``sqlite3_stmt_readonly`` tells it
    (which Python's ``sqlite3`` does not expose): its program opens no write transaction
    on any database (TEMP included) and updates no virtual table. Only a statement that
    reads may be run again to re-read its rows: one that wrote (``... RETURNING``) would
    write twice. Anything that cannot be explained counts as a write."""
    try:
        with raw_text(conn):  # the program's operands may hold the statement's literals
            program = conn.execute("EXPLAIN " + sql, params).fetchall()
    except sqlite3.Error:
        return False
    return not any(
        (row[1] == "Transaction" and row[3] != 0) or row[1] in _WRITING_OPCODES for row in program
    )
