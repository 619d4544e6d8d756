"""Refusing a rule that names a table or column the database does not have, and saying
what the name is instead: a typo of a real name, a view, a generated column, or the
rowid of a table whose rows are their primary key. The schema is read only to explain
a refusal (``SchemaFacts``), so a rule that names real tables costs nothing extra."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from onrecord._close_names import closest
from onrecord.envkit._rule_shape import rule_label
from onrecord.envkit._sql import INTERNAL_PREFIX, ROWID_ALIASES, internal, quote
from onrecord.errors import InputError

__all__ = [
    "FactsReader",
    "SchemaFacts",
    "checked_names",
    "did_you_mean",
    "read_facts",
    "schema_facts",
    "with_hints",
]


@dataclass(frozen=True)
class SchemaFacts:
    """What a refused name may be, read from the database."""

    views: Mapping[str, tuple[str, ...]]
    """Each view, with the tables it reads (empty when SQLite cannot tell)."""
    generated: Mapping[str, tuple[str, ...]]
    """Each table's generated columns (left out of diffs: they are derived)."""
    keys: Mapping[str, tuple[str, ...]]
    """Each table's declared primary-key columns (empty: keyed by rowid)."""
    without_rowid: frozenset[str]
    """Tables declared ``WITHOUT ROWID``."""


FactsReader = Callable[[], SchemaFacts | None]
"""Reads the facts when a name is refused (``None`` when the database is not at hand)."""


def schema_facts(conn: sqlite3.Connection, schema: str = "main") -> SchemaFacts:
    """The facts about ``schema`` that explain a refused name."""
    listed = conn.execute(internal(f"PRAGMA {quote(schema)}.table_list")).fetchall()
    tables = [row[1] for row in listed if row[2] == "table" and not _internal(row[1])]
    views = [row[1] for row in listed if row[2] == "view"]
    generated, keys = {}, {}
    for name in tables:
        info = conn.execute(internal(f"PRAGMA {quote(schema)}.table_xinfo({quote(name)})"))
        columns = info.fetchall()
        # hidden 2 and 3: a VIRTUAL and a STORED generated column.
        generated[name] = tuple(row[1] for row in columns if row[6] in (2, 3))
        keys[name] = tuple(row[1] for row in sorted((r for r in columns if r[5]), key=_pk))
    return SchemaFacts(
        {view: _read_by(conn, schema, view) for view in views},
        generated,
        keys,
        frozenset(row[1] for row in listed if row[2] == "table" and row[4]),
    )


def _pk(row: Any) -> int:
    return int(row[5])


def _internal(name: str) -> bool:
    return name.startswith(("sqlite_", INTERNAL_PREFIX))


def _read_by(conn: sqlite3.Connection, schema: str, view: str) -> tuple[str, ...]:
    """The tables a view reads: the root pages its compiled query opens (``EXPLAIN``
    prepares it without running it), named from the schema table."""
    try:
        program = conn.execute(
            internal(f"EXPLAIN SELECT * FROM {quote(schema)}.{quote(view)}")
        ).fetchall()
        pages = dict(
            conn.execute(
                internal(
                    f"SELECT rootpage, tbl_name FROM {quote(schema)}.sqlite_schema "
                    "WHERE type IN ('table', 'index')"
                )
            ).fetchall()
        )
    except sqlite3.Error:  # a view over a table dropped since: SQLite cannot tell
        return ()
    read = {pages.get(row[3]) for row in program if row[1] == "OpenRead"}
    return tuple(sorted(name for name in read if isinstance(name, str) and not _internal(name)))


