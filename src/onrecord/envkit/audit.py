"""Audit history: triggers in the snapshot record every row change with its step.

Layout (all inside the database, so writes by other processes are audited too):

- ``_onrecord_ctx(step, seq, version)``: one row; the world sets ``step`` before each
  tool call and bumps ``version`` (the state version) when a write call commits; every
  trigger bumps ``seq`` so events of all tables share one order.
- ``_onrecord_audit_tables(tbl, shadow, columns, key)``: which shadow table holds the
  history of which user table, and its column layout (JSON lists).
- one shadow table per user table: ``_seq, _step, _op`` (``I``/``U``/``D``) and the old
  and new values ``o0..`` / ``n0..`` in column order. The shadow columns have no type,
  so SQLite stores every value exactly as the user table held it (no JSON rounding of
  REALs, BLOBs kept as BLOBs, TEXT that is not UTF-8 kept byte for byte and read as
  ``RawText``, written ``{"$text": hex}`` in events).
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from onrecord.envkit._sql import (
    INTERNAL_PREFIX,
    Table,
    internal,
    quote,
    row_dict,
    row_key,
    user_tables,
)
from onrecord.envkit._text import lossless
from onrecord.errors import InputError

__all__ = [
    "AuditEvent",
    "RawAudit",
    "audit_events",
    "audit_tables",
    "events_from_raw",
    "install_audit",
    "raw_audit",
    "read_audit",
]

CTX = f"{INTERNAL_PREFIX}ctx"
REGISTRY = f"{INTERNAL_PREFIX}audit_tables"
AuditEvent = dict[str, Any]
"""``{"seq", "step", "table", "op": "insert"|"update"|"delete", "key", "old", "new"}``"""

_OPS = {"I": "insert", "U": "update", "D": "delete"}
PROBE_TERMS = 250
"""Shadow tables probed per statement (SQLite's compound SELECT limit is 500)."""


def install_audit(conn: sqlite3.Connection) -> None:
    """Create the context row, the shadow tables and the triggers for every user table."""
    # One transaction: all or nothing, and ~30 % faster than a commit per statement.
    outer = conn.in_transaction
    if not outer:
        conn.execute(internal("BEGIN"))
    try:
        _install(conn)
    except BaseException:
        if not outer:
            conn.execute(internal("ROLLBACK"))
        raise
    if not outer:
        conn.execute(internal("COMMIT"))


def _install(conn: sqlite3.Connection) -> None:
    tables = user_tables(conn)
    _refuse_name_clashes(conn, len(tables))
    conn.execute(
        internal(
            f"CREATE TABLE {CTX} (step INTEGER NOT NULL, seq INTEGER NOT NULL, "
            "version INTEGER NOT NULL)"
        )
    )
    conn.execute(internal(f"INSERT INTO {CTX} VALUES (0, 0, 0)"))
    conn.execute(
        internal(
            f"CREATE TABLE {REGISTRY} (tbl TEXT PRIMARY KEY, shadow TEXT NOT NULL, "
            "columns TEXT NOT NULL, key TEXT NOT NULL)"
        )
    )
    for index, table in enumerate(tables):
        _install_table(conn, f"{INTERNAL_PREFIX}audit_{index}", table)


def _refuse_name_clashes(conn: sqlite3.Connection, count: int) -> None:
    """Refuse a schema object whose name is one the audit is about to create. SQL names
    ignore ASCII case, so a user's ``_ONRECORD_CTX`` (a user table: onrecord's names are
    lower case) would clash; left to SQLite it fails with a bare "already exists"."""
    names = {CTX, REGISTRY}
    for index in range(count):
        shadow = f"{INTERNAL_PREFIX}audit_{index}"
        names.update([shadow], (f"{shadow}_{op}" for op in ("I", "D", "U", "K", "KU")))
    folded = {name.lower() for name in names}
    listed = conn.execute(internal("SELECT type, name FROM sqlite_schema")).fetchall()
    for kind, name in listed:
        if name.lower() in folded:
            raise InputError(
                f"the schema's {kind} {name!r} has a name onrecord's audit uses (SQLite "
                f"names ignore case): rename it so it does not start with {INTERNAL_PREFIX!r} "
                "in any letter case"
            )


def _install_table(conn: sqlite3.Connection, shadow: str, table: Table) -> None:
    width = range(len(table.columns))
    olds, news = [f"o{i}" for i in width], [f"n{i}" for i in width]
    conn.execute(
        internal(
            f"CREATE TABLE {quote(shadow)} (_seq INTEGER PRIMARY KEY, _step INTEGER, "
            f"_op TEXT, {', '.join(olds + news)})"
        )
    )
    conn.execute(
        internal(f"INSERT INTO {REGISTRY} VALUES (?, ?, ?, ?)"),
        (
            table.name,
            shadow,
            orjson.dumps(table.columns).decode(),
            orjson.dumps(table.key).decode(),
        ),
    )
    _guard_null_keys(conn, shadow, table)
    old_values = [f"OLD.{quote(column)}" for column in table.columns]
    new_values = [f"NEW.{quote(column)}" for column in table.columns]
    for op, event, targets, values in (
        ("I", "INSERT", news, new_values),
        ("D", "DELETE", olds, old_values),
        ("U", "UPDATE", olds + news, old_values + new_values),
    ):
        conn.execute(
            internal(
                f"CREATE TRIGGER {quote(f'{shadow}_{op}')} AFTER {event} ON {quote(table.name)} "
                f"BEGIN UPDATE {CTX} SET seq = seq + 1; "
                f"INSERT INTO {quote(shadow)} (_seq, _step, _op, {', '.join(targets)}) "
                f"SELECT seq, step, '{op}', {', '.join(values)} FROM {CTX}; END"
            )
        )


def _guard_null_keys(conn: sqlite3.Connection, shadow: str, table: Table) -> None:
    """Refuse a NULL in a primary-key column that SQLite would accept one in (a declared
    key of a rowid table, not the rowid itself, not NOT NULL): rows are told apart by
    their key, so two inserts with a NULL key would look like one row to every diff."""
    nullable = nullable_key_columns(conn, table.name)
    if not nullable:
        return
    any_null = " OR ".join(f"NEW.{quote(column)} IS NULL" for column in nullable)
    stored = " OR ".join(f"{quote(column)} IS NULL" for column in nullable)
    if conn.execute(
        internal(f"SELECT 1 FROM {quote(table.name)} WHERE {stored} LIMIT 1")
    ).fetchone():
        raise InputError(
            f"table {table.name!r} holds a row whose primary key {list(nullable)} is NULL; "
            "onrecord tells rows apart by their key: give every row a key (and declare the "
            "key columns NOT NULL)"
        )
    message = (
        f"onrecord: a row of {table.name} with a NULL primary key {list(nullable)}: rows "
        "are told apart by their key, so it cannot be NULL"
    ).replace("'", "''")
    columns = ", ".join(quote(column) for column in nullable)
    for name, event in (("K", "INSERT"), ("KU", f"UPDATE OF {columns}")):
        conn.execute(
            internal(
                f"CREATE TRIGGER {quote(f'{shadow}_{name}')} BEFORE {event} ON {quote(table.name)} "
                f"WHEN {any_null} BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )
        )


def nullable_key_columns(conn: sqlite3.Connection, name: str) -> tuple[str, ...]:
    """Declared primary-key columns that can hold NULL: in a rowid table whose key is not
    the rowid (the key has its own index), without NOT NULL."""
    if not any(
        row[3] == "pk" for row in conn.execute(internal(f"PRAGMA index_list({quote(name)})"))
    ):
        return ()  # no key, the rowid as key, or an INTEGER PRIMARY KEY (never NULL)
    info = conn.execute(internal(f"PRAGMA table_info({quote(name)})")).fetchall()
    listed = conn.execute(
        internal("SELECT wr FROM pragma_table_list WHERE name = ?"), (name,)
    ).fetchone()
    if listed and listed[0]:
        return ()  # WITHOUT ROWID: SQLite enforces NOT NULL on the key
    return tuple(row[1] for row in sorted(info, key=lambda r: r[5]) if row[5] and not row[3])


def audit_tables(conn: sqlite3.Connection, schema: str = "main") -> list[tuple[Table, str]]:
    """``(table layout, shadow table name)`` for every audited table, in name order."""
    rows = conn.execute(
        internal(f"SELECT tbl, shadow, columns, key FROM {quote(schema)}.{REGISTRY} ORDER BY tbl")
    ).fetchall()
    return [
        (Table(name, tuple(orjson.loads(columns)), tuple(orjson.loads(key)), ""), shadow)
        for name, shadow, columns, key in rows
    ]


def raw_audit(
    conn: sqlite3.Connection, shadow: str, schema: str = "main", *, strict: bool = False
) -> list[tuple[Any, ...]]:
    """Rows ``(seq, step, op, old..., new...)`` of one shadow table, in order. TEXT that
    is not UTF-8 is read as ``RawText``; with ``strict``, it raises instead."""
    sql = internal(f"SELECT * FROM {quote(schema)}.{quote(shadow)} ORDER BY _seq")
    if strict:
        return conn.execute(sql).fetchall()
    return lossless(conn, lambda: conn.execute(sql).fetchall())


RawAudit = list[tuple[Table, list[tuple[Any, ...]]]]
"""``(table layout, raw_audit rows)`` of every audited table that has history."""


def read_audit(
    conn: sqlite3.Connection,
    schema: str = "main",
    layout: Sequence[tuple[Table, str]] | None = None,
    *,
    strict: bool = False,
) -> RawAudit:
    """The raw history of every table that has one, read once for both the events and the
    diff (``layout`` is ``audit_tables(conn, schema)``, passed by callers that keep it;
    ``strict`` as for :func:`raw_audit`)."""
    layout = audit_tables(conn, schema) if layout is None else layout
    if not layout:
        return []
    # One statement finds the shadow tables with rows; most episodes touch few tables.
    # (One per PROBE_TERMS tables: SQLite refuses a compound SELECT of more than 500.)
    terms = [
        f"SELECT {index} WHERE EXISTS (SELECT 1 FROM {quote(schema)}.{quote(shadow)})"
        for index, (_, shadow) in enumerate(layout)
    ]
    found = [
        index
        for start in range(0, len(terms), PROBE_TERMS)
        for (index,) in conn.execute(
            internal(" UNION ALL ".join(terms[start : start + PROBE_TERMS]))
        ).fetchall()
    ]
    return [
        (layout[i][0], raw_audit(conn, layout[i][1], schema, strict=strict)) for i in sorted(found)
    ]


def audit_events(conn: sqlite3.Connection, schema: str = "main") -> list[AuditEvent]:
    """The whole history, all tables merged in the order the changes happened."""
    return events_from_raw(read_audit(conn, schema))


def events_from_raw(raw: RawAudit) -> list[AuditEvent]:
    """Audit events of a :func:`read_audit` result, merged in the order of the changes."""
    streams = [_table_events(table, rows) for table, rows in raw]
    return list(heapq.merge(*streams, key=lambda event: event["seq"]))


def _table_events(table: Table, rows: list[tuple[Any, ...]]) -> Iterator[AuditEvent]:
    width = len(table.columns)
    for row in rows:
        seq, step, op = row[0], row[1], row[2]
        old, new = row[3 : 3 + width], row[3 + width :]
        yield {
            "seq": seq,
            "step": step,
            "table": table.name,
            "op": _OPS[op],
            "key": row_key(table, new if op == "I" else old),
            "old": None if op == "I" else row_dict(table, old),
            "new": None if op == "D" else row_dict(table, new),
        }
