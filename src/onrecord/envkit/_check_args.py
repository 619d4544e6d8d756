"""The arguments of the check builders (``check``, ``read_before_write_check``), refused
where they are written: otherwise a name that is not a string failed only when the
decorated function was defined, and a table that is not a name only when an episode was
graded, as an evaluator error in every trial of a run."""

from __future__ import annotations

from typing import Any

from onrecord.errors import InputError

__all__ = ["check_label", "check_target"]


def check_label(builder: str, field: str, value: Any) -> str:
    """``value`` if it is a check's name or version: a non-empty string without
    surrounding spaces, as ``OutcomeCheck`` requires."""
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise InputError(
            f"{builder}() {field} must be a non-empty string without surrounding spaces, "
            f"got {value!r}" + (f"; write it as {str(value)!r}" if _numeric(value) else "")
        )
    return value


def check_target(builder: str, field: str, value: Any) -> None:
    """``value`` is what ``read_before_write`` reads as ``read``/``write``: a table name,
    or ``(table, key)``."""
    table = value[0] if isinstance(value, tuple | list) and len(value) == 2 else value
    if not isinstance(table, str) or not table:
        raise InputError(
            f"{builder}() {field} must be a table name or a (table, key) pair, e.g. "
            f"{field}='case_notes' or {field}=('case_notes', 17); got {value!r}"
        )


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
