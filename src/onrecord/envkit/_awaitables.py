"""Finding the awaitables in a value a tool handed back: a coroutine of an async client
called without ``await``, an ``asyncio`` Future or Task, any object with ``__await__``,
at the top or inside containers, dataclasses, named tuples and other objects.

Only run once the value was refused as not JSON, so a plain result costs nothing more.
The search runs none of the tool's code: containers are read through the built-in
types' own methods (a subclass's overrides are the tool's), objects through the
descriptors Python itself made for their ``__dict__`` and ``__slots__`` (a property of
the same name is the tool's, and is not read)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Iterator
from types import GeneratorType, GetSetDescriptorType, MemberDescriptorType, ModuleType
from typing import Any

from onrecord._portable import key_path

__all__ = ["awaitables"]

_MOST_VISITED = 100_000
"""Values looked at before the search gives up: an object may reach a large graph (an
ORM session), and a refusal must not take longer than the call it refuses."""


def awaitables(value: Any, path: str) -> list[tuple[str, Any]]:
    """``(path, awaitable)`` of every awaitable reachable from ``value``, in order,
    each container and object read once (a cycle ends)."""
    found: list[tuple[str, Any]] = []
    stack: list[tuple[str, Any]] = [(path, value)]
    seen: set[int] = set()
    while stack and len(seen) < _MOST_VISITED:
        path, value = stack.pop()
        if _awaitable(value):
            found.append((path, value))
        elif id(value) not in seen:
            seen.add(id(value))
            stack.extend(reversed(list(_children(path, value))))
    return found


def _awaitable(value: Any) -> bool:
    """``inspect.isawaitable``, told by the value's type alone (``isinstance`` would also
    read the object's own ``__class__``, which may be the tool's code)."""
    kind = type(value)
    if issubclass(kind, GeneratorType):  # a @types.coroutine generator's flag
        return bool(value.gi_code.co_flags & inspect.CO_ITERABLE_COROUTINE)
    return issubclass(kind, Awaitable)


def _children(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    kind = type(value)  # not isinstance: see _awaitable
    if issubclass(kind, dict):
        for key, item in dict.items(value):
            if _awaitable(key):  # a key has no path of its own: the dict's
                yield f"{path} (a key)", key
            # Another key's repr is the tool's code (and a coroutine's holds an address).
            named = type(key) is str or type(key) is int
            yield key_path(path, key) if named else f"{path}[<{type(key).__name__}>]", item
    elif issubclass(kind, set | frozenset):
        members = set.__iter__(value) if issubclass(kind, set) else frozenset.__iter__(value)
        yield from ((f"{path} (a member)", item) for item in members)
    elif issubclass(kind, list | tuple):  # a NamedTuple too
        iterate = list.__iter__ if issubclass(kind, list) else tuple.__iter__
        yield from ((f"{path}[{index}]", item) for index, item in enumerate(iterate(value)))
    elif not issubclass(kind, str | bytes | int | float | type | ModuleType):
        yield from ((key_path(path, name), item) for name, item in _attributes(value))


def _attributes(value: Any) -> Iterator[tuple[str, Any]]:
    """An object's instance attributes (a dataclass's fields among them) and slots."""
    for klass in type(value).__mro__:
        for name, slot in vars(klass).items():
            if name == "__dict__" and type(slot) is GetSetDescriptorType:
                attributes = slot.__get__(value)
                if type(attributes) is dict:
                    yield from dict.items(attributes)
            elif type(slot) is MemberDescriptorType:  # a __slots__ entry
                try:
                    yield name, slot.__get__(value)
                except AttributeError:  # a slot never assigned
                    continue
