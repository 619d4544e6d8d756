"""Whole-history views of an episode record, for checks that must see every state in
order (a forbidden change followed by its restoration is invisible in the final state).
Every function returns detached copies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from onrecord._splice import LazyColumns, dumps_spliced
from onrecord.episode._blobs import decode_blob, is_blob

__all__ = ["actions", "attempts", "failures", "states", "transitions", "unbatch"]


def unbatch(batch: Any, index: int, layout: Any) -> Any:
    """Element ``index`` of a batch laid out as gymnasium's ``to_jsonable`` makes it."""
    if layout == "list":
        return batch[index]
    if "dict" in layout:
        return {key: unbatch(batch[key], index, sub) for key, sub in layout["dict"].items()}
    return [unbatch(part, index, sub) for part, sub in zip(batch, layout["tuple"], strict=True)]


def _copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def _steps(data: dict[str, Any], blobs: Mapping[str, bytes]) -> dict[str, Any]:
    """A detached copy of the step columns, blob columns decoded to nested lists."""
    steps, environment = data["steps"], data["environment"]
    # Only a Box column (layout "list") can be a blob; a Dict batch never is one.
    stored = {
        key: steps[key]
        for key in ("action", "observation")
        if is_blob(steps[key], environment[f"{key}_space"]["layout"])
    }
    # Columns captured evidence has not decoded yet are written as their bytes: the one
    # decode below is the copy.
    items = dict.items(steps) if isinstance(steps, LazyColumns) else steps.items()
    copied: dict[str, Any] = orjson.loads(
        dumps_spliced({key: value for key, value in items if key not in stored})
    )
    for key, ref in stored.items():
        copied[key] = decode_blob(ref, blobs).tolist()
    return copied


def attempts(data: dict[str, Any], blobs: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """One dict per attempted step: index, status, action (encoded, or None when the
    action was refused before execution), error, state, observer_error, wall_time_ns."""
    steps = _steps(data, blobs)
    layout = data["environment"]["action_space"]["layout"]
    action_at = {
        index: unbatch(steps["action"], position, layout)
        for position, index in enumerate(steps["action_index"])
    }
    return [
        {
            "index": index,
            "status": status,
            "action": action_at.get(index),
            "error": steps["error"][index],
            "state": steps["state"][index],
            "observer_error": steps["observer_error"][index],
            "wall_time_ns": steps["wall_time_ns"][index],
        }
        for index, status in enumerate(steps["status"])
    ]


def transitions(data: dict[str, Any], blobs: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """One dict per successful step: index, action, observation, reward, terminated,
    truncated, info and the observer's state after it."""
    steps = _steps(data, blobs)
    env = data["environment"]
    action_layout, obs_layout = env["action_space"]["layout"], env["observation_space"]["layout"]
    action_position = {index: position for position, index in enumerate(steps["action_index"])}
    return [
        {
            "index": index,
            "action": unbatch(steps["action"], action_position[index], action_layout),
            "observation": unbatch(steps["observation"], position, obs_layout),
            "reward": steps["reward"][position],
            "terminated": steps["terminated"][position],
            "truncated": steps["truncated"][position],
            "info": steps["info"][position],
            "state": steps["state"][index],
        }
        for position, index in enumerate(steps["transition_index"])
    ]


def actions(data: dict[str, Any], blobs: Mapping[str, bytes]) -> list[Any]:
    """Encoded actions of the successful steps, in order."""
    return [transition["action"] for transition in transitions(data, blobs)]


def states(data: dict[str, Any]) -> list[Any]:
    """Every observer state in order: after reset, after each attempt, before cleanup.
    A failed read is None (and is listed in ``coverage_issues``)."""
    steps, first, last = data["steps"], data["initial"]["state"], data["final_state"]
    column = steps.undecoded("state") if isinstance(steps, LazyColumns) else None
    if column is not None and column != b"[]":  # captured, not read yet: decoding copies
        dumps = orjson.dumps
        joined = b"".join((b"[", dumps(first), b",", column[1:-1], b",", dumps(last), b"]"))
        decoded: list[Any] = orjson.loads(joined)
        return decoded
    copied: list[Any] = _copy([first, *steps["state"], last])
    return copied


def failures(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Simulator, setup and cleanup failures in the order they happened: factory, reset,
    the observer's read after reset, then for each attempt its step exception and the
    observer's read after it, the read before cleanup, close(). An observer failure has
    ``read``: ``after_reset``, ``after_step`` or ``before_cleanup``. Invalid actions and
    lifecycle misuse are the agent's, not listed."""
    found = [dict(event) for event in data["events"] if event["phase"] == "factory"]
    if data["initial"]["reset_error"]:
        found.append({"phase": "reset", "index": 0, **data["initial"]["reset_error"]})
    steps = data["steps"]
    found += _observer_failure("after_reset", 0, data["initial"]["observer_error"])
    # Time order, not grouped by phase: a caller taking the first failure must get the
    # one that happened first (an observer failing after step 1 before step 3's error).
    for index, status in enumerate(steps["status"]):
        if status == "env_error":
            found.append({"phase": "step", "index": index, **steps["error"][index]})
        found += _observer_failure("after_step", index, steps["observer_error"][index])
    count = len(steps["status"])
    found += _observer_failure("before_cleanup", count, data["final_observer_error"])
    if data["cleanup"]["ok"] is False:
        found.append({"phase": "cleanup", "index": count, **data["cleanup"]["error"]})
    return found


def _observer_failure(read: str, index: int, error: str | None) -> list[dict[str, Any]]:
    """The failed read as a one-item list (none when it succeeded), saying which read it
    was: the read after reset and the read after attempt 0 both have ``index`` 0, so a
    caller matching reads to steps by index alone took the first for the second."""
    if not error:
        return []
    return [
        {
            "phase": "observe",
            "read": read,
            "index": index,
            "type": "ObserverError",
            "message": error,
        }
    ]
