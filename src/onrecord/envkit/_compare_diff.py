"""Compare an end-state diff with an expected diff, one sentence per difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.envkit._diff_shape import checked_diff
from onrecord.envkit._rule_text import canon, clip, entries, show
from onrecord.envkit.diff import StateDiff
from onrecord.errors import InputError

__all__ = ["compare_diff"]


def compare_diff(actual: StateDiff, expected: StateDiff, ignore: Sequence[str] = ()) -> list[str]:
    """Every difference between two diffs as a sentence (empty when they agree).

    ``ignore`` names columns as ``"table.column"`` whose values do not matter (generated
    ids, timestamps); created and deleted rows are then matched without them. A table
    whose name holds dots is matched whole (``"a.b.c"`` is column ``c`` of ``a.b``); an
    entry naming no table or column of either diff is refused: it would ignore nothing.
    """
    actual, expected = checked_diff(actual, "actual"), checked_diff(expected, "expected")
    ignored = _ignored(ignore, actual, expected)
    problems: list[str] = []
    for table in sorted(set(actual) | set(expected)):
        skip = ignored.get(table, set())
        for kind in ("created", "deleted"):
            problems += _compare_rows(
                table, kind, entries(actual, table, kind), entries(expected, table, kind), skip
            )
        problems += _compare_changes(
            table, entries(actual, table, "changed"), entries(expected, table, "changed"), skip
        )
    return problems


def _ignored(ignore: Any, actual: StateDiff, expected: StateDiff) -> dict[str, set[str]]:
    """``ignore`` as each table's ignored columns, split at the dot that ends a table
    either diff has (the longest such table, when names nest like ``a`` and ``a.b``)."""
    if isinstance(ignore, str):  # one column; its letters must not be read one by one
        ignore = (ignore,)
    if not isinstance(ignore, Sequence):
        raise InputError(
            f"ignore must be a list of 'table.column' names, got {type(ignore).__name__}"
        )
    columns = {table: _columns(actual, expected, table) for table in {*actual, *expected}}
    ignored: dict[str, set[str]] = {}
    for item in ignore:
        table, column = _split(item, columns)
        ignored.setdefault(table, set()).add(column)
    return ignored


def _split(item: Any, columns: Mapping[str, set[str] | None]) -> tuple[str, str]:
    # A dot with a name on both sides, the last first: the longest table first.
    dots = (
        [at for at in range(len(item) - 2, 0, -1) if item[at] == "."]
        if isinstance(item, str)
        else []
    )
    if not dots:
        raise InputError(
            f"ignore names columns as 'table.column', got {item!r}; e.g. ignore=('allocations.id',)"
        )
    splits = [(item[:at], item[at + 1 :]) for at in dots if item[:at] in columns]
    for table, column in splits:
        known = columns[table]
        if known is None or column in known:
            return table, column
    if splits:
        table, column = splits[0]
        raise InputError(
            f"ignore entry {item!r}: {table} has no column {column!r} in either diff, so "
            f"it would ignore nothing; its columns: {sorted(columns[table] or ())}"
        )
    raise InputError(
        f"ignore entry {item!r} names no table of either diff, so it would ignore "
        f"nothing; the diffs' tables: {sorted(columns)} (write 'table.column')"
    )


def _columns(actual: StateDiff, expected: StateDiff, table: str) -> set[str] | None:
    """Every column a row of ``table`` shows in either diff; ``None`` when no row does
    (its columns cannot be told, and there is nothing to ignore in it)."""
    rows = [
        row
        for diff in (actual, expected)
        for kind in ("created", "deleted")
        for row in entries(diff, table, kind)
    ] + [
        entry[side]
        for diff in (actual, expected)
        for entry in entries(diff, table, "changed")
        for side in ("before", "after")
    ]
    return {column for row in rows for column in row} if rows else None


def _project(row: Mapping[str, Any], skip: set[str]) -> bytes:
    return canon({key: value for key, value in row.items() if key not in skip})


def _compare_rows(
    table: str, kind: str, actual: list[Any], expected: list[Any], skip: set[str]
) -> list[str]:
    remaining = [_project(row, skip) for row in actual]
    missing = []
    for row in expected:
        projected = _project(row, skip)
        if projected in remaining:
            remaining.remove(projected)
        else:
            missing.append(
                f"{table}: expected a {kind} row {clip(projected.decode())}, which the "
                f"episode did not {kind[:-1]}"
            )
    return missing + [
        f"{table}: the episode {kind} the row {clip(row.decode())}, which was not expected"
        for row in remaining
    ]


def _compare_changes(
    table: str, actual: list[Any], expected: list[Any], skip: set[str]
) -> list[str]:
    have = {canon(entry["key"]): entry for entry in actual}
    want = {canon(entry["key"]): entry for entry in expected}
    problems = []
    for key in sorted(want.keys() | have.keys()):
        label = f"{table} key {clip(key.decode())}"
        if key not in have:
            problems.append(
                f"{label}: expected a change to {show(want[key]['after'])}, but "
                "the row was not changed"
            )
        elif key not in want:
            problems.append(
                f"{label}: changed from {show(have[key]['before'])} to "
                f"{show(have[key]['after'])}, which was not expected"
            )
        else:
            problems += _column_problems(label, have[key], want[key], skip)
    return problems


def _column_problems(
    label: str, have: Mapping[str, Any], want: Mapping[str, Any], skip: set[str]
) -> list[str]:
    problems = []
    for side in ("before", "after"):
        for column in sorted(set(have[side]) | set(want[side])):
            got, wanted = have[side].get(column), want[side].get(column)
            if column not in skip and canon(got) != canon(wanted):
                verb = "was" if side == "before" else "became"
                problems.append(f"{label}: {column} {verb} {show(got)}, expected {show(wanted)}")
    return problems
