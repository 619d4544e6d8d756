"""Tools are synchronous: a tool call runs inside the world's synchronous step (its
transaction, audit and action log around it), which cannot await anything."""

from __future__ import annotations

import inspect
from typing import Any

from onrecord._async import discard, is_async_callable
from onrecord.errors import InputError

__all__ = ["refuse_async_tool", "returned"]


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
    name = getattr(value, "__qualname__", type(value).__name__)
    discard(value)
    raise TypeError(
        f"the tool returned a coroutine ({name}), not a value: a tool must be a plain "
        "function that returns its result; await the async client outside the tool (in "
        "your agent) or use its synchronous API"
    )
