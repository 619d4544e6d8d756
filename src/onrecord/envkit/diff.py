"""End-state diffs: what the episode created, changed and deleted, per table and key.

Format (DESIGN.md)::

    {table: {"created": [row], "changed": [{"key", "before", "after"}], "deleted": [row]}}

Tables in name order, rows in key order, unchanged tables left out. A key is the value
of a one-column primary key, or a list for a composite key; tables without a declared
key are keyed by ``rowid`` (which then appears in the row). Values compare by value
*and* storage class, like ``typeof`` (``1`` and ``1.0`` differ).

Two ways to compute it that must agree: :func:`audit_diff` folds the audit history
(fast: it touches only changed rows) and :func:`scan_diff` compares two databases in
full (for databases written by processes that bypassed nothing but may lack triggers).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

from onrecord.envkit._sql import (
    Table,
    internal,
    key_collations,
    key_equals,
    native_value,
    needs_encoding,
    quote,
    readonly_uri,
    row_dict,
    row_key,
    same_values,
    sort_key,
    user_tables,
)
from onrecord.envkit._text import lossless
from onrecord.envkit.audit import AuditEvent, RawAudit, events_from_raw, read_audit
from onrecord.envkit.snapshot import SnapshotError, existing_database
from onrecord.errors import InputError

__all__ = [
    "StateDiff",
    "audit_diff",
    "diff_databases",
    "diff_from_events",
    "diff_from_raw",
    "history_and_diff",
    "scan_diff",
]

StateDiff = dict[str, dict[str, list[Any]]]
Values = Sequence[Any]


def audit_diff(
    conn: sqlite3.Connection,
    schema: str = "main",
    layout: Sequence[tuple[Table, str]] | None = None,
) -> StateDiff:
    """The diff since the snapshot, folded from the audit history in ``schema``.

    ``layout`` is ``audit_tables(conn, schema)``, passed by callers that keep it."""
    return diff_from_raw(read_audit(conn, schema, layout))


def history_and_diff(
    conn: sqlite3.Connection,
    schema: str = "main",
    layout: Sequence[tuple[Table, str]] | None = None,
) -> tuple[list[AuditEvent], StateDiff]:
    """``(audit_events, audit_diff)`` from one read of the history."""
    raw = read_audit(conn, schema, layout)
    return events_from_raw(raw), diff_from_raw(raw)


def diff_from_raw(raw: RawAudit) -> StateDiff:
    """Fold a :func:`~onrecord.envkit.audit.read_audit` result into a diff."""
    diff: StateDiff = {}
    for table, rows in raw:
        _put(diff, table, *_fold(table, rows))
    return diff


def _fold(
    table: Table, rows: list[tuple[Any, ...]]
) -> tuple[list[Values], list[tuple[Values, Values]], list[Values]]:
    width, key_of = len(table.columns), table.key_of
    first: dict[Any, Values | None] = {}
    last: dict[Any, Values | None] = {}
    for row in rows:
        if row[2] != "I":
            old = row[3 : 3 + width]
            key = key_of(old)
            if key not in first:
                first[key] = old
            last[key] = None
        if row[2] != "D":
            new = row[3 + width :]
            key = key_of(new)
            if key not in first:
                first[key] = None
            last[key] = new
    return _classify(first, last)


def _classify(
    first: Mapping[Any, Values | None], last: Mapping[Any, Values | None]
) -> tuple[list[Values], list[tuple[Values, Values]], list[Values]]:
    """Split keys by (state at the start, state at the end)."""
    created: list[Values] = []
    changed: list[tuple[Values, Values]] = []
    deleted: list[Values] = []
    for key, before in first.items():
        after = last[key]
        if before is None:
            if after is not None:
                created.append(after)
        elif after is None:
            deleted.append(before)
        elif not same_values(before, after):
            changed.append((before, after))
    return created, changed, deleted


def _put(
    diff: StateDiff,
    table: Table,
    created: list[Values],
    changed: list[tuple[Values, Values]],
    deleted: list[Values],
) -> None:
    if not (created or changed or deleted):
        return
    key_of = table.key_of
    to_row, to_key = _encoders(
        table, needs_encoding(chain(created, deleted, chain.from_iterable(changed)))
    )
    diff[table.name] = {
        "created": [to_row(values) for values in _by_key(created, key_of)],
        "changed": [
            {"key": to_key(before), "before": to_row(before), "after": to_row(after)}
            for before, after in _by_key(changed, lambda pair: key_of(pair[0]))
        ],
        "deleted": [to_row(values) for values in _by_key(deleted, key_of)],
    }


def _encoders(
    table: Table, encode: bool
) -> tuple[Callable[[Values], Any], Callable[[Values], Any]]:
    """(values -> row dict, values -> diff key)."""
    if encode:
        return partial(row_dict, table), partial(row_key, table)
    # The common case: the values are JSON already, so they go straight into dicts.
    key_of = table.key_of

    def to_key(values: Values) -> Any:
        return list(key_of(values)) if len(table.key) > 1 else key_of(values)

    return table.row_of, to_key


def _by_key(items: list[Any], key: Callable[[Any], Any]) -> list[Any]:
    """Sort by key; natively when the key types allow it (the common case), else in
    SQLite's cross-type order (NULL < numbers < text < BLOB)."""
    try:
        return sorted(items, key=key)
    except TypeError:
        return sorted(items, key=lambda item: sort_key(key(item)))


