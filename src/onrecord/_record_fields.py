"""What a saved record's field must be, said the one way every loader and ``onrecord
verify`` say it: ``WHERE: 'FIELD' must be MUST, not VALUE`` (``field_error``), and the
shapes that most fields share (a count, a sha256 digest).

Here, not in ``onrecord.cli``, so that a Python loader (``Comparison.from_dict``) and
``verify`` refuse a field with one check and one message."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from onrecord.errors import SchemaError

__all__ = ["field_error", "is_count", "is_digest", "must_be"]

_DIGEST = re.compile("[0-9a-f]{64}")


def is_digest(value: Any) -> bool:
    """Whether ``value`` is a sha256 digest as onrecord writes one: 64 lowercase hex."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def is_count(value: Any) -> bool:
    """Whether ``value`` is a count as a record saves one: an int, 0 or more."""
    return type(value) is int and value >= 0  # bool is an int, and not a count


def must_be(field: str, must: str, value: Any) -> str:
    """``'FIELD' must be MUST, not VALUE``, the value as the file says it."""
    # true/false as the file says them: "not True" read as a Python value, and `true`
    # passes for a count in Python (bool is an int) but is none.
    shown = f"{str(value).lower()} (a boolean)" if isinstance(value, bool) else f"{value!r:.60}"
    shown = "missing (or null)" if value is None else shown
    return f"'{field}' must be {must}, not {shown}"


def field_error(where: str | Path, field: str, must: str, value: Any) -> SchemaError:
    """``WHERE: 'FIELD' must be MUST, not VALUE``: a field of a saved record refused;
    ``WHERE`` is its file, or what a Python loader was reading."""
    return SchemaError(f"{where}: {must_be(field, must, value)}")
