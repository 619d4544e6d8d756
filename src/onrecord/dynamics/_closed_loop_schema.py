"""The shape a saved closed-loop decision record must have before it is trusted.

A matching digest only proves the line is self-consistent: a record edited and re-sealed
(or written by another tool) carries a correct one. ``load_runs``, ``onrecord verify``
and ``worldmodel analyze --replay`` therefore check every field the summaries read here,
so a malformed line is a ``SchemaError`` naming the line and the field, not a
``KeyError`` or ``TypeError`` deep in ``closed_loop_summary``. No NumPy: ``verify``
reads these records too.
"""

from __future__ import annotations

from typing import Any

from onrecord._record_fields import is_digest
from onrecord.errors import SchemaError

__all__ = ["CLOSED_LOOP_FIELDS", "verify_run_record"]

CLOSED_LOOP_FIELDS: dict[str, tuple[type, ...]] = {
    "schema": (str,),
    "model_id": (str,),
    "env_id": (str,),
    "budget": (dict,),
    "seed": (int,),
    "max_steps": (int,),
    "episode": (str,),
    "predicted_returns": (list,),
    "model_error": (dict, type(None)),
    "digest": (str,),
}
"""Every field of a record ``run_closed_loop`` makes, and the JSON kinds it may hold."""

_FIX = "restore the line save_runs wrote, or re-run"
_KINDS = {str: "a string", int: "a whole number", dict: "an object", list: "a list"}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return "a decimal number"
    return _KINDS.get(type(value), type(value).__name__)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def verify_run_record(record: dict[str, Any], where: str) -> None:
    """Raise ``SchemaError`` naming ``where`` (the file and line) and the first field of
    the closed-loop ``record`` that is missing, unknown, of another kind or out of range."""
    expected = ", ".join(CLOSED_LOOP_FIELDS)
    for name, kinds in CLOSED_LOOP_FIELDS.items():
        if name not in record:
            raise SchemaError(
                f"{where}: a closed-loop record has exactly the fields {expected}; field "
                f"{name!r} is missing: {_FIX}"
            )
        value = record[name]
        if not isinstance(value, kinds) or isinstance(value, bool):
            wanted = " or ".join(_KINDS.get(kind, "null") for kind in kinds)
            raise SchemaError(
                f"{where}: a closed-loop record has exactly the fields {expected}; field "
                f"{name!r} is {_kind(value)}, not {wanted}: {_FIX}"
            )
    unknown = sorted(set(record) - set(CLOSED_LOOP_FIELDS))
    if unknown:
        raise SchemaError(
            f"{where}: a closed-loop record has exactly the fields {expected}; field "
            f"{unknown[0]!r} is not one of them: {_FIX}"
        )
    for name in ("model_id", "env_id"):
        if not record[name]:
            raise SchemaError(f"{where}: field {name!r} is empty: {_FIX}")
    if not 0 <= record["seed"] < 2**64:
        raise SchemaError(
            f"{where}: field 'seed' is {record['seed']}, not a seed between 0 and 2**64 - 1: {_FIX}"
        )
    if record["max_steps"] < 1:
        raise SchemaError(
            f"{where}: field 'max_steps' is {record['max_steps']}, not a positive step cap: {_FIX}"
        )
    if not is_digest(record["episode"]):
        raise SchemaError(
            f"{where}: field 'episode' is {record['episode']!r:.40}, not an episode digest "
            f"(64 hex digits): {_FIX}"
        )
    _verify_budget(record["budget"], where)
    _verify_returns(record["predicted_returns"], record["max_steps"], where)
    _verify_model_error(record["model_error"], where)


def _verify_budget(budget: dict[str, Any], where: str) -> None:
    """The planner's own description; the summaries read only its ``length`` (the
    planning horizon), which every built-in planner records."""
    if "length" in budget and not (_whole(budget["length"]) and budget["length"] >= 1):
        raise SchemaError(
            f"{where}: field 'budget.length' is {budget['length']!r:.40}, not a positive "
            f"whole number (the planning horizon): {_FIX}"
        )


def _verify_returns(returns: list[Any], max_steps: int, where: str) -> None:
    if len(returns) > max_steps:
        raise SchemaError(
            f"{where}: field 'predicted_returns' holds {len(returns)} returns, more than "
            f"max_steps ({max_steps}) decisions: {_FIX}"
        )
    for index, value in enumerate(returns):
        if type(value) not in (int, float):
            raise SchemaError(
                f"{where}: field 'predicted_returns' holds {_kind(value)} at index {index}, "
                f"not a number: {_FIX}"
            )


def _verify_model_error(error: dict[str, Any] | None, where: str) -> None:
    if error is None:
        return
    if not (
        set(error) == {"step", "type", "message"}
        and _whole(error["step"])
        and error["step"] >= 0
        and isinstance(error["type"], str)
        and isinstance(error["message"], str)
    ):
        raise SchemaError(
            f"{where}: field 'model_error' must be null or {{step: a whole number of at "
            f"least 0, type: a string, message: a string}}, got {error!r:.80}: {_FIX}"
        )
