"""Small SQLite helpers shared by the kit: identifiers, table layout, value encoding.

Every identifier that reaches SQL text is quoted here; every value is bound as a
parameter. Internal tables start with ``_onrecord_`` and are invisible to diffs,
digests and observers.
"""

from __future__ import annotations

import math
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote

from onrecord.envkit._text import TEXT_TAG, RawText
from onrecord.errors import InputError

INTERNAL_PREFIX = "_onrecord_"
INTERNAL = f" -- onrecord {secrets.token_hex(8)}"
"""Ends every statement onrecord runs: SQLite asks the authorizer when a statement is
prepared, and ``sqlite3`` caches prepared statements by their text, so a tool typing the
exact text of one the world ran outside the guard would get it unchecked (see
``_guard``). No tool types this comment: it is drawn per process."""
ROWID_ALIASES = ("rowid", "_rowid_", "oid")
BLOB_TAG = "$blob"
REAL_TAG = "$real"

Row = dict[str, Any]


def internal(sql: str) -> str:
    """``sql`` marked as onrecord's own (``INTERNAL``): every statement the kit runs goes
    through here, so no text the world ran is one a tool can reuse from the cache."""
    return sql + INTERNAL


def readonly_uri(path: str | Path) -> str:
    """The ``file:`` URI that opens ``path`` read-only (``mode=ro``)."""
    return f"file:{url_quote(str(Path(path).resolve()))}?mode=ro"


def quote(name: str) -> str:
    """A safely quoted SQLite identifier (schema, table or column name)."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Table:
    """Layout of one user table, as the diff and audit code need it."""

    name: str
    """Table name as declared."""
    columns: tuple[str, ...]
    """Stored columns in declaration order; ``rowid`` first when it is the key."""
    key: tuple[str, ...]
    """Primary-key columns, or ``("rowid",)`` for a table without a declared key (or
    ``_rowid_``/``oid`` when a column is named ``rowid``)."""
    sql: str
    """The ``CREATE TABLE`` statement, part of the state digest."""
    untyped: frozenset[str] = field(default=frozenset(), compare=False)
    """Columns without type affinity: only there can ``1`` and ``1.0`` both be stored."""

    @cached_property
    def key_positions(self) -> tuple[int, ...]:
        """Positions of the key columns inside ``columns``."""
        return tuple(self.columns.index(name) for name in self.key)

    @cached_property
    def key_of(self) -> Callable[[Sequence[Any]], Any]:
        """Raw key of a value tuple: a scalar for one key column, else a tuple."""
        return itemgetter(*self.key_positions)

    @cached_property
    def row_of(self) -> Callable[[Sequence[Any]], dict[str, Any]]:
        """Values -> ``{column: value}``, as ``dict(zip(columns, values))`` but with the
        keys compiled in: a diff builds a dict per changed row, and this is twice as
        fast. Column names enter the source only as ``repr`` string literals."""
        return _row_builder(self.columns)

    def select_list(self, alias: str = "") -> str:
        """``"a", "b"`` (optionally ``x."a"``) in column order, for SELECT statements."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(prefix + quote(column) for column in self.columns)


@lru_cache(maxsize=1024)
def _row_builder(columns: tuple[str, ...]) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """``Table.row_of`` of a column layout, compiled once per process (a layout read
    again, from a saved episode or the schema, would be compiled again: ~0.2 ms each)."""
    items = ", ".join(f"{column!r}: values[{i}]" for i, column in enumerate(columns))
    built: Callable[[Sequence[Any]], dict[str, Any]] = eval(f"lambda values: {{{items}}}")
    return built


def user_tables(conn: sqlite3.Connection, schema: str = "main") -> list[Table]:
    """Ordinary tables of ``schema`` in name order, without SQLite's and onrecord's own."""
    listed = conn.execute(internal(f"PRAGMA {quote(schema)}.table_list")).fetchall()
    names = sorted(row[1] for row in listed if row[2] == "table" and _is_user_table(row[1]))
    return [_table(conn, schema, name) for name in names]


def _is_user_table(name: str) -> bool:
    return not name.startswith(("sqlite_", INTERNAL_PREFIX))