def scan_diff(conn: sqlite3.Connection, before: str = "main", after: str = "cur") -> StateDiff:
    """The diff between two schemas of one connection, by comparing every row."""
    names = {before: f"the database {before!r}", after: f"the database {after!r}"}
    return lossless(conn, lambda: _scan_diff(conn, before, after, names))


def _scan_diff(
    conn: sqlite3.Connection, before: str, after: str, names: Mapping[str, str]
) -> StateDiff:
    old = {table.name: table for table in user_tables(conn, before)}
    new = {table.name: table for table in user_tables(conn, after)}
    diff: StateDiff = {}
    for name in sorted(old.keys() | new.keys()):
        table = _same_layout(old.get(name), new.get(name))
        created, changed, deleted = _scan_table(
            conn, table, before if name in old else None, after if name in new else None
        )
        _refuse_null_keys(table, deleted, names[before])
        _refuse_null_keys(table, created, names[after])
        _put(diff, table, created, changed, deleted)
    return diff


def _refuse_null_keys(table: Table, rows: list[Values], database: str) -> None:
    """Refuse a row with a NULL in its key, as ``Snapshot.from_file`` does: rows are told
    apart by their key, and a NULL key equals nothing, so an unchanged row would be listed
    as deleted and created. Such a row never matches across the two, so it is always
    among the created or deleted rows: checking them costs no extra scan."""
    positions = table.key_positions
    if any(row[i] is None for row in rows for i in positions):
        raise InputError(
            f"table {table.name!r} of {database} holds a row whose primary key "
            f"{list(table.key)} is NULL; onrecord tells rows apart by their key: give every "
            "row a key (and declare the key columns NOT NULL)"
        )


def _same_layout(old: Table | None, new: Table | None) -> Table:
    if old is not None and new is not None and (old.columns, old.key) != (new.columns, new.key):
        raise InputError(
            f"table {old.name!r} has columns {list(old.columns)} before and "
            f"{list(new.columns)} after; diffs compare rows of one schema, so "
            "migrate the snapshot instead of altering tables in an episode"
        )
    table = new or old
    assert table is not None
    return table


