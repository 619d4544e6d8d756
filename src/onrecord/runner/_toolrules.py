"""A tool-world task's rule values checked against the declared types of their columns,
before any episode runs (see ``ToolWorldProvider``)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from onrecord.envkit import Snapshot
from onrecord.envkit._sql import load_reals, quote
from onrecord.errors import InputError

__all__ = ["check_rule_values"]


def check_rule_values(name: str, snapshot: Snapshot, rules: Sequence[Any]) -> None:
    """Refuse a ``where``/``to`` value no row of its column can hold: ``copies = "1"`` on
    an INTEGER column is stored as the integer 1, so the rule failed every episode, a
    correct agent's too, and only the failure text said why. Each value is written to a
    scratch column of the same declared type (STRICT, rowid) and read back, so SQLite's
    own affinity rules decide: ``"abc"`` stays text in a plain INTEGER column (an agent
    can store it there, so it is kept), and a column without a type holds anything."""
    probe = sqlite3.connect(":memory:")
    try:
        for index, rule in enumerate(rules):
            table = rule.get("table")
            for field in ("where", "to"):
                for column, written in (rule.get(field) or {}).items():
                    # The value as the rules compare it (envkit.rules._matches).
                    value = int(written) if type(written) is bool else load_reals(written)
                    declared, strict, rowid = _column_type(snapshot.connection, table, column)
                    stored = _stored(
                        probe, "INTEGER PRIMARY KEY" if rowid else declared, strict, value
                    )
                    if stored is _UNKNOWN or _same(stored, value):
                        continue
                    kind = (
                        "the rowid (integers only)"
                        if rowid
                        else f"declared {declared or 'without a type'}"
                    )
                    fix = (
                        f"cannot store {_literal(value)} there; write "
                        + ("an integer" if rowid else f"a value of type {declared}")
                        if stored is _REFUSED
                        else f"stores {_literal(value)} as {_literal(stored)}; write "
                        f"{column} = {_literal(stored)}"
                    )
                    raise InputError(
                        f"{name} expected_output['rules'][{index}] ({rule['rule']} {table}): "
                        f"{field}.{column} = {_literal(value)} can never match, a correct "
                        f"agent's row included: {table}.{column} is {kind}"
                        f"{' in a STRICT table' if strict else ''}, so SQLite {fix}"
                    )
    finally:
        probe.close()


_UNKNOWN, _REFUSED = object(), object()
"""``_stored``'s answers for a value it cannot try (not a scalar, out of range) and for
one the column refuses (a STRICT column, a rowid)."""


def _column_type(conn: sqlite3.Connection, table: str, column: str) -> tuple[str, bool, bool]:
    """The column's declared type, whether its table is STRICT and whether it is the
    rowid: an ``INTEGER PRIMARY KEY`` of a rowid table, or the ``rowid`` key of a table
    without one (no column of its own)."""
    listed = conn.execute(f"PRAGMA table_list({quote(table)})").fetchone()
    info = conn.execute(f"PRAGMA table_xinfo({quote(table)})").fetchall()
    row = next((row for row in info if row[1] == column), None)
    if row is None:
        return "INTEGER", bool(listed[5]), True
    keys = [item for item in info if item[5]]
    rowid = keys == [row] and row[2].upper() == "INTEGER" and not listed[4]
    return row[2], bool(listed[5]), rowid


def _stored(probe: sqlite3.Connection, declared: str, strict: bool, value: Any) -> Any:
    """What a column of this type holds once ``value`` is written to it."""
    if type(value) not in (int, float, str) or value != value:  # None, a BLOB, NaN
        return _UNKNOWN
    try:
        probe.execute("DROP TABLE IF EXISTS probe")
        probe.execute(f"CREATE TABLE probe (value {declared})" + (" STRICT" if strict else ""))
        probe.execute("INSERT INTO probe VALUES (?)", (value,))
    except sqlite3.IntegrityError:  # "cannot store TEXT value in INTEGER column"
        return _REFUSED
    except (OverflowError, sqlite3.Error):  # too large for SQLite; a type it reads alone
        return _UNKNOWN
    return probe.execute("SELECT value FROM probe").fetchone()[0]


def _same(stored: Any, value: Any) -> bool:
    """Equal as ``envkit.rules._matches`` compares: same type, or two numbers."""
    if type(stored) in (int, float) and type(value) in (int, float):
        return bool(stored == value)
    return type(stored) is type(value) and stored == value


def _literal(value: Any) -> str:
    """``"38"`` or ``38``, as a task file writes it: a string shows its quotes."""
    return (
        repr(value) if type(value) is float and math.isinf(value) else orjson.dumps(value).decode()
    )
