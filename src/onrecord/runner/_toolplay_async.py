"""Async tool-world agents: an ``async def act(observation)`` (an agent on an async LLM
client), or a plain ``act`` that returns an awaitable. The rest of the episode runs on
ONE event loop of its own, so a client the agent keeps between steps (its connection
pool is bound to the loop it first ran on) keeps working; each step's call is awaited
to completion and then made as a plain agent's is, so the record is the same."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from onrecord._async import (
    AsyncInRunningLoop,
    discard,
    is_async_callable,
    loop_running,
    run_to_completion,
)
from onrecord.envkit._outcome import message

__all__ = ["Steps", "agent_error", "play_async", "refuse_async_in_loop"]

_IN_LOOP = (
    "the tool-world agent's act is async ({how}), but the episode runs while an event "
    "loop is running in this thread (Jupyter, an async application), which it cannot "
    "block to await act; run it from a thread with no running loop (`await "
    "asyncio.to_thread(...)`), or give a plain def act (e.g. on the client's synchronous API)"
)


class Steps(Protocol):
    """The episode's steps, shared by the plain and the async driver (``_toolplay``)."""

    def observations(self) -> Iterator[dict[str, Any]]:
        """The observation of each step left, from the current one."""
        ...

    def take(self, action: Any) -> bool:
        """Make (or refuse) the call ``action``; whether it finished the episode."""
        ...


def agent_error(exc: Exception) -> str:
    """``Type: message``, or the type alone when the message is empty (a scripted agent
    whose ``next(steps)`` ran out raises a bare ``StopIteration``)."""
    text = message(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def refuse_async_in_loop(act: Callable[..., Any]) -> None:
    """Refuse, before the world is reset, an ``async def`` act that cannot run here."""
    if is_async_callable(act) and loop_running():
        raise AsyncInRunningLoop(_IN_LOOP.format(how="it is declared async def"))


def play_async(
    steps: Steps, act: Callable[[Mapping[str, Any]], Any], pending: Any = None
) -> tuple[str, str | None]:
    """Play the steps left with ``act`` on an event loop of its own; ``pending`` is the
    awaitable a plain ``act`` returned for the current step (only then is it known to
    be async). Ctrl-C and ``CancelledError`` propagate once the loop is cleaned up."""
    if loop_running():  # only a returned awaitable gets here with a loop running
        discard(pending)  # closed unrun: no "never awaited" warning on top
        raise AsyncInRunningLoop(_IN_LOOP.format(how=f"it returned a {type(pending).__name__}"))
    try:
        return run_to_completion(_play(steps, act, pending))
    finally:
        discard(pending)  # a no-op once awaited; unrun if interrupted before its step


async def _play(
    steps: Steps, act: Callable[[Mapping[str, Any]], Any], pending: Any
) -> tuple[str, str | None]:
    for observation in steps.observations():
        try:
            # The current step's act was called already when it returned ``pending``.
            action = await _settled(act(observation) if pending is None else pending)
        except Exception as exc:  # the agent's own failure is evidence, not a crash
            return "agent_error", agent_error(exc)
        pending = None
        if steps.take(action):
            return "finished", None
    return "step_limit", None


async def _settled(returned: Any) -> Any:
    return await returned if inspect.isawaitable(returned) else returned
