"""Async callables met by synchronous code: telling them apart up front, and running
one's awaitable to completion on an event loop of its own."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

from onrecord._loaded import loaded
from onrecord.errors import InputError

if TYPE_CHECKING:
    import asyncio

# asyncio is imported where a loop is made or asked for, not here: its import (~20 ms)
# was most of what `onrecord verify`/`gate`/`show` grew by when runs learned async agents.
# Until something imports it, no event loop can be running.

__all__ = [
    "AsyncInRunningLoop",
    "discard",
    "is_async_callable",
    "loop_running",
    "run_to_completion",
    "suspended_frame",
]

T = TypeVar("T")


def is_async_callable(value: object) -> bool:
    """An ``async def`` function (a method, a ``functools.partial`` of one) or an object
    whose ``__call__`` is one: calling it returns a coroutine without running its body."""
    if inspect.iscoroutinefunction(value):
        return True
    call = getattr(type(value), "__call__", None)  # noqa: B004 - the instance's, not the class's
    return not isinstance(value, type) and inspect.iscoroutinefunction(call)


class AsyncInRunningLoop(InputError):
    """An async agent met where an event loop already runs in this thread, which
    synchronous code cannot block to await it. Its own class so that a run stops on it
    with advice for the whole run, instead of recording it as every episode's error."""


def loop_running() -> bool:
    """Whether an event loop runs in this thread (Jupyter, an async application): code
    it called cannot block to run another coroutine to completion."""
    asyncio = loaded("asyncio")
    if asyncio is None:
        return False
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
    import asyncio

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
    import asyncio

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


def suspended_frame() -> FrameType | None:
    """Where the awaitable ``run_to_completion`` runs in this thread waits, while its
    loop is idle (in ``select``, no task running): the innermost frame of its await
    chain outside asyncio (``await asyncio.sleep(...)`` in the agent), else None.
    A signal handler's own frame would name the selector there, not the agent."""
    asyncio = loaded("asyncio")
    if asyncio is None:  # no loop can be running
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    if asyncio.current_task(loop) is not None:  # a task runs: the signal's frame is it
        return None
    main = [t for t in asyncio.all_tasks(loop) if _code(t.get_coro()) is _awaited.__code__]
    found = None
    inside = str(Path(asyncio.__file__ or "").parent)  # asyncio's own frames
    awaited: object = main[0].get_coro() if main else None
    while (frame := getattr(awaited, "cr_frame", None)) is not None:
        if not frame.f_code.co_filename.startswith(inside):
            found = frame
        awaited = getattr(awaited, "cr_await", None)
    return found


def _code(coroutine: object) -> object:
    return getattr(coroutine, "cr_code", None)
