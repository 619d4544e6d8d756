"""Compare an end-state diff with an expected diff or with rules, explaining every mismatch.

Rules are plain JSON dicts (so a task can carry them); build them with the helpers::

    rules = [created("allocations", where={"claim_id": 17}, count=1),  # any id
             only_tables("allocations")]                               # nothing else
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord._canonical import canonical_bytes, to_portable
from onrecord.envkit._sql import BLOB_TAG, encode_reals, load_reals, portable_value
from onrecord.envkit._text import RawText
from onrecord.envkit.diff import StateDiff
from onrecord.errors import InputError

__all__ = [
    "Rule",
    "changed",
    "check_rules",
    "compare_diff",
    "created",
    "deleted",
    "no_other_changes",
    "only_tables",
    "unchanged",
]

Rule = dict[str, Any]


def _canon(value: Any) -> bytes:
    """Canonical JSON with infinite REALs as ``{"$real": ...}``: plain JSON writes them
    as ``null``, and a row holding an infinity would then match, or read as, a NULL."""
    return canonical_bytes(encode_reals(value))


Count = int | Mapping[str, int]
_KINDS = ("created", "changed", "deleted")
_FIELDS: dict[str, tuple[str, ...]] = {
    "created": ("table", "where", "count"),
    "deleted": ("table", "where", "count"),
    "changed": ("table", "where", "count", "to"),
    "unchanged": ("table",),
    "only_tables": ("tables",),
    "no_other_changes": (),
}
"""The fields each kind of rule needs."""


def created(table: str, where: Mapping[str, Any] | None = None, count: Count = 1) -> Rule:
    """``count`` rows created in ``table`` whose columns equal ``where`` (other columns,
    e.g. generated ids, may be anything). ``count`` is an int or ``{"min", "max"}``."""
    return _row_rule("created", table, where, count)


def deleted(table: str, where: Mapping[str, Any] | None = None, count: Count = 1) -> Rule:
    """``count`` rows deleted from ``table`` matching ``where``."""
    return _row_rule("deleted", table, where, count)


def changed(
    table: str,
    where: Mapping[str, Any] | None = None,
    to: Mapping[str, Any] | None = None,
    count: Count = 1,
) -> Rule:
    """``count`` rows of ``table`` whose *before* row matches ``where`` changed, and
    their *after* row matches ``to``."""
    return {**_row_rule("changed", table, where, count), "to": _column_values(to)}


def unchanged(table: str) -> Rule:
    """``table`` has no created, changed or deleted row."""
    return {"rule": "unchanged", "table": table}


def only_tables(*tables: str) -> Rule:
    """No table other than ``tables`` changed."""
    return {"rule": "only_tables", "tables": sorted(tables)}


def no_other_changes() -> Rule:
    """Every row change is accounted for by a created/changed/deleted rule in the list."""
    return {"rule": "no_other_changes"}


def _row_rule(kind: str, table: str, where: Mapping[str, Any] | None, count: Count) -> Rule:
    return {
        "rule": kind,
        "table": table,
        "where": _column_values(where),
        "count": to_portable(_checked_count(count, f"{kind}({table!r})")),
    }


def _checked_count(count: Any, where: str) -> Count:
    """``count`` if it is a valid count: a misspelt bound (``{"min": 1, "mx": 1}``)
    would otherwise be no bound at all, and accept any number of rows."""
    if type(count) is int and count >= 0:
        return count
    if isinstance(count, Mapping):
        known = set(count) <= {"min", "max"}
        bounds = list(count.values())
        if (
            known
            and all(type(bound) is int and bound >= 0 for bound in bounds)
            and count.get("min", 0) <= count.get("max", count.get("min", 0))
        ):
            return count
    raise InputError(
        f"{where}: count must be a non-negative int or {{'min': a, 'max': b}} with "
        f"non-negative ints a <= b (either may be left out), got {count!r}"
    )


def _checked_rule(rule: Any) -> None:
    """Refuse a hand-written rule (e.g. from a task's JSON) that would be misread."""
    kind = rule.get("rule") if isinstance(rule, Mapping) else None
    if kind not in _FIELDS:
        raise InputError(
            f"unknown rule {rule!r}; build rules with created(), changed(), "
            "deleted(), unchanged(), only_tables() or no_other_changes()"
        )
    fields = _FIELDS[kind]
    missing = [name for name in fields if name not in rule]
    if missing:
        raise InputError(f"rule {rule!r} lacks the fields {missing}; build it with {kind}()")
    tables = rule.get("tables")
    if ("table" in fields and not isinstance(rule["table"], str)) or (
        "tables" in fields
        and not (isinstance(tables, list | tuple) and all(isinstance(n, str) for n in tables))
    ):
        raise InputError(f"rule {rule!r}: name tables as strings; build it with {kind}()")
    for name in ("where", "to"):
        if name in fields and not isinstance(rule[name], Mapping):
            raise InputError(f"rule {rule!r}: field {name!r} must map columns to values")
    if "count" in fields:
        _checked_count(rule["count"], f"rule {rule!r}")


def _column_values(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """Column values as the diff holds them: SQLite stores a bool as 0 or 1, a BLOB
    arrives as ``{"$blob": hex}`` and TEXT that is not UTF-8 as ``{"$text": hex}``
    (``bytes`` and ``RawText`` are turned into those here)."""
    given = dict(values or {})
    portable: dict[str, Any] = to_portable(
        {
            column: {BLOB_TAG: bytes(value).hex()}
            if isinstance(value, bytes | bytearray | memoryview)
            else portable_value(value)
            if type(value) is RawText
            else int(value)
            if type(value) is bool
            else encode_reals(value)  # an infinity as {"$real": ...}: JSON has none
            for column, value in given.items()
        },
        "$.where",
    )
    return portable


def check_rules(diff: StateDiff, rules: Sequence[Rule]) -> list[str]:
    """Every rule the diff breaks, as a sentence (empty when all hold).

    An empty list is refused (``InputError``): it would pass any diff, which is never
    what a task means; "nothing may change" is ``[no_other_changes()]``."""
    problems: list[str] = []
    covered: set[tuple[str, str, bytes]] = set()
    rules = _rule_list(rules)
    for rule in rules:
        _checked_rule(rule)
    for rule in rules:
        kind = rule["rule"]
        if kind in _KINDS:
            problems += _row_rule_problems(diff, rule, covered)
        elif kind == "unchanged":
            if rule["table"] in diff:
                problems.append(
                    f"{rule['table']} was expected to stay unchanged, but "
                    f"{_summary(diff[rule['table']])}"
                )
        elif kind == "only_tables":
            extra = sorted(set(diff) - set(rule["tables"]))
            problems += [
                f"{name} changed ({_summary(diff[name])}), but only "
                f"{', '.join(rule['tables']) or 'no table'} may change"
                for name in extra
            ]
    if any(rule.get("rule") == "no_other_changes" for rule in rules):
        problems += _uncovered(diff, covered)
    return problems


def _rule_list(rules: Any) -> list[Any]:
    """``rules`` as a list, read once (a generator checked and then applied would be
    empty the second time, and pass any diff)."""
    if isinstance(rules, str | bytes | Mapping):
        raise InputError(f"rules must be a list of rules, got {type(rules).__name__}")
    try:
        listed = list(rules)
    except TypeError:
        raise InputError(f"rules must be a list of rules, got {type(rules).__name__}") from None
    if not listed:
        raise InputError(
            "rules is empty: no rule to check, so any diff would pass; list at least one "
            "rule (to require that nothing changes, use [no_other_changes()])"
        )
    return listed


def _entries(diff: StateDiff, table: str, kind: str) -> list[Any]:
    return list(diff.get(table, {}).get(kind, []))


def _row_rule_problems(
    diff: StateDiff, rule: Rule, covered: set[tuple[str, str, bytes]]
) -> list[str]:
    table, kind, where = rule["table"], rule["rule"], rule["where"]
    matches = []
    for entry in _entries(diff, table, kind):
        row = entry["before"] if kind == "changed" else entry
        if _matches(row, where):
            matches.append(entry)
            covered.add((table, kind, _canon(entry)))
    problems = []
    low, high = _bounds(rule["count"])
    if not low <= len(matches) <= high:
        problems.append(
            f"expected {_count_text(rule['count'])} {_row_word(high)} {kind} in "
            f"{table}{_where_text(where)}; found {len(matches)}"
            + (f": {_rows_text(matches)}" if matches else "")
        )
    if kind == "changed":
        problems += [
            f"{table} key {_show(entry['key'])} changed to {_show(entry['after'])}, "
            f"but {_show(rule['to'])} was expected"
            for entry in matches
            if not _matches(entry["after"], rule["to"])
        ]
    return problems


def _uncovered(diff: StateDiff, covered: set[tuple[str, str, bytes]]) -> list[str]:
    return [
        f"{table}: {kind} {_show(entry)} is not allowed by any rule"
        for table in sorted(diff)
        for kind in _KINDS
        for entry in _entries(diff, table, kind)
        if (table, kind, _canon(entry)) not in covered
    ]


def _matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    # A hand-written rule dict may still say True: SQLite holds it as 1; a diff holds an
    # infinite REAL as a float.
    where = {
        key: int(value) if type(value) is bool else load_reals(value)
        for key, value in where.items()
    }
    return all(
        (column in row and row[column] == value and type(row[column]) is type(value))
        or (column in row and _numbers_equal(row[column], value))
        for column, value in where.items()
    )


def _numbers_equal(left: Any, right: Any) -> bool:
    # A rule written with 5 matches a REAL column holding 5.0: rules are about amounts.
    numeric = (int, float)
    return type(left) in numeric and type(right) in numeric and left == right


def _bounds(count: Count) -> tuple[int, float]:
    if isinstance(count, int):
        return count, count
    return count.get("min", 0), count.get("max", float("inf"))


def _count_text(count: Count) -> str:
    if isinstance(count, int):
        return f"exactly {count}"
    low, high = _bounds(count)
    return f"at least {low}" if high == float("inf") else f"between {low} and {int(high)}"


def _row_word(high: float) -> str:
    return "row" if high == 1 else "rows"


def _where_text(where: Mapping[str, Any]) -> str:
    if not where:
        return ""
    return " where " + " and ".join(f"{key} = {_show(value)}" for key, value in where.items())


def _rows_text(entries: list[Any]) -> str:
    shown = ", ".join(_show(entry) for entry in entries[:5])
    return shown + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")


def _summary(table_diff: Mapping[str, list[Any]]) -> str:
    parts = [f"{len(table_diff[kind])} {kind}" for kind in _KINDS if table_diff.get(kind)]
    return "rows: " + ", ".join(parts)


def _show(value: Any) -> str:
    return _canon(value).decode()


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
                table, kind, _entries(actual, table, kind), _entries(expected, table, kind), skip
            )
        problems += _compare_changes(
            table, _entries(actual, table, "changed"), _entries(expected, table, "changed"), skip
        )
    return problems


def _project(row: Mapping[str, Any], skip: set[str]) -> bytes:
    return _canon({key: value for key, value in row.items() if key not in skip})


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
                f"{table}: expected a {kind} row {projected.decode()}, which the "
                f"episode did not {kind[:-1]}"
            )
    return missing + [
        f"{table}: the episode {kind} the row {row.decode()}, which was not expected"
        for row in remaining
    ]


def _compare_changes(
    table: str, actual: list[Any], expected: list[Any], skip: set[str]
) -> list[str]:
    have = {_canon(entry["key"]): entry for entry in actual}
    want = {_canon(entry["key"]): entry for entry in expected}
    problems = []
    for key in sorted(want.keys() | have.keys()):
        label = f"{table} key {key.decode()}"
        if key not in have:
            problems.append(
                f"{label}: expected a change to {_show(want[key]['after'])}, but "
                "the row was not changed"
            )
        elif key not in want:
            problems.append(
                f"{label}: changed from {_show(have[key]['before'])} to "
                f"{_show(have[key]['after'])}, which was not expected"
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
            if column not in skip and _canon(got) != _canon(wanted):
                verb = "was" if side == "before" else "became"
                problems.append(f"{label}: {column} {verb} {_show(got)}, expected {_show(wanted)}")
    return problems
