"""Async callables met by synchronous code: telling them apart up front, and running
one's awaitable to completion on an event loop of its own."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["discard", "is_async_callable", "loop_running", "run_to_completion"]

T = TypeVar("T")


def is_async_callable(value: object) -> bool:
    """An ``async def`` function (a method, a ``functools.partial`` of one) or an object
    whose ``__call__`` is one: calling it returns a coroutine without running its body."""
    if inspect.iscoroutinefunction(value):
        return True
    call = getattr(type(value), "__call__", None)  # noqa: B004 - the instance's, not the class's
    return not isinstance(value, type) and inspect.iscoroutinefunction(call)


def loop_running() -> bool:
    """Whether an event loop runs in this thread (Jupyter, an async application): code
    it called cannot block to run another coroutine to completion."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def discard(awaitable: object) -> None:
    """Close a coroutine that will not run, so Python does not also warn that it was
    never awaited (an error under ``-W error``)."""
    close = getattr(awaitable, "close", None)
    if inspect.iscoroutine(awaitable) and callable(close):
        close()


def run_to_completion(awaitable: Awaitable[T]) -> T:
    """``awaitable``'s result (or its exception), run on a fresh event loop that is closed
    afterwards, as ``asyncio.run`` does but without taking over Ctrl-C: a
    ``KeyboardInterrupt`` (or a runner's timeout signal) is raised where the code is, as
    for a plain function. Tasks it left running are cancelled and awaited first."""
    loop = asyncio.new_event_loop()
    try:
        # Given a coroutine (not a task), it consumes a KeyboardInterrupt the task holds,
        # so asyncio does not also log it as "never retrieved".
        return loop.run_until_complete(_awaited(awaitable))
    finally:
        try:
            _cancel_left(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
            discard(awaitable)  # finished already, unless interrupted before it started


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _cancel_left(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks still pending (the interrupted one, those it started and never
    awaited) and let them unwind, as ``asyncio.run`` does on its way out."""
    left = asyncio.all_tasks(loop)
    if not left:
        return
    for task in left:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
    for task in left:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception in a task left running by the awaited call",
                    "exception": task.exception(),
                    "task": task,
                }
            )
