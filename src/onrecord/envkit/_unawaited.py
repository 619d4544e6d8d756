"""Coroutines a failing tool created and never awaited: an async client called without
``await`` (``client.get(x)["status"]`` failing on the coroutine, or
``raise ValueError(client.get(x))``).

The exception's traceback keeps the tool's frames, and so the coroutine, alive until
the call's record is made; Python then warns that it was never awaited (an error under
``-W error``, a failure in the user's CI), far from the call that caused it. Closed
here instead, and named in the recorded error.

Only a tool that raised is searched: one that returned has no frames left to read (its
coroutine warned as it returned), and watching every call's frames as they end would
slow every call. The search reads the exception's arguments and the locals of the
tool's own frames (not its closure's variables, which outlive the call, nor onrecord's
frames), one level into plain lists, tuples, sets and dicts, running none of the tool's
code; it closes only coroutines never started, never a running one or a Task."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable
from itertools import islice
from types import CoroutineType, FrameType
from typing import Any

__all__ = ["AWAIT_ADVICE", "close_unawaited"]

AWAIT_ADVICE = (
    "a tool must be a plain function that returns its result; await the async client "
    "outside the tool (in your agent) or use its synchronous API"
)

_ONRECORD = os.path.dirname(os.path.dirname(__file__)) + os.sep
"""onrecord's own code: the world's frame that called the tool, a ``ctx`` method's
(named as its frames name their files: as imported, not resolved)."""

_MOST_ITEMS = 10_000
"""Items read of each container: a failing tool may hold every row it read, and the
record of a failure must not take longer than the call."""

_ARGS = BaseException.__dict__["args"]
"""``BaseException.args`` itself: an exception class may override ``args``, which is
the tool's code and is not run."""


def close_unawaited(exc: BaseException) -> str:
    """Close the never-started coroutines a failing tool left in ``exc``'s arguments and
    its frames; the note to add to its recorded error, or "" when there were none."""
    found: dict[int, CoroutineType[Any, Any, Any]] = {}
    _collect(_ARGS.__get__(exc), found)
    traceback = exc.__traceback__
    while traceback is not None:
        frame, traceback = traceback.tb_frame, traceback.tb_next
        if _tool_frame(frame):
            closure = frame.f_code.co_freevars  # the enclosing function's: not this call's
            _collect([v for name, v in frame.f_locals.items() if name not in closure], found)
    for coroutine in found.values():
        coroutine.close()
    return _note(list(found.values()))


def _tool_frame(frame: FrameType) -> bool:
    """A frame of the tool's own code: not onrecord's (the world's call into the tool
    comes first, ``ctx`` methods below it), not a module's code the tool ran (its
    locals are the module's globals)."""
    code = frame.f_code
    return bool(code.co_flags & inspect.CO_OPTIMIZED) and not code.co_filename.startswith(_ONRECORD)


def _collect(values: Iterable[Any], found: dict[int, CoroutineType[Any, Any, Any]]) -> None:
    """The never-started coroutines among ``values`` and the items of the plain
    containers among them (``[client.get(i) for i in ids]``), into ``found``. Exact
    types only, so nothing here runs a subclass's code."""
    for value in values:
        kind = type(value)
        if kind is CoroutineType:
            if inspect.getcoroutinestate(value) == inspect.CORO_CREATED:
                found.setdefault(id(value), value)
        elif kind is list or kind is tuple or kind is set or kind is frozenset:
            _collect(_coroutines(value), found)
        elif kind is dict:
            _collect(_coroutines(dict.values(value)), found)


def _coroutines(items: Iterable[Any]) -> list[Any]:
    return [item for item in islice(items, _MOST_ITEMS) if type(item) is CoroutineType]


def _note(closed: list[CoroutineType[Any, Any, Any]]) -> str:
    if not closed:
        return ""
    more = f", and {len(closed) - 1} more" if len(closed) > 1 else ""
    return (
        f"; the tool called {closed[0].__qualname__} (a coroutine{more}) without await: "
        f"{AWAIT_ADVICE}"
    )
