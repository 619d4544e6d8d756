"""Compare an end-state diff with an expected diff, one sentence per difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.envkit._rule_text import canon, clip, entries, show
from onrecord.envkit.diff import StateDiff
from onrecord.errors import InputError

__all__ = ["compare_diff"]


def compare_diff(actual: StateDiff, expected: StateDiff, ignore: Sequence[str] = ()) -> list[str]:
    """Every difference between two diffs as a sentence (empty when they agree).

    ``ignore`` names columns as ``"table.column"`` whose values do not matter (generated
    ids, timestamps); created and deleted rows are then matched without them.
    """
    if isinstance(ignore, str):  # one column; its letters must not be read one by one
        ignore = (ignore,)
    ignored: dict[str, set[str]] = {}
    for item in ignore:
        table, dot, column = item.partition(".") if isinstance(item, str) else ("", "", "")
        if not (table and dot and column):
            raise InputError(
                f"ignore names columns as 'table.column', got {item!r}; e.g. "
                "ignore=('allocations.id',)"
            )
        ignored.setdefault(table, set()).add(column)
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
