"""Tools are synchronous: a tool call runs inside the world's synchronous step (its
transaction, audit and action log around it), which cannot await anything."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from onrecord._async import discard, is_async_callable
from onrecord._portable import key_path
from onrecord.envkit._portable import portable
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
    raise TypeError(_returned_coroutine(value, ""))


def portable_result(result: Any) -> Any:
    """The tool's result as the log holds it (``portable``). A result that is not JSON
    because it holds a coroutine (``{"x": client.get()}``) fails as one returned alone
    does, naming its path, with every coroutine in it closed unrun; it is searched for
    only once the result is refused, so a plain result costs nothing more."""
    try:
        return portable(result, _RESULT)
    except Exception:  # PortabilityError, or the result's own code raising as it is read
        found = list(_coroutines(result))
        if not found:
            raise
    for _, coroutine in found:
        discard(coroutine)
    path, first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise TypeError(_returned_coroutine(first, f" at {path}{more}")) from None


def _returned_coroutine(coroutine: Any, where: str) -> str:
    name = getattr(coroutine, "__qualname__", type(coroutine).__name__)
    return (
        f"the tool returned a coroutine ({name}){where}, not a value: a tool must be a "
        "plain function that returns its result; await the async client outside the "
        "tool (in your agent) or use its synchronous API"
    )


def _coroutines(result: Any) -> Iterator[tuple[str, Any]]:
    """``(path, coroutine)`` of every coroutine in the lists, tuples, sets and dicts of
    ``result``, in order. Read through the built-in types' own methods (a subclass's
    overrides are the tool's code) and each container once (a cycle ends)."""
    stack: list[tuple[str, Any]] = [(_RESULT, result)]
    seen: set[int] = set()
    while stack:
        path, value = stack.pop()
        if inspect.iscoroutine(value):
            yield path, value
        elif isinstance(value, dict | list | tuple | set | frozenset) and id(value) not in seen:
            seen.add(id(value))
            stack.extend(reversed(list(_children(path, value))))


def _children(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in dict.items(value):
            if inspect.iscoroutine(key):  # a key has no path of its own: the dict's
                yield f"{path} (a key)", key
            # Another key's repr is the tool's code (and a coroutine's holds an address).
            named = type(key) is str or type(key) is int
            yield key_path(path, key) if named else f"{path}[<{type(key).__name__}>]", item
    elif isinstance(value, set | frozenset):
        members = set.__iter__(value) if isinstance(value, set) else frozenset.__iter__(value)
        yield from ((f"{path} (a member)", item) for item in members)
    else:
        iterate = list.__iter__ if isinstance(value, list) else tuple.__iter__
        yield from ((f"{path}[{index}]", item) for index, item in enumerate(iterate(value)))
