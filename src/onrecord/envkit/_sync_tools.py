"""Tools are synchronous: a tool call runs inside the world's synchronous step (its
transaction, audit and action log around it), which cannot await anything."""

from __future__ import annotations

import inspect

from onrecord._async import is_async_callable
from onrecord.errors import InputError

__all__ = ["refuse_async_tool"]


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