def checked_names(
    rule: dict[str, Any],
    tables: Mapping[str, Collection[str]],
    facts: FactsReader | None = None,
    where: str = "",
) -> None:
    """Refuse a rule naming a table or column the database does not have: it would
    match no row, so ``count=0``, ``unchanged`` and ``only_tables`` would pass whatever
    the episode did. ``where`` is the rule's place in its list (``_rule_shape.place``)."""
    named = [rule["table"]] if "table" in rule else list(rule.get("tables", ()))
    unknown = [name for name in named if name not in tables]
    if unknown:
        known = read_facts(facts)
        raise InputError(
            with_hints(
                f"{rule_label(rule, where)} names the tables {unknown}, which the database "
                f"does not have; its tables: {sorted(tables)}",
                [_table_hint(name, tables, known) for name in unknown],
            )
        )
    for field in ("where", "to", "also"):
        columns = tables[rule["table"]] if field in rule else ()
        missing = [column for column in rule.get(field, ()) if column not in columns]
        if missing:
            known = read_facts(facts)
            raise InputError(
                with_hints(
                    f"{rule_label(rule, where)}: {rule['table']} has no columns {missing} (its "
                    f"{field!r} {_USELESS[field]}); its columns: {list(columns)}",
                    [_column_hint(rule["table"], name, columns, known) for name in missing],
                )
            )


_USELESS = {
    "where": "could match no row",
    "to": "could match no row",
    "also": "would allow a change to no column",
}
"""What a rule naming a missing column in each field would do instead of its job."""


def with_hints(refusal: str, hints: Iterable[str]) -> str:
    """``refusal`` followed by each hint that says something, as sentences."""
    return refusal + "".join(f". {hint}" for hint in hints if hint)


def read_facts(facts: FactsReader | None) -> SchemaFacts | None:
    """The facts ``facts`` reads, or ``None``: the refusal they explain is made anyway."""
    if facts is None:
        return None
    try:
        return facts()
    except sqlite3.Error:  # e.g. an SQLite before 3.37 (no PRAGMA table_list): less said
        return None


def _table_hint(name: str, tables: Collection[str], facts: SchemaFacts | None) -> str:
    if facts is not None and name in facts.views:
        read = facts.views[name]
        underlying = (
            f"name the table{'s' if len(read) > 1 else ''} it reads: {list(read)}"
            if read
            else "name the table it reads"
        )
        return (
            f"{name!r} is a view, which rules cannot watch (its rows are derived from "
            f"other tables, and only tables' rows are audited); {underlying}"
        )
    close = did_you_mean(name, tables)
    if close or facts is not None:
        return close
    return f"If {name!r} is a view: rules watch tables only, so name the table it reads"


def _column_hint(table: str, name: str, columns: Collection[str], facts: SchemaFacts | None) -> str:
    if facts is not None and name in facts.generated.get(table, ()):
        return _generated_hint(name, known=True)
    if name.lower() in ROWID_ALIASES and facts is not None:
        key = list(facts.keys.get(table, ()))
        if table in facts.without_rowid:
            return (
                f"{table} is a WITHOUT ROWID table and has no {name}; name its primary "
                f"key columns {key}"
            )
        if key:
            return (
                f"The rows of {table} are told apart by its primary key {key}: name the "
                f"key columns instead of {name}"
            )
    close = did_you_mean(name, columns)
    if close or facts is not None:
        return close
    if name.lower() in ROWID_ALIASES:  # keyed by rowid, it would be among the columns
        return f"{table} has a declared primary key: name its key columns instead of {name}"
    # Without the schema at hand a generated column cannot be told from a typo.
    return _generated_hint(name, known=False)


def _generated_hint(name: str, *, known: bool) -> str:
    """What to name instead of the generated column ``name``: said as a fact when the
    schema shows it is one, as a condition when the schema is not at hand."""
    subject = f"{name!r} is a generated column" if known else f"If {name!r} is a generated column"
    return (
        f"{subject}: it is derived from the others and left out of diffs, so name the "
        "columns it is computed from"
    )


def did_you_mean(name: str, names: Collection[str]) -> str:
    """The closest real name, if one is close (letter case counts: diffs and rules use
    names as the schema declares them)."""
    by_case = [real for real in names if real.lower() == name.lower()]
    close = by_case[0] if by_case else closest(name, names)
    if close is None:
        return ""
    return f"Did you mean {close!r}? (names as the schema declares them, letter case included)"
