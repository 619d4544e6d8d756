"""The shape of a diff handed to ``check_rules`` or ``compare_diff``: refused, naming the
part that is wrong, before any rule reads it. A hand-built diff (a task's expected diff,
a test's) that is ``None`` or holds ``{"created": 5}`` otherwise failed deep inside with a
``TypeError``, and one holding a misspelt kind (``"create"``) was read as no change."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord.envkit._rule_text import KINDS
from onrecord.envkit.diff import StateDiff
from onrecord.errors import InputError

__all__ = ["checked_diff"]

_SHAPE = (
    "a diff maps each table to {'created': [row], 'changed': [{'key', 'before', "
    "'after'}], 'deleted': [row]}, as world.diff() returns it"
)


def checked_diff(diff: Any, name: str = "diff") -> StateDiff:
    """``diff`` if it has a diff's shape; an ``InputError`` naming ``name`` otherwise."""
    if not isinstance(diff, Mapping):
        raise InputError(f"{name} must be a diff, got {type(diff).__name__}; {_SHAPE}")
    for table, changes in diff.items():
        where = f"{name}[{table!r}]"
        if not isinstance(table, str) or not isinstance(changes, Mapping):
            raise InputError(f"{where} must map a table name to its changes; {_SHAPE}")
        unknown = sorted(set(changes) - set(KINDS), key=repr)
        if unknown:
            raise InputError(
                f"{where} has the unknown kinds {unknown}; the kinds of change are "
                f"{list(KINDS)} ({_SHAPE})"
            )
        for kind, listed in changes.items():
            _check_entries(f"{where}[{kind!r}]", kind, listed)
    return diff  # type: ignore[return-value]  # checked: it is a StateDiff


def _check_entries(where: str, kind: str, listed: Any) -> None:
    if not isinstance(listed, list | tuple):
        raise InputError(f"{where} must be a list, got {type(listed).__name__}; {_SHAPE}")
    for index, entry in enumerate(listed):
        if not isinstance(entry, Mapping):
            raise InputError(
                f"{where}[{index}] must be a row (a dict of columns), got "
                f"{type(entry).__name__}; {_SHAPE}"
            )
        if kind == "changed" and not (
            "key" in entry
            and isinstance(entry.get("before"), Mapping)
            and isinstance(entry.get("after"), Mapping)
        ):
            raise InputError(
                f"{where}[{index}] must hold 'key', and 'before' and 'after' rows; "
                f"got the fields {sorted(map(str, entry))}"
            )
