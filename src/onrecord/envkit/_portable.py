"""``to_portable`` for tool arguments and results, with a C fast path.

``to_portable`` walks every value in Python; a tool result (a claim with its lines and
allocations) has dozens. Here orjson writes and re-reads the value in C instead, and
the copy is used only when it equals the original: orjson refuses subclasses (they go
to ``default``, which refuses everything), unknown types and integers beyond 64 bits;
NaN and infinities come back as ``None``, enums and UUIDs as their values, tuples as
lists, and none of those compare equal, so each of them takes ``to_portable``, which
then accepts or explains exactly as before.

Values nested more than ``MAX_DEPTH`` levels deep are refused too: the log and every
record holding an event are written by orjson, which stops at 254 levels, so such a
value could be logged in memory but never saved (and a deeper one would exhaust
Python's recursion limit on the way).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

import orjson

from onrecord._canonical import TooDeep, reraise_interrupt, to_portable
from onrecord.errors import PortabilityError

__all__ = ["MAX_DEPTH", "portable"]

MAX_DEPTH = 128
"""Deepest nesting of lists and objects accepted in arguments and results (leaves room
for the records that hold an event inside orjson's limit)."""

_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(rb"[^\[\]{}]")
_INNERMOST = re.compile(rb"\[\]|\{\}")


def _refuse(value: Any) -> NoReturn:
    raise TypeError(type(value).__name__)


def portable(value: Any, path: str) -> Any:
    """What ``to_portable(value, path)`` returns (or raises), computed faster; refused
    as well when nested more than ``MAX_DEPTH`` levels deep."""
    try:
        data = orjson.dumps(value, default=_refuse, option=_OPTIONS)
    except TypeError as exc:  # also orjson's own depth limit
        reraise_interrupt(exc)
        return _slow(value, path)
    copy = orjson.loads(data)
    if type(copy) is type(value) and copy == value:
        _refuse_depth(data, path)
        return copy
    return _slow(value, path)


def _slow(value: Any, path: str) -> Any:
    try:
        copy = to_portable(value, path)
        data = orjson.dumps(copy)
    except (RecursionError, TypeError, TooDeep):  # orjson.JSONEncodeError is a TypeError
        raise _too_deep(path) from None  # the kit's own, lower limit is the one to name
    _refuse_depth(data, path)
    return copy


def _refuse_depth(data: bytes, path: str) -> None:
    # Nesting never exceeds the number of brackets, so most values are cleared by a
    # count in C; only larger ones are measured, one level per regex pass.
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return
    skeleton = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    for _ in range(MAX_DEPTH):
        skeleton = _INNERMOST.sub(b"", skeleton)
        if not skeleton:
            return
    raise _too_deep(path)


def _too_deep(path: str) -> PortabilityError:
    return PortabilityError(
        f"{path} is nested more than {MAX_DEPTH} levels deep, more than the evidence "
        "can hold; flatten it",
        path,
    )
