"""Tools are synchronous: a tool call runs inside the world's synchronous step (its
transaction, audit and action log around it), which cannot await anything."""

from __future__ import annotations

import inspect
from typing import Any

from onrecord._async import discard, is_async_callable
from onrecord.envkit._awaitables import awaitables
from onrecord.envkit._portable import portable
from onrecord.envkit._unawaited import AWAIT_ADVICE
from onrecord.errors import InputError

__all__ = ["portable_result", "refuse_async_tool", "returned"]

_RESULT = "$.result"


def refuse_async_tool(name: str, function: object) -> None:
    """Refuse an ``async def`` tool at declaration: called, it would return a coroutine
    without running its body, and every call would fail only once an agent made it."""
    if is_async_callable(function) or inspect.isasyncgenfunction(function):
        raise InputError(
            f"tool {name!r} is an async function, but a tool runs inside the world's "
            "synchronous step and cannot be awaited (its body would never run); make it "
            "a plain def, and make async calls (an LLM or HTTP client) in your agent, "
            "outside the tool, or with the client's synchronous API"
        )


def returned(value: Any) -> Any:
    """What a tool returned, unless it is a coroutine (an async client called without
    ``await``): that is closed unrun (no "never awaited" warning) and the call fails
    as if the tool had raised, its writes rolled back, rather than on the coroutine
    not being JSON."""
    if not inspect.iscoroutine(value):
        return value
    discard(value)
    raise TypeError(_returned_awaitable(value, ""))


def portable_result(result: Any) -> Any:
    """The tool's result as the log holds it (``portable``). A result that is not JSON
    because it holds an awaitable (``{"x": client.get()}``, a dataclass holding an
    ``asyncio`` Task) fails as a coroutine returned alone does, naming its path, with
    every coroutine in it closed unrun; it is searched for only once the result is
    refused, so a plain result costs nothing more."""
    try:
        return portable(result, _RESULT)
    except Exception:  # PortabilityError, or the result's own code raising as it is read
        try:
            found = awaitables(result, _RESULT)
        except Exception:  # a value no search can read: the refusal itself stands
            found = []
        if not found:
            raise
    for _, awaitable in found:
        discard(awaitable)
    path, first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    where = f" at {path}{more}" if (path, more) != (_RESULT, "") else ""
    raise TypeError(_returned_awaitable(first, where)) from None


def _returned_awaitable(awaitable: Any, where: str) -> str:
    if inspect.iscoroutine(awaitable):
        what = f"a coroutine ({getattr(awaitable, '__qualname__', 'coroutine')})"
    else:
        kind = type(awaitable)
        what = f"an awaitable ({kind.__module__}.{kind.__qualname__})"
    return f"the tool returned {what}{where}, not a value: {AWAIT_ADVICE}"