def _scan_table(
    conn: sqlite3.Connection, table: Table, before: str | None, after: str | None
) -> tuple[list[Values], list[tuple[Values, Values]], list[Values]]:
    width = len(table.columns)
    if before is None or after is None:
        schema = after or before
        rows = conn.execute(
            internal(f"SELECT {table.select_list()} FROM {quote(str(schema))}.{quote(table.name)}")
        ).fetchall()
        return (rows, [], []) if before is None else ([], [], rows)
    source = f"{quote(after)}.{quote(table.name)} AS a"
    target = f"{quote(before)}.{quote(table.name)} AS b"
    collations = key_collations(conn, before, table)
    join = " AND ".join(
        key_equals(key, "a.", f"b.{quote(key)}", collation)
        for key, collation in zip(table.key, collations, strict=True)
    )
    missing = f"b.{quote(table.key[0])} IS NULL"
    differs = " OR ".join(_differs(column, column in table.untyped) for column in table.columns)
    created: list[Values] = []
    changed: list[tuple[Values, Values]] = []
    for row in conn.execute(
        internal(
            f"SELECT {missing}, {table.select_list('a')}, "
            f"{table.select_list('b')} FROM {source} LEFT JOIN {target} "
            f"ON {join} WHERE {missing} OR {differs}"
        )
    ):
        if row[0]:
            created.append(row[1 : 1 + width])
        else:
            changed.append((row[1 + width :], row[1 : 1 + width]))
    deleted = conn.execute(
        internal(
            f"SELECT {table.select_list('b')} FROM {target} WHERE NOT "
            f"EXISTS (SELECT 1 FROM {source} WHERE {join})"
        )
    ).fetchall()
    return created, changed, deleted


def _differs(column: str, untyped: bool) -> str:
    name = quote(column)
    # Affinity makes equal values share a storage class, except in untyped columns, where
    # 1 and 1.0 compare equal but differ: only there is typeof() worth its cost. Text is
    # compared byte for byte, as the audit does: a column declared COLLATE NOCASE would
    # otherwise hide a change from 'a' to 'A'.
    if untyped:
        return f"a.{name} IS NOT b.{name} COLLATE BINARY OR typeof(a.{name}) <> typeof(b.{name})"
    return f"a.{name} IS NOT b.{name} COLLATE BINARY"


def diff_databases(
    before_path: str | os.PathLike[str], after_path: str | os.PathLike[str]
) -> StateDiff:
    """Full-scan diff of two SQLite files, both opened read-only."""
    files = {
        "b": (existing_database(before_path, "diff_databases before_path"), "before_path"),
        "a": (existing_database(after_path, "diff_databases after_path"), "after_path"),
    }
    conn = sqlite3.connect(":memory:", uri=True)
    try:
        for alias, (path, argument) in files.items():
            _attach(conn, alias, path, argument)
        names = {alias: f"{argument} {str(path)!r}" for alias, (path, argument) in files.items()}
        return lossless(conn, lambda: _scan_diff(conn, "b", "a", names))
    finally:
        conn.close()


def _attach(conn: sqlite3.Connection, alias: str, path: Path, argument: str) -> None:
    """Attach ``path`` read-only as ``alias``, refusing a file that is no database (or
    cannot be read) by name, where SQLite's error would name neither file nor argument."""
    try:
        conn.execute(internal("ATTACH DATABASE ? AS " + alias), (readonly_uri(path),))
        conn.execute(internal(f"SELECT count(*) FROM {alias}.sqlite_schema")).fetchone()
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(
            f"diff_databases {argument} {str(path)!r} is not a readable SQLite database: {exc}"
        ) from exc


def diff_from_events(events: Iterable[AuditEvent], tables: Mapping[str, Table]) -> StateDiff:
    """Fold audit events (dicts, e.g. a saved history or one step of it) into a diff.

    ``tables`` gives each table's layout (see :func:`~onrecord.envkit.audit.audit_tables`).
    """
    per_table: dict[str, list[tuple[Any, ...]]] = {}
    for event in events:
        table = tables[event["table"]]
        op = _OP_LETTERS[event["op"]]
        per_table.setdefault(table.name, []).append(
            (
                event["seq"],
                event["step"],
                op,
                *_values(table, event["old"]),
                *_values(table, event["new"]),
            )
        )
    diff: StateDiff = {}
    for name in sorted(per_table):
        _put(diff, tables[name], *_fold(tables[name], per_table[name]))
    return diff


_OP_LETTERS = {"insert": "I", "update": "U", "delete": "D"}


def _values(table: Table, row: Mapping[str, Any] | None) -> tuple[Any, ...]:
    if row is None:
        return (None,) * len(table.columns)
    values = tuple(map(row.__getitem__, table.columns))
    if dict in map(type, values):  # an encoded BLOB, RawText or infinity (rare)
        return tuple(map(native_value, values))
    return values
