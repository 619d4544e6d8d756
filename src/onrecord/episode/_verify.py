"""Structural verification of an episode record: every field present with the right
shape, and no internal contradiction (step indices, data after the end)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from onrecord.case import EvalCase
from onrecord.episode._blobs import BLOB_TAG, blob_size, is_blob
from onrecord.episode._verify_parts import verify_parts
from onrecord.errors import ConsistencyError, InputError, SchemaError

__all__ = ["ATTEMPT_STATUSES", "STEP_COLUMNS", "episode_return", "verify_episode_shape"]

STEP_COLUMNS = (
    "status",
    "error",
    "state",
    "observer_error",
    "wall_time_ns",
    "action_index",
    "action",
    "transition_index",
    "observation",
    "reward",
    "terminated",
    "truncated",
    "info",
)
"""The columns of ``steps``: per attempt, per executed action, per successful step."""
ATTEMPT_STATUSES = frozenset({"ok", "invalid_action", "env_error", "lifecycle", "step_limit"})
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "library": dict,
    "case": dict,
    "environment": dict,
    "initial": dict,
    "events": list,
    "cleanup": dict,
    "steps": dict,
    "ended": str,
    "coverage_issues": list,
    "measures": dict,
    "interact": (dict, type(None)),
    "final_observer_error": (str, type(None)),
}
_TOP_LEVEL = frozenset({"schema", "digest", "final_state", *_FIELDS})
"""Every top-level field capture writes, the same since the first ``onrecord.episode/v1``
record: another one was added by hand or by another tool, and is refused."""
_MISSING = object()
_SUBFIELDS = {
    "environment": (
        "environment_id",
        "observer_id",
        "seed",
        "max_steps",
        "completion",
        "options",
        "spec",
        "observation_space",
        "action_space",
    ),
    "initial": ("observation", "info", "reset_error", "state", "observer_error"),
    "cleanup": ("ok", "error"),
    "steps": STEP_COLUMNS,
}
_PER_ATTEMPT = ("error", "state", "observer_error", "wall_time_ns")
_PER_TRANSITION = ("reward", "terminated", "truncated", "info")


def verify_episode_shape(data: dict[str, Any]) -> None:
    """Raise SchemaError or ConsistencyError naming the first problem found."""
    if "final_state" not in data:
        raise SchemaError("field 'final_state' is missing (null when it could not be read)")
    for name, kind in _FIELDS.items():
        # A missing field is not a null one: ``interact`` and ``final_observer_error``
        # may be null, and read as ``data.get`` a missing one passed here and raised
        # KeyError in the checks below.
        if not isinstance(data.get(name, _MISSING), kind):
            raise SchemaError(f"field {name!r} is missing or not a {_kind_name(kind)}")
    _refuse_unknown(data.keys() - _TOP_LEVEL, "the record")
    for name, keys in _SUBFIELDS.items():
        missing = [key for key in keys if key not in data[name]]
        if missing:
            raise SchemaError(f"field {name!r} lacks {', '.join(map(repr, missing))}")
        if len(data[name]) != len(keys):  # every key is there, so one more is unknown
            _refuse_unknown(data[name].keys() - set(keys), f"field {name!r}")
    _verify_case(data["case"])
    _verify_settings(data["environment"])
    _verify_step_values(data["steps"])
    _verify_steps(data["steps"], data["environment"])
    _verify_measures(data)
    verify_parts(data)


def _refuse_unknown(unknown: set[str], where: str) -> None:
    """Capture writes each part with these fields only, so another one was added by
    hand or by another tool: refused, as reports refuse theirs, rather than carried
    along unread under the digest."""
    if unknown:
        raise SchemaError(
            f"{where} has unknown field(s) {sorted(unknown)}: onrecord writes no such "
            "field; it was edited or written by another tool (restore the saved file)"
        )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("null" if item is type(None) else item.__name__ for item in kinds)


def _verify_case(case: dict[str, Any]) -> None:
    try:
        EvalCase.from_dict(case)
    except InputError as exc:
        raise ConsistencyError(f"case identity does not verify: {exc}") from exc


def _verify_settings(environment: dict[str, Any]) -> None:
    # What capture_episode accepts. A record whose digest matches but whose max_steps is
    # "20" or null (written by another tool, or forged) raised TypeError further on.
    for name in ("environment_id", "observer_id"):
        if not isinstance(environment[name], str) or not environment[name]:
            raise SchemaError(f"environment.{name} must be a non-empty string")
    seed, max_steps = environment["seed"], environment["max_steps"]
    if type(seed) is not int or not 0 <= seed < 2**64:
        raise SchemaError(f"environment.seed must be a non-negative integer, got {seed!r:.40}")
    if type(max_steps) is not int or max_steps < 1:
        raise SchemaError(
            f"environment.max_steps must be a positive integer, got {max_steps!r:.40}"
        )


def _verify_step_values(steps: dict[str, Any]) -> None:
    """The types the step checks below compare and sum: a string reward or a list as a
    status raised TypeError instead of naming the field."""
    for name in ("status", "reward", "terminated", "truncated"):
        if not isinstance(steps[name], list):
            raise SchemaError(f"steps.{name} must be a list")
    if not all(type(value) is str for value in steps["status"]):
        raise SchemaError("steps.status must hold strings such as 'ok'")
    if not all(_finite_number(value) for value in steps["reward"]):
        raise SchemaError("steps.reward must hold finite numbers")
    for name in ("terminated", "truncated"):
        if not all(type(value) is bool for value in steps[name]):
            raise SchemaError(f"steps.{name} must hold true or false")


def _finite_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _verify_steps(steps: dict[str, Any], environment: dict[str, Any]) -> None:
    status = steps["status"]
    for name in _PER_ATTEMPT:
        _same_length(steps, name, len(status), "attempts")
    unknown = set(status) - ATTEMPT_STATUSES
    if unknown:
        raise SchemaError(f"steps.status holds unknown values {sorted(unknown)}")
    if status.count("ok") == len(status):  # the common case: every attempt succeeded
        executed = succeeded = list(range(len(status)))
    else:
        executed = [i for i, value in enumerate(status) if value in ("ok", "env_error")]
        succeeded = [i for i, value in enumerate(status) if value == "ok"]
    for name in ("action_index", "transition_index"):
        # Before the comparison below, whose message sliced the field: an integer there
        # raised "'int' object is not subscriptable" instead of naming it.
        if type(steps[name]) is not list:
            raise SchemaError(
                f"steps.{name} must be a list of attempt numbers such as [0, 1, 2], "
                f"got {steps[name]!r:.40}"
            )
    if steps["action_index"] != executed:
        raise ConsistencyError(
            "steps.action_index must list exactly the executed attempts "
            f"{executed[:5]}..., found {steps['action_index'][:5]}..."
        )
    if steps["transition_index"] != succeeded:
        raise ConsistencyError("steps.transition_index must list exactly the successful attempts")
    for name in ("action_index", "transition_index"):
        _refuse_non_int(steps[name], name)
    for name in _PER_TRANSITION:
        _same_length(steps, name, len(succeeded), "successful steps")
    for name, count, unit in (
        ("action", len(executed), "executed attempt"),
        ("observation", len(succeeded), "successful step"),
    ):
        space = environment[f"{name}_space"]
        layout = space.get("layout") if isinstance(space, dict) else None
        if not _batch_holds(steps[name], layout, count):
            raise ConsistencyError(
                f"steps.{name} must hold one sample per {unit} ({count}), laid out as "
                f"environment.{name}_space.layout says ({layout!r})"
            )
    if "lifecycle" in steps["status"]:
        _verify_lifecycle(steps, environment["max_steps"])
    else:
        _verify_order(steps, environment["max_steps"])


def _refuse_non_int(column: list[Any], name: str) -> None:
    """The comparisons above are Python's, where ``0.0 == 0`` and ``True == 1``: a float
    or a bool there verified, then ``transitions()`` and ``onrecord show`` indexed with
    it and raised TypeError. One C pass over the types in the common case."""
    types = list(map(type, column))
    if types.count(int) != len(types):
        position = next(i for i, kind in enumerate(types) if kind is not int)
        raise SchemaError(
            f"steps.{name}[{position}] is {column[position]!r:.40}, not an integer: "
            f"steps.{name} holds attempt numbers such as [0, 1, 2]"
        )


def _batch_holds(batch: Any, layout: Any, count: int) -> bool:
    """Whether ``batch`` holds ``count`` samples in the batch ``layout`` (``"list"``, or
    nested ``{"dict": {...}}`` / ``{"tuple": [...]}``); a blob counts its first axis.
    A malformed blob reference raises SchemaError."""
    if layout == "list":
        if is_blob(batch):
            # The reference first: a malformed shape ("ab", [-1, 84]) is named as such,
            # not as a column of the wrong length.
            blob_size(batch[BLOB_TAG])
            return bool(batch[BLOB_TAG]["shape"][0] == count)
        return type(batch) is list and len(batch) == count
    if type(layout) is not dict or len(layout) != 1:
        return False
    parts = layout.get("dict")
    if type(parts) is dict:
        return (
            type(batch) is dict
            and batch.keys() == parts.keys()
            and all(_batch_holds(batch[key], parts[key], count) for key in parts)
        )
    parts = layout.get("tuple")
    return (
        type(parts) is list
        and type(batch) is list
        and len(batch) == len(parts)
        and all(_batch_holds(part, sub, count) for part, sub in zip(batch, parts, strict=True))
    )


def _same_length(steps: dict[str, Any], name: str, expected: int, unit: str) -> None:
    if not isinstance(steps[name], list) or len(steps[name]) != expected:
        raise ConsistencyError(f"steps.{name} must hold one entry per {unit} ({expected})")


def _verify_order(steps: dict[str, Any], max_steps: int) -> None:
    """Only refusals follow the end, and ``step_limit`` marks exactly the attempts past
    ``max_steps``. Checked with list operations first (a loop over a long episode is
    most of verifying it); the loop below runs only to name the offending step."""
    ended_at = _ended_at(steps)
    status = steps["status"]
    last = len(status) if ended_at is None else ended_at + 1
    before, after = status[:last], status[last:]
    if (
        after.count("lifecycle") == len(after)
        and "step_limit" not in before[:max_steps]
        and before[max_steps:].count("step_limit") == len(before[max_steps:])
    ):
        return
    _name_the_step_out_of_order(status, ended_at, max_steps)


def _ended_at(steps: dict[str, Any]) -> int | None:
    """The attempt index of the first transition flagged terminated or truncated."""
    flags = (steps["terminated"], steps["truncated"])
    # Every flag equal to True or False: the first True is the first truthy one.
    if all(column.count(True) + column.count(False) == len(column) for column in flags):
        found = [column.index(True) for column in flags if True in column]
        return steps["transition_index"][min(found)] if found else None
    for position, index in enumerate(steps["transition_index"]):
        if flags[0][position] or flags[1][position]:
            return int(index)
    return None


def _verify_lifecycle(steps: dict[str, Any], max_steps: int) -> None:
    """A ``lifecycle`` refusal is a step after the end, so an end precedes the first one:
    a terminal transition or, when no transition says so, the environment error just
    before it. A terminal step whose reward or observation JSON cannot hold is kept as
    an environment error and its flags go with it; the order rules then apply from
    there (without this, such an episode past ``max_steps`` failed to load)."""
    status = steps["status"]
    first = status.index("lifecycle")
    ended_at, order = _ended_at(steps), steps
    if ended_at is None and first and status[first - 1] == "env_error":
        ended_at = first - 1
        order = _ended_by_error(steps, ended_at)
    if ended_at is None or first <= ended_at:
        raise ConsistencyError(
            f"step {first} has status 'lifecycle' (refused because the episode had "
            "ended), but no earlier step ended the episode"
        )
    _verify_order(order, max_steps)


def _ended_by_error(steps: dict[str, Any], end: int) -> dict[str, Any]:
    """The order columns with attempt ``end`` read as the terminal step."""
    kept = [position for position, index in enumerate(steps["transition_index"]) if index < end]
    return {
        "status": steps["status"],
        "transition_index": [steps["transition_index"][position] for position in kept] + [end],
        "terminated": [steps["terminated"][position] for position in kept] + [True],
        "truncated": [steps["truncated"][position] for position in kept] + [False],
    }


def _name_the_step_out_of_order(status: list[Any], ended_at: int | None, max_steps: int) -> None:
    for index, value in enumerate(status):
        after_end = ended_at is not None and index > ended_at
        if after_end and value != "lifecycle":
            raise ConsistencyError(
                f"step {index} has status {value!r} after the episode "
                f"ended at step {ended_at}; only refusals may follow"
            )
        if not after_end and (value == "step_limit") != (index >= max_steps):
            raise ConsistencyError(
                f"step {index} has status {value!r}, which contradicts max_steps={max_steps}"
            )
    raise ConsistencyError("steps.status is out of order")  # the checks above are the same


def episode_return(rewards: Sequence[float]) -> float:
    """The sum of an episode's rewards, exact then rounded once (``math.fsum``). Where
    fsum's own partial sums overflow though the sum does not (``1e308, 1e308, -1e308``)
    it is taken from the exact sum. ``OverflowError`` when the sum itself is beyond a
    double, which JSON cannot hold: capture keeps the step that takes it there as an
    environment error."""
    try:
        return math.fsum(rewards)
    except OverflowError:
        from fractions import Fraction  # rare: not loaded for every record read

        return float(sum(map(Fraction, rewards), Fraction(0)))  # raises when beyond


def _verify_measures(data: dict[str, Any]) -> None:
    rewards = data["steps"]["reward"]
    try:
        total = episode_return(rewards)
    except OverflowError:  # written by another tool, or forged: capture never records it
        raise ConsistencyError(
            "steps.reward sums beyond the largest number a double holds, so no "
            "measures.return can match them"
        ) from None
    expected = {"return": total, "steps": len(rewards)}
    if data["measures"] != expected:
        raise ConsistencyError(
            f"measures {data['measures']} do not match the recorded rewards {expected}"
        )