def _table(conn: sqlite3.Connection, schema: str, name: str) -> Table:
    info = conn.execute(internal(f"PRAGMA {quote(schema)}.table_info({quote(name)})")).fetchall()
    columns = tuple(row[1] for row in info)
    declared = tuple(row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5]))
    sql = conn.execute(
        internal(
            f"SELECT sql FROM {quote(schema)}.sqlite_schema WHERE type = 'table' AND name = ?"
        ),
        (name,),
    ).fetchone()[0]
    untyped = frozenset(row[1] for row in info if _has_no_affinity(row[2]))
    if declared:
        return Table(name, columns, declared, sql, untyped)
    # A column named "rowid" hides the rowid under that name: key by another alias.
    alias = rowid_alias(columns)
    if alias is None:
        raise InputError(
            f"table {name!r} has no declared primary key and columns named rowid, _rowid_ "
            "and oid, which hide its rowid; declare a primary key so its rows can be told apart"
        )
    return Table(name, (alias, *columns), (alias,), sql, untyped)


def rowid_alias(columns: Iterable[str]) -> str | None:
    """The first of ``rowid``, ``_rowid_``, ``oid`` that no column is named (SQL names
    ignore ASCII case), i.e. that still means the rowid; ``None`` when all are taken."""
    taken = {column.lower() for column in columns}
    return next((alias for alias in ROWID_ALIASES if alias not in taken), None)


def key_collations(conn: sqlite3.Connection, schema: str, table: Table) -> tuple[str | None, ...]:
    """The collation the primary key tells each key column's values apart with (``None``
    for a rowid or an ``INTEGER PRIMARY KEY``, which has no index of its own)."""
    for row in conn.execute(internal(f"PRAGMA {quote(schema)}.index_list({quote(table.name)})")):
        if row[3] == "pk":
            info = conn.execute(internal(f"PRAGMA {quote(schema)}.index_xinfo({quote(row[1])})"))
            by_name = {item[2]: item[4] for item in info if item[5]}
            return tuple(by_name.get(column) for column in table.key)
    return (None,) * len(table.key)


def key_equals(column: str, left: str, right: str, collation: str | None) -> str:
    """SQL for "``left``'s key column equals ``right``" as the diffs mean it: by value,
    text compared byte for byte. A key declared ``COLLATE NOCASE`` (or ``RTRIM``) would
    otherwise match ``'a'`` with ``'A'``, where the audit, keyed in Python, sees two keys;
    the key's own collation is kept in front so its index still serves the lookup."""
    name = left + quote(column)
    if collation is None:
        return f"{name} = {right}"
    exact = f"{name} = {right} COLLATE BINARY"
    if collation.upper() == "BINARY":
        return exact
    return f"{name} = {right} COLLATE {quote(collation)} AND {exact}"


def _has_no_affinity(declared_type: str) -> bool:
    """SQLite's affinity rules (datatype3.html §3.1): BLOB affinity keeps values as given.
    ``ANY`` (STRICT tables) keeps them too."""
    kind = declared_type.upper()
    if "INT" in kind or any(text in kind for text in ("CHAR", "CLOB", "TEXT")):
        return False
    return not kind or "BLOB" in kind or kind == "ANY"


def portable_value(value: Any) -> Any:
    """A column value as plain JSON: BLOBs become ``{"$blob": hex}``, TEXT that is not
    UTF-8 (:class:`RawText`) ``{"$text": hex}``, the rest as is."""
    kind = type(value)
    if kind is bytes:
        return {BLOB_TAG: value.hex()}
    if kind is RawText:
        return {TEXT_TAG: value.data.hex()}
    return value


def native_value(value: Any) -> Any:
    """Inverse of :func:`portable_value` (and of the ``{"$real": "Infinity"}`` a saved
    episode writes an infinite REAL as)."""
    if type(value) is dict:
        if REAL_TAG in value:
            return math.inf if value[REAL_TAG] == "Infinity" else -math.inf
        if TEXT_TAG in value:
            return RawText(bytes.fromhex(value[TEXT_TAG]))
        return bytes.fromhex(value[BLOB_TAG])
    return value


def sql_param(value: Any) -> tuple[str, Any]:
    """``(placeholder, parameter)`` that stores the native ``value`` exactly: ``sqlite3``
    binds ``bytes`` as a BLOB, so a :class:`RawText` is bound as its bytes and cast back
    to TEXT (``CAST(? AS TEXT)`` keeps the bytes as they are)."""
    if type(value) is RawText:
        return "CAST(? AS TEXT)", value.data
    return "?", value


_INFINITIES = frozenset((math.inf, -math.inf))


