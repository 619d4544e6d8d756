"""Compare an end-state diff with an expected diff or with rules, explaining every mismatch.

Rules are plain JSON dicts (so a task can carry them); build them with the helpers::

    rules = [created("allocations", where={"claim_id": 17}, count=1),  # any id
             only_tables("allocations")]                               # nothing else

The shape of a rule is checked in ``_rule_shape``; ``compare_diff`` (a diff against an
expected diff) lives in ``_compare_diff`` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from onrecord._canonical import to_portable
from onrecord.envkit._compare_diff import compare_diff
from onrecord.envkit._diff_shape import checked_diff
from onrecord.envkit._rule_names import FactsReader, checked_names
from onrecord.envkit._rule_shape import (
    Count,
    Rule,
    checked_count,
    checked_rule,
    column_names,
    column_values,
    place,
    rule_list,
)
from onrecord.envkit._rule_text import KINDS, canon, entries, show, summary
from onrecord.envkit._sql import load_reals
from onrecord.envkit.diff import StateDiff

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


def created(table: str, where: Mapping[str, Any] | None = None, count: Count = 1) -> Rule:
    """``count`` rows created in ``table`` whose columns equal ``where`` (other columns,
    e.g. generated ids, may be anything). ``count`` is an int or ``{"min", "max"}``."""
    return _checked(_row_rule("created", table, where, count))


def deleted(table: str, where: Mapping[str, Any] | None = None, count: Count = 1) -> Rule:
    """``count`` rows deleted from ``table`` matching ``where``."""
    return _checked(_row_rule("deleted", table, where, count))


def changed(
    table: str,
    where: Mapping[str, Any] | None = None,
    to: Mapping[str, Any] | None = None,
    count: Count = 1,
    *,
    also: Collection[str] = (),
) -> Rule:
    """``count`` rows of ``table`` whose *before* row matches ``where`` changed, and
    their *after* row matches ``to``.

    With ``no_other_changes()`` such a row may change only in the columns named in ``to``
    and in ``also`` (columns that may take any value, e.g. ``also=("updated_at",)``);
    a rule with neither (any change) lets it change in any column."""
    rule = _row_rule("changed", table, where, count)
    rule["to"] = column_values(to, "to", _who("changed", table))
    if also:  # left out when empty: a rule written before ``also`` keeps its digest
        rule["also"] = column_names(also, f"{_who('changed', table)} also=")
    return _checked(rule)


def unchanged(table: str) -> Rule:
    """``table`` has no created, changed or deleted row."""
    return _checked({"rule": "unchanged", "table": table})


def only_tables(*tables: str) -> Rule:
    """No table other than ``tables`` changed."""
    rule = _checked({"rule": "only_tables", "tables": list(tables)})
    return {**rule, "tables": sorted(tables)}


def no_other_changes() -> Rule:
    """Every row change is accounted for by a created/changed/deleted rule in the list,
    and a changed row only in the columns its rule lets change (see :func:`changed`)."""
    return {"rule": "no_other_changes"}


def _row_rule(kind: str, table: str, where: Mapping[str, Any] | None, count: Count) -> Rule:
    who = _who(kind, table)
    return {
        "rule": kind,
        "table": table,
        "where": column_values(where, "where", who),
        "count": to_portable(checked_count(count, who)),
    }


def _who(kind: str, table: Any) -> str:
    """How a refusal names the builder call: ``changed('claims')``."""
    return f"{kind}({table!r})"


def _checked(rule: Rule) -> Rule:
    """``rule``, refused by its builder as ``check_rules`` would refuse it: a malformed
    rule is the caller's mistake, best named where it is written."""
    checked_rule(rule)
    return rule


