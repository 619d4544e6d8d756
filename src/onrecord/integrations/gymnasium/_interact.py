"""Calling ``interact``, a plain function or an async one, and recording what it returned
or raised: the one part of an episode where ``capture_episode`` and
``capture_episode_async`` differ."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from onrecord._async import (
    AsyncInRunningLoop,
    discard,
    is_async_callable,
    loop_running,
    run_to_completion,
)
from onrecord._canonical import to_portable
from onrecord._user_errors import raised_record
from onrecord.integrations.gymnasium._recorder import EpisodeRecorder, error_record

__all__ = ["Interact", "await_interact", "call_interact", "refuse_async_in_loop"]

Interact = Callable[[Any, Any, dict[str, Any]], Any]

_IN_LOOP = (
    "interact is async ({how}), but capture_episode was called while an event loop is "
    "running in this thread (Jupyter, an async application), which it cannot block to "
    "run interact; use `await capture_episode_async(...)` there (same arguments), or "
    "call capture_episode from a thread with no running loop"
)


def refuse_async_in_loop(interact: Interact) -> None:
    """Refuse, before the factory builds anything, an ``async def`` interact that the
    sync capture could not run here."""
    if is_async_callable(interact) and loop_running():
        raise AsyncInRunningLoop(_IN_LOOP.format(how="it is declared async def"))


def call_interact(interact: Interact, recorder: EpisodeRecorder, record: dict[str, Any]) -> None:
    """The sync capture's call: an awaitable that interact returns is run to completion
    on an event loop of its own, so an async agent is captured as a plain one is."""
    try:
        returned = _call(interact, recorder)
    except Exception as exc:
        return _raised(record, exc)
    if inspect.isawaitable(returned):
        if loop_running():  # only known now: interact is a plain function returning one
            discard(returned)
            raise AsyncInRunningLoop(
                _IN_LOOP.format(how=f"it returned a {type(returned).__name__}")
            )
        try:
            returned = run_to_completion(returned)
        except Exception as exc:
            return _raised(record, exc)
    _returned(record, returned)
    return None


async def await_interact(
    interact: Interact, recorder: EpisodeRecorder, record: dict[str, Any]
) -> None:
    """The async capture's call, in the caller's own task: an awaitable is awaited, a
    plain interact's result kept as it is."""
    try:
        returned = _call(interact, recorder)
        if inspect.isawaitable(returned):
            returned = await returned
    except Exception as exc:
        return _raised(record, exc)
    _returned(record, returned)
    return None


def _call(interact: Interact, recorder: EpisodeRecorder) -> Any:
    # The agent gets reset's own info, as a bare loop would: the recorded copy has its
    # arrays tagged for JSON (Taxi's action_mask as {"$ndarray": ...}, not an array).
    return interact(recorder, recorder.initial_observation, recorder.initial_info)


def _raised(record: dict[str, Any], exc: Exception) -> None:
    # The agent's own loop raised: kept with its line (a refusal of onrecord's, e.g.
    # the step limit, with none), so a failing agent can be found from the record.
    record["interact"] = {"error": raised_record(exc), "returned": None}


def _returned(record: dict[str, Any], value: Any) -> None:
    record["interact"] = {"error": None, "returned": _portable_or_note(value)}


def _portable_or_note(value: Any) -> Any:
    """What interact returned, or a note saying why it cannot be kept (a cycle or a
    structure too deep is noted too: interact itself did not fail)."""
    try:
        return to_portable(value, "$.interact.returned")
    except Exception as exc:
        return {"unportable": type(value).__qualname__, "reason": error_record(exc)["message"]}
