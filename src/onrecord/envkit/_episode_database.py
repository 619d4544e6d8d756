"""What ``onrecord verify DIR`` checks of a saved episode's audit and diff against its
end-state database.

``ToolEpisode.load`` checks that ``diff.json`` is the diff ``audit.json``'s history folds
to; both could be rewritten together (and re-sealed) to claim other rows. ``final.sqlite``
holds that history too (its audit tables: ``save_episode`` copies the whole database),
and its user tables, whose state digest ``verify`` checks against the manifest, are the
end state itself. So, with the database:

- ``audit.json``'s tables and events must be the history ``final.sqlite`` holds;
- every row the diff says was created or changed must be in ``final.sqlite`` as the diff
  gives it after the change, and every row it says was deleted must be absent.

The start state is not in the episode (only its digest, the snapshot's), so a diff's
``before`` rows are checked against the history alone. The lookups touch only the rows
the diff lists, each by its key.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from onrecord.envkit._episode_parts import layouts, same
from onrecord.envkit._sql import (
    Table,
    internal,
    key_collations,
    key_equals,
    native_value,
    quote,
    row_dict,
    sql_param,
)
from onrecord.envkit._text import lossless
from onrecord.envkit.audit import audit_tables, events_from_raw, read_audit
from onrecord.envkit.diff import StateDiff
from onrecord.errors import ConsistencyError

if TYPE_CHECKING:
    from onrecord.envkit.episode import ToolEpisode

__all__ = ["check_database_agrees"]


def check_database_agrees(episode: ToolEpisode, conn: sqlite3.Connection) -> None:
    """Raise ``ConsistencyError`` naming the part (audit.json, diff.json) that disagrees
    with the end-state database ``conn`` (``episode.connect()``)."""
    path = episode.path
    try:
        layout = audit_tables(conn)
        held = {table.name: table for table, _ in layout}
        if not same(_layout_record(held), episode._audit["tables"]):
            _refuse(path / "audit.json", "tables", "the audited tables of final.sqlite")
        events = events_from_raw(read_audit(conn, layout=layout))
        if not same(events, episode.audit):
            _refuse(path / "audit.json", "events", _first_difference(events, episode.audit))
        _check_end_rows(conn, episode.diff, layouts(episode._audit), path / "diff.json")
    except (sqlite3.OperationalError, sqlite3.IntegrityError) as exc:  # no such table, ...
        raise ConsistencyError(
            f"{path / 'final.sqlite'} does not hold the audit history and tables the "
            f"episode's audit.json lists ({exc}); the episode was changed after saving: "
            "restore it from a copy"
        ) from exc


def _layout_record(tables: Mapping[str, Table]) -> dict[str, dict[str, list[str]]]:
    return {
        name: {"columns": list(table.columns), "key": list(table.key)}
        for name, table in tables.items()
    }


def _first_difference(held: list[Any], saved: list[Any]) -> str:
    index = next(
        (i for i, (a, b) in enumerate(zip(held, saved, strict=False)) if not same(a, b)),
        min(len(held), len(saved)),
    )
    return (
        f"the audit history of final.sqlite ({len(held)} events; they differ from event {index} on)"
    )


def _check_end_rows(
    conn: sqlite3.Connection, diff: StateDiff, tables: Mapping[str, Table], where: Path
) -> None:
    """Every row the diff created or changed is in the end state as the diff gives it;
    every row it deleted is not."""
    for name, changes in diff.items():
        row_at = _lookup(conn, tables[name])  # the diff's tables are the audit's (load)
        for row in [*changes["created"], *(change["after"] for change in changes["changed"])]:
            found = row_at(row)
            if found is None or not same(found, row):
                _refuse(where, "diff", f"the row of {name!r} in final.sqlite with its key")
        for row in changes["deleted"]:
            if row_at(row) is not None:
                _refuse(where, "diff", f"final.sqlite, which still holds a deleted row of {name!r}")


def _lookup(
    conn: sqlite3.Connection, table: Table
) -> Callable[[Mapping[str, Any]], dict[str, Any] | None]:
    """A function from a diff row to the end-state row with its key (compared byte for
    byte, as the diff keys rows), as a diff row, or ``None``."""
    collations = key_collations(conn, "main", table)
    select = f"SELECT {table.select_list()} FROM main.{quote(table.name)} WHERE "

    def where(placeholders: Sequence[str]) -> str:
        # Named: a key with its own collation is compared twice (``key_equals``).
        terms = zip(table.key, placeholders, collations, strict=True)
        return " AND ".join(key_equals(column, "", right, how) for column, right, how in terms)

    plain = select + where([f":k{index}" for index in range(len(table.key))])

    def row_at(row: Mapping[str, Any]) -> dict[str, Any] | None:
        bound = [sql_param(native_value(row[column])) for column in table.key]
        params = {f"k{index}": value for index, (_, value) in enumerate(bound)}
        sql = plain
        if any(placeholder != "?" for placeholder, _ in bound):  # TEXT that is not UTF-8
            sql = select + where([p.replace("?", f":k{i}") for i, (p, _) in enumerate(bound)])
        found = lossless(conn, lambda: conn.execute(internal(sql), params).fetchone())
        return None if found is None else row_dict(table, found)

    return row_at


def _refuse(path: Path, field: str, other: str) -> NoReturn:
    raise ConsistencyError(
        f"{path}: field '{field}' disagrees with {other}: the episode was changed and "
        "re-sealed after saving; restore it from a copy"
    )
