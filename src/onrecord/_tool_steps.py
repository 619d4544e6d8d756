"""What became of each call of a tool world played through its Gymnasium face.

A ``ToolWorldEnv`` step whose call was rejected or failed is a successful *step* (the
capture status stays ``ok``: the env answered); what became of the *call* is in the
step's ``info`` (``status``) and its observation (``error``). ``onrecord show`` and the
HTML report's episode view both read it from here, so they cannot disagree on which
steps are a tool world's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["DONE", "tool_call", "tool_calls"]

DONE = frozenset({"ok", "finished"})
"""Call statuses that are not worth a reviewer's attention by default."""


def tool_call(observation: Any, info: Any) -> dict[str, str] | None:
    """What a ``ToolWorldEnv`` step's call came to: ``{"status", "error"}`` (``status``
    ``ok``, ``rejected``, ``error`` or ``finished``; ``error`` "type: message" or
    empty), or ``None`` for a step of any other environment.

    A tool world's step has ``info`` ``{"state_version": int, ...}`` and an observation
    that is the JSON text of an object with ``step`` and ``status``; ``info["status"]``
    is the call's status even when the observation was replaced as ``too_long``."""
    if not (
        isinstance(info, Mapping)
        and type(info.get("state_version")) is int
        and isinstance(observation, str)
        and observation.startswith("{")
    ):
        return None
    try:
        shown = json.loads(observation)
    except ValueError:
        return None
    if not (
        isinstance(shown, dict)
        and isinstance(shown.get("status"), str)
        and type(shown.get("step")) is int
    ):
        return None
    status = info.get("status")
    status = status if isinstance(status, str) else shown["status"]
    error = shown.get("error")
    if isinstance(error, Mapping):
        error = f"{error.get('type')}: {error.get('message')}"
    return {"status": status, "error": error if isinstance(error, str) else ""}


def tool_calls(transitions: Iterable[Mapping[str, Any]]) -> dict[int, dict[str, str]]:
    """``tool_call`` of every step (by index) that is a tool world's; empty for others."""
    calls = {}
    for transition in transitions:
        call = tool_call(transition["observation"], transition["info"])
        if call is not None:
            calls[transition["index"]] = call
    return calls
