"""How deep a portable value may nest: orjson writes at most 254 levels of lists and
objects, and a record holds each value some levels down."""

from __future__ import annotations

from typing import Any

import orjson

from onrecord.errors import PortabilityError

__all__ = ["MAX_NESTING", "TooDeep", "refuse_deep", "too_deep"]


MAX_NESTING = 200
"""Deepest nesting of lists and objects a portable value may have. orjson writes at most
254 levels, and a record holds a value some levels down (``steps.info[i]``, a trial's
check evidence): a deeper value would be refused only when the record is sealed, without
its path, or (deeper still) raise RecursionError."""

_HEADROOM = 254 - MAX_NESTING


def refuse_deep(copy: Any, raw: bytes | None, path: str) -> None:
    # Nesting never exceeds the number of brackets: two counts in C clear almost every
    # value; larger ones are written again inside _HEADROOM levels of lists.
    if raw is not None and raw.count(b"[") + raw.count(b"{") <= MAX_NESTING:
        return
    wrapped = copy
    for _ in range(_HEADROOM):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError:
        raise too_deep(path) from None


class TooDeep(PortabilityError):
    """A value nested deeper than ``MAX_NESTING`` (or containing itself)."""


def too_deep(path: str) -> PortabilityError:
    return TooDeep(
        f"{path} is nested more than {MAX_NESTING} levels of lists and objects deep (or "
        "contains itself), more than a record can hold; flatten it",
        path,
    )
