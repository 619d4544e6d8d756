"""Refusing, before a run directory is made, a run whose async agent the in-process
executor could not await: ``start_run`` called where an event loop runs in this thread
(a notebook). Only what is knowable without building an agent decides it: an async
``interact`` given as the agent, a class whose instances are ``interact`` or ``act``
with an ``async def __call__``, or a factory annotated to return such a class. Any
other agent is met at its first episode, which stops the run with the same advice."""

from __future__ import annotations

import inspect
import os
from typing import Any

from onrecord._async import is_async_callable, loop_running
from onrecord.errors import InputError
from onrecord.runner._executors import Executor, InProcessExecutor, stopped_in_loop
from onrecord.runner._job import _resolved
from onrecord.runner._protocol import RunProtocol
from onrecord.runner._provider import AGENT_FACTORY_MARK, EnvironmentProvider

__all__ = ["refuse_async_agent_in_loop"]


def refuse_async_agent_in_loop(
    path: str | os.PathLike[str], protocol: RunProtocol, executor: Executor | None
) -> None:
    """Raise the advice of ``stopped_in_loop`` if the episodes would run here, an event
    loop runs here, and the agent is known to be async; else nothing (one check of a
    running loop on the common path)."""
    if not loop_running() or not (executor is None or isinstance(executor, InProcessExecutor)):
        return
    try:
        # Cached for this process: the run's first episode uses this provider and agent.
        provider, agent, _ = _resolved(protocol.context("preflight"))
    except Exception:  # recorded by the episodes as before, not decided here
        return
    if _known_async(provider, agent):
        raise InputError(stopped_in_loop(path, started=False))


def _known_async(provider: EnvironmentProvider, agent: Any) -> bool:
    # Here, not at the top: start_run must not import envkit when no loop runs.
    from onrecord.runner._gym import GymnasiumProvider
    from onrecord.runner._toolrunner import ToolWorldRunner

    marked = bool(getattr(agent, AGENT_FACTORY_MARK, False))
    if isinstance(provider, GymnasiumProvider) and not marked:
        return is_async_callable(agent)  # the agent is interact itself
    if isinstance(provider, GymnasiumProvider | ToolWorldRunner):
        built = agent if isinstance(agent, type) else _annotated_return(agent)
        return built is not None and _calls_async(built)
    return False  # another provider's episodes: what it does with the agent is its own


def _calls_async(built: type) -> bool:
    """Whether instances of ``built`` are called through an ``async def __call__`` (its
    own or inherited; read from the classes, so no code of theirs runs)."""
    for klass in built.__mro__:
        if "__call__" in vars(klass):
            return inspect.iscoroutinefunction(vars(klass)["__call__"])
    return False


def _annotated_return(factory: Any) -> type | None:
    """The class ``factory`` is annotated to return, if it names one that can be read."""
    try:
        returned = inspect.signature(factory, eval_str=True).return_annotation
    except Exception:  # no signature, or an annotation naming what is not importable
        return None
    return returned if isinstance(returned, type) else None
