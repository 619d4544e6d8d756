"""``to_portable`` for tool arguments and results, with a C fast path.

``to_portable`` walks every value in Python; a tool result (a claim with its lines and
allocations) has dozens. Here orjson writes and re-reads the value in C instead, and
the copy is used only when it equals the original: orjson refuses subclasses (they go
to ``default``, which refuses everything), unknown types and integers beyond 64 bits;
NaN and infinities come back as ``None``, enums and UUIDs as their values, tuples as
lists, and none of those compare equal, so each of them takes ``to_portable``, which
then accepts or explains exactly as before.
"""

from __future__ import annotations

from typing import Any, NoReturn

import orjson

from onrecord._canonical import reraise_interrupt, to_portable

__all__ = ["portable"]

_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)


def _refuse(value: Any) -> NoReturn:
    raise TypeError(type(value).__name__)


def portable(value: Any, path: str) -> Any:
    """What ``to_portable(value, path)`` returns (or raises), computed faster."""
    try:
        copy = orjson.loads(orjson.dumps(value, default=_refuse, option=_OPTIONS))
    except TypeError as exc:
        reraise_interrupt(exc)
        return to_portable(value, path)
    if type(copy) is type(value) and copy == value:
        return copy
    return to_portable(value, path)