def save_reals(events: Sequence[Mapping[str, Any]], *records: Any) -> list[Any]:
    """``[events, *records]`` ready to save: infinite REALs as ``{"$real": "Infinity"}``
    (or ``"-Infinity"``), as the state digest writes them. JSON has no infinity and
    orjson writes one as ``null``, so a saved audit and diff would otherwise show NULL
    where the database holds an infinity. ``records`` (the diff) hold only values the
    audit ``events`` hold, so the events alone tell whether anything is to be done."""
    rows = (row.values() for event in events for row in (event["old"], event["new"]) if row)
    values = chain.from_iterable(rows)  # BLOBs are dicts already, so test floats only
    if not any(type(value) is float and value in _INFINITIES for value in values):
        return [events, *records]
    return [encode_reals(item) for item in (events, *records)]


def encode_reals(value: Any) -> Any:
    """``value`` with every infinite float written as ``{"$real": ...}``."""
    return _map_reals(value, _encode_real)


def load_reals(value: Any) -> Any:
    """Inverse of :func:`save_reals` for one saved record part."""
    return _map_reals(value, _decode_real)


def _encode_real(value: Any) -> Any:
    if type(value) is float and value in _INFINITIES:
        return {REAL_TAG: "Infinity" if value > 0 else "-Infinity"}
    return value


def _decode_real(value: Any) -> Any:
    if type(value) is dict and len(value) == 1 and value.get(REAL_TAG) in _REAL_NAMES:
        return math.inf if value[REAL_TAG] == "Infinity" else -math.inf
    return value


_REAL_NAMES = ("Infinity", "-Infinity")


def _map_reals(value: Any, leaf: Callable[[Any], Any]) -> Any:
    if type(value) is dict:
        mapped = leaf(value)
        if mapped is not value:
            return mapped
        return {key: _map_reals(item, leaf) for key, item in value.items()}
    if type(value) is list:
        return [_map_reals(item, leaf) for item in value]
    return leaf(value)


def row_dict(table: Table, values: Sequence[Any]) -> Row:
    """Column name → portable value."""
    return {
        column: portable_value(value) for column, value in zip(table.columns, values, strict=True)
    }


_ENCODED = frozenset((bytes, RawText))


def needs_encoding(rows: Iterable[Sequence[Any]]) -> bool:
    """Whether any value is a BLOB or :class:`RawText`, which :func:`portable_value`
    encodes (one C-level pass over all values)."""
    return not _ENCODED.isdisjoint(map(type, chain.from_iterable(rows)))


def row_key(table: Table, values: Sequence[Any]) -> Any:
    """The diff key of a row: the value of a one-column key, else a list of values."""
    positions = table.key_positions
    if len(positions) == 1:
        return portable_value(values[positions[0]])
    return [portable_value(values[position]) for position in positions]


_TYPE_RANK = {type(None): 0, int: 1, float: 1, bool: 1, str: 2, bytes: 3}


def sort_key(value: Any) -> tuple[Any, ...]:
    """SQLite's ordering across types (NULL < numbers < text < BLOB) as a Python key;
    text by its UTF-8 bytes (``BINARY``), so a :class:`RawText` sorts among ``str``."""
    if isinstance(value, tuple | list):
        return tuple(sort_key(item) for item in value)
    if isinstance(value, dict):  # an encoded BLOB or RawText
        if TEXT_TAG in value:
            return (2, bytes.fromhex(value[TEXT_TAG]))
        return (3, bytes.fromhex(value.get(BLOB_TAG, "")))
    if type(value) is str:  # code-point order is UTF-8 byte order
        return (2, value.encode("utf-8", "surrogatepass"))
    if type(value) is RawText:
        return (2, value.data)
    return (_TYPE_RANK.get(type(value), 4), value if value is not None else 0)


def same_value(left: Any, right: Any) -> bool:
    """One value of ``same_values``: equal, and of equal storage class (an update from
    INTEGER 1 to REAL 1.0 changed the row, though Python calls them equal)."""
    return type(left) is type(right) and left == right


def same_values(left: Sequence[Any], right: Sequence[Any]) -> bool:
    """Equal values of equal storage class (``1`` and ``1.0`` differ, as in ``typeof``)."""
    # Tuple equality runs in C; the type comparison is needed only when values are equal.
    return tuple(left) == tuple(right) and list(map(type, left)) == list(map(type, right))
