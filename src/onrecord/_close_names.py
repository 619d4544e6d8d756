"""Close-match hints for a misspelt name written by hand (a check, a rule's kind or
field, a task's key, a tool's argument): the one meant, so the user need not spot the
letter themselves. One rule for every "did you mean"."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

__all__ = ["closest", "misspelt_keys"]


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
