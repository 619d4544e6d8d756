"""The shape of a rule: which fields each kind needs, what a count may be, and how
``where``/``to`` values are written so they compare with a diff's values. A rule that
would be misread (a misspelt bound would be no bound at all) is an ``InputError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord._canonical import to_portable
from onrecord._close_names import closest, misspelt_keys
from onrecord.envkit._sql import BLOB_TAG, encode_reals, portable_value
from onrecord.envkit._text import RawText
from onrecord.errors import InputError

__all__ = [
    "FIELDS",
    "OPTIONAL",
    "Count",
    "checked_count",
    "checked_rule",
    "column_names",
    "column_values",
    "place",
    "rule_label",
    "rule_list",
]

Count = int | Mapping[str, int]
Rule = dict[str, Any]
FIELDS: dict[str, tuple[str, ...]] = {
    "created": ("table", "where", "count"),
    "deleted": ("table", "where", "count"),
    "changed": ("table", "where", "count", "to"),
    "unchanged": ("table",),
    "only_tables": ("tables",),
    "no_other_changes": (),
}
"""The fields each kind of rule needs."""
OPTIONAL: dict[str, tuple[str, ...]] = {"changed": ("also",)}
"""The fields a kind of rule may leave out: a rule without them reads as before they
existed, so rules written (and recorded) then keep their meaning and their digest."""


def checked_count(count: Any, where: str) -> Count:
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
    unknown = (
        [key for key in count if key not in ("min", "max")] if isinstance(count, Mapping) else []
    )
    raise InputError(
        f"{where}: count must be a non-negative int or {{'min': a, 'max': b}} with "
        f"non-negative ints a <= b (either may be left out), got {count!r}"
        + (f"; its bounds are min and max, not {unknown}" if unknown else "")
        + misspelt_keys(unknown, ("min", "max"))
    )


def _kind_hint(rule: Any) -> str:
    """Which kind a misspelt one (``create``) or a misspelt ``rule`` key meant."""
    if not isinstance(rule, Mapping):
        return ""
    if "rule" in rule:
        match = closest(rule["rule"], FIELDS)
        return f": no kind {rule['rule']!r}" + (f" (did you mean {match!r}?)" if match else "")
    keys = [key for key in rule if isinstance(key, str) and closest(key, ["rule"])]
    return f": no 'rule' field{misspelt_keys(keys, ['rule'])}"


def place(index: int, total: int) -> str:
    """Where a rule stands in its list, as refusals name it: ``3 of 7 (rules[2])``."""
    return f"{index + 1} of {total} (rules[{index}])"


def rule_label(rule: Any, where: str = "") -> str:
    """How a refusal names ``rule``: by its ``place`` in the list first, since a task's
    rules are often written alike and the quoted rule alone does not say which one it
    is, then as written (``rule 3 of 7 (rules[2]) {'rule': 'created', ...}``)."""
    return f"rule {where} {rule!r}" if where else f"rule {rule!r}"


def checked_rule(rule: Any, where: str = "") -> None:
    """Refuse a hand-written rule (e.g. from a task's JSON) that would be misread;
    ``where`` is its ``place`` in the list, named first in the refusal."""
    label = rule_label(rule, where)
    kind = rule.get("rule") if isinstance(rule, Mapping) else None
    if kind not in FIELDS:
        raise InputError(
            f"unknown {label}{_kind_hint(rule)}; build rules with created(), "
            "changed(), deleted(), unchanged(), only_tables() or no_other_changes()"
        )
    fields = FIELDS[kind]
    allowed = (*fields, *OPTIONAL.get(kind, ()))
    missing = [name for name in fields if name not in rule]
    # A misspelt field ("too" for "to", "counts" for "count") would be ignored, or
    # read as the field it misspells being missing: name it, and the field meant.
    unknown = sorted(set(rule) - {"rule", *allowed}, key=repr)
    if unknown:
        raise InputError(
            f"{label} has the unknown fields {unknown}"
            f"{misspelt_keys(unknown, missing or allowed)}; {kind}() rules have only "
            f"the fields {['rule', *allowed]}"
            + (f", and this one lacks {missing}" if missing else "")
        )
    if missing:
        # A rule written by hand (a --tasks-file) cannot call the helper, which fills
        # in defaults such as count=1: name every field and what count means.
        counted = " (count: the exact number of rows, or {min = a, max = b})"
        raise InputError(
            f"{label} lacks the fields {missing}; build it with {kind}(), or, "
            f"written out in a task file, give it every field of {list(fields)}"
            + (counted if "count" in missing else "")
        )
    tables = rule.get("tables")
    if ("table" in fields and not isinstance(rule["table"], str)) or (
        "tables" in fields
        and not (isinstance(tables, list | tuple) and all(isinstance(n, str) for n in tables))
    ):
        raise InputError(f"{label}: name tables as strings; build it with {kind}()")
    for name in ("where", "to"):
        if name in fields:
            _column_map(rule[name], f"{label}: field {name!r}")
    if "also" in rule:
        column_names(rule["also"], f"{label}: field 'also'")
    if "count" in fields:
        checked_count(rule["count"], label)


def _column_map(values: Any, label: str) -> Mapping[str, Any]:
    """``values`` if it maps column names (strings) to values: a non-string key names
    no column, so ``count=0`` or an empty match would pass whatever the episode did."""
    if not isinstance(values, Mapping):
        raise InputError(
            f"{label} must map column names to values, like {{'status': 'paid'}}; "
            f"got {type(values).__name__} {values!r}"
        )
    odd = [key for key in values if not isinstance(key, str)]
    if odd:
        raise InputError(
            f"{label} names columns as strings, as the schema declares them; got the keys {odd!r}"
        )
    return values


def column_names(names: Any, label: str) -> list[str]:
    """``names`` (``also=``'s columns) as a sorted list without repeats, so one rule has
    one spelling; a string would be read letter by letter, so it is refused."""
    if isinstance(names, str) or not isinstance(names, list | tuple | set | frozenset):
        raise InputError(
            f"{label} must be a list of column names, like ['updated_at']; got {names!r}"
        )
    odd = [name for name in names if not isinstance(name, str) or not name]
    if odd:
        raise InputError(f"{label} names columns as non-empty strings; got {odd!r}")
    return sorted(set(names))


def column_values(
    values: Mapping[str, Any] | None, field: str = "where", owner: str = "a rule"
) -> dict[str, Any]:
    """Column values as the diff holds them: SQLite stores a bool as 0 or 1, a BLOB
    arrives as ``{"$blob": hex}`` and TEXT that is not UTF-8 as ``{"$text": hex}``
    (``bytes`` and ``RawText`` are turned into those here). ``owner`` and ``field``
    name the argument in a refusal (``created('claims') where=``)."""
    given = dict(_column_map({} if values is None else values, f"{owner} {field}="))
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
        f"$.{field}",
    )
    return portable


def rule_list(rules: Any) -> list[Any]:
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