def check_rules(
    diff: StateDiff,
    rules: Sequence[Rule],
    *,
    tables: Mapping[str, Collection[str]] | None = None,
    schema: FactsReader | None = None,
) -> list[str]:
    """Every rule the diff breaks, as a sentence (empty when all hold).

    An empty list is refused (``InputError``): it would pass any diff, which is never
    what a task means; "nothing may change" is ``[no_other_changes()]``. With
    ``tables`` (each table's column names), a rule naming a table or column not in it
    is refused too: it would match nothing, and ``count=0`` or ``unchanged`` pass.
    ``schema`` (``lambda: _rule_names.schema_facts(conn)``), read only when a name is refused,
    lets the refusal say what the name is: a view, a generated column, a rowid."""
    problems: list[str] = []
    covered: Covered = {}
    diff = checked_diff(diff)
    rules = rule_list(rules)
    for index, rule in enumerate(rules):
        where = place(index, len(rules))  # a task's rules are alike: say which one
        checked_rule(rule, where)
        if tables is not None:
            checked_names(rule, tables, schema, where)
    for rule in rules:
        kind = rule["rule"]
        if kind in KINDS:
            problems += _row_rule_problems(diff, rule, covered)
        elif kind == "unchanged":
            if rule["table"] in diff:
                problems.append(
                    f"{rule['table']} was expected to stay unchanged, but "
                    f"{summary(diff[rule['table']])}"
                )
        elif kind == "only_tables":
            extra = sorted(set(diff) - set(rule["tables"]))
            problems += [
                f"{name} changed ({summary(diff[name])}), but only "
                f"{', '.join(rule['tables']) or 'no table'} may change"
                for name in extra
            ]
    if any(rule.get("rule") == "no_other_changes" for rule in rules):
        problems += _uncovered(diff, covered)
    return problems


Covered = dict[tuple[str, str, bytes], set[str] | None]
"""Each row change some rule accounts for, by ``(table, kind, canon(entry))``, with the
columns a changed row may change in (``None``: any column, as for a created row)."""


def _row_rule_problems(diff: StateDiff, rule: Rule, covered: Covered) -> list[str]:
    table, kind, where = rule["table"], rule["rule"], rule["where"]
    matches = []
    for entry in entries(diff, table, kind):
        row = entry["before"] if kind == "changed" else entry
        if _matches(row, where):
            matches.append(entry)
            _cover(covered, (table, kind, canon(entry)), _allowed(rule))
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
            f"{table} key {show(entry['key'])} changed to {show(entry['after'])}, "
            f"but {show(rule['to'])} was expected"
            for entry in matches
            if not _matches(entry["after"], rule["to"])
        ]
    return problems


def _allowed(rule: Rule) -> set[str] | None:
    """The columns a row a ``rule`` matches may change in: a ``changed`` rule's ``to`` and
    ``also`` columns, or any column (``None``) for a changed rule naming neither."""
    if rule["rule"] != "changed":
        return None
    named = {*rule["to"], *rule.get("also", ())}
    return named or None


def _cover(covered: Covered, entry: tuple[str, str, bytes], allowed: set[str] | None) -> None:
    """Mark ``entry`` accounted for; two rules matching one row let the union change."""
    if entry in covered:
        before = covered[entry]
        allowed = None if before is None or allowed is None else before | allowed
    covered[entry] = allowed


def _uncovered(diff: StateDiff, covered: Covered) -> list[str]:
    problems = []
    for table in sorted(diff):
        for kind in KINDS:
            for entry in entries(diff, table, kind):
                mark = (table, kind, canon(entry))
                if mark not in covered:
                    problems.append(f"{table}: {kind} {show(entry)} is not allowed by any rule")
                elif kind == "changed":
                    problems += _other_columns(table, entry, covered[mark])
    return problems


def _other_columns(table: str, entry: Mapping[str, Any], allowed: set[str] | None) -> list[str]:
    """A sentence per column of a changed row that changed outside what its rules allow:
    a rule for one column must not let an agent rewrite the row's others unseen."""
    if allowed is None:
        return []
    before, after = entry["before"], entry["after"]
    moved = [
        column
        for column in sorted({*before, *after} - allowed)
        if canon(before.get(column)) != canon(after.get(column))
    ]
    return [
        f"{table} key {show(entry['key'])}: {column} changed from {show(before.get(column))} "
        f"to {show(after.get(column))}, which no rule allows (the changed() rules matching "
        f"the row let only {sorted(allowed)} change; name {column!r} in to= with its new "
        "value, or in also= to allow any)"
        for column in moved
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
    return " where " + " and ".join(f"{key} = {show(value)}" for key, value in where.items())


def _rows_text(found: list[Any]) -> str:
    shown = ", ".join(show(entry) for entry in found[:5])
    return shown + (f" and {len(found) - 5} more" if len(found) > 5 else "")
