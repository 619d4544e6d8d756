"""Close-match hints for a misspelt key of something written by hand: a rule's kind or
fields, a count's bounds, a task's ``expected_output`` key, a tool's example arguments.
Without them a typo read as a missing field ("lacks the fields ['count']" for
``counts = 1``), or as nothing at all, and the user had to spot the letter themselves."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["closest", "misspelt_keys", "unknown_example_arguments"]


def closest(name: Any, known: Collection[str]) -> str | None:
    """The known name ``name`` most likely misspells, or None when none is close."""
    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return close[0] if close else None


def misspelt_keys(unknown: Collection[Any], known: Collection[str]) -> str:
    """``" (did you mean 'count' for 'counts'?)"``: each unknown key with its closest
    known one, or an empty string when no unknown key is close to a known one."""
    pairs = [
        f"{match!r} for {key!r}" for key in unknown if (match := closest(key, known)) is not None
    ]
    return f" (did you mean {', '.join(pairs)}?)" if pairs else ""


def unknown_example_arguments(name: str, example: Mapping[str, Any], schema: Any) -> str | None:
    """The refusal of an ``example=`` naming an argument the tool does not take: the
    schema check names the *required* argument it lacks first, so ``skuu`` for ``sku``
    read as "missing the required field 'sku'" with no word on the ``skuu`` given."""
    known = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    unknown = [key for key in example if key not in known]
    if not unknown or not known:
        return None
    return (
        f"tool {name!r}: example has the unknown arguments {unknown}"
        f"{misspelt_keys(unknown, list(known))}; the tool takes {sorted(known)}"
    )
