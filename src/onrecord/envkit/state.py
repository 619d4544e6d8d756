"""The content digest of a database: what "the same state" means.

The digest is the sha256 of the canonical JSON of ``[[table, create_sql, rows], ...]``
over the user tables in name order, each table's rows as lists of values in key order
(BLOBs as ``{"$blob": hex}``, TEXT that is not valid UTF-8 as ``{"$text": hex}`` of its
bytes, infinite REALs as ``{"$real": "Infinity"}`` or ``"-Infinity"``). It is computed
in chunks that concatenate to exactly those bytes, so a 100k-row table never needs to
be held as one JSON document.
Internal ``_onrecord_`` tables (audit history, episode counters) are not state.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from itertools import chain
from typing import Any

from onrecord._canonical import canonical_bytes
from onrecord.envkit._sql import Table, internal, portable_value, quote, user_tables
from onrecord.envkit._text import lossless
from onrecord.errors import PortabilityError

__all__ = ["state_digest", "table_rows"]

_CHUNK = 4096
_INFINITIES = frozenset((math.inf, -math.inf))


def state_digest(conn: sqlite3.Connection, schema: str = "main") -> str:
    """sha256 hex of the user tables of ``schema`` (see the module docstring)."""
    return lossless(conn, lambda: _digest(conn, schema))


def _digest(conn: sqlite3.Connection, schema: str) -> str:
    hasher = hashlib.sha256(b"[")
    for index, table in enumerate(user_tables(conn, schema)):
        head = canonical_bytes([table.name, table.sql])
        hasher.update((b"," if index else b"") + head[:-1] + b",[")
        _hash_rows(hasher, conn, schema, table)
        hasher.update(b"]]")
    hasher.update(b"]")
    return hasher.hexdigest()


def _hash_rows(hasher: Any, conn: sqlite3.Connection, schema: str, table: Table) -> None:
    cursor = conn.execute(_ordered_select(schema, table))
    first = True
    while chunk := cursor.fetchmany(_CHUNK):
        data = _chunk_bytes(chunk)
        hasher.update((b"" if first else b",") + data[1:-1])
        first = False


def _chunk_bytes(chunk: list[Any]) -> bytes:
    try:
        data = canonical_bytes(chunk)
    except PortabilityError:  # a BLOB or RawText somewhere: encode it (rare, so only then)
        return canonical_bytes([[_digest_value(value) for value in row] for row in chunk])
    # JSON has no infinity: orjson writes it as null, which would make a REAL column
    # holding 1e999 the same state as one holding NULL. Look only when a null was written.
    if b"null" in data and not _INFINITIES.isdisjoint(chain.from_iterable(chunk)):
        return canonical_bytes([[_digest_value(value) for value in row] for row in chunk])
    return data


def _digest_value(value: Any) -> Any:
    """A value as the digest encodes it: BLOBs as ``{"$blob": hex}``, ``RawText`` as
    ``{"$text": hex}``, infinite REALs as ``{"$real": "Infinity"}`` / ``"-Infinity"``."""
    if type(value) is float and math.isinf(value):
        return {"$real": "Infinity" if value > 0 else "-Infinity"}
    return portable_value(value)


def _ordered_select(schema: str, table: Table) -> str:
    order = ", ".join(quote(column) for column in table.key)
    return internal(
        f"SELECT {table.select_list()} FROM {quote(schema)}.{quote(table.name)} ORDER BY {order}"
    )


def table_rows(conn: sqlite3.Connection, table: Table, schema: str = "main") -> list[Any]:
    """All rows of a table as value tuples, in key order (TEXT that is not UTF-8 as
    ``RawText``)."""
    sql = _ordered_select(schema, table)
    return lossless(conn, lambda: conn.execute(sql).fetchall())
