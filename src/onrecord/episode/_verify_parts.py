"""Verification of the parts of an episode record that the derived fields are computed
from (events, ``interact``, ``cleanup``, error records, observer errors, ``info``) and of
how they agree with one another and with the case.

Capture writes each of them in one shape only. A record that holds another (written by
another tool, or edited and re-hashed) made ``coverage_issues`` fail with a KeyError, or
verified although it contradicts itself: steps after a reset that failed, an error on a
successful step, a state beside the observer error that says it could not be read, an
environment ``completion`` other than the case's. Each is refused naming the field.
"""

from __future__ import annotations

from typing import Any

from onrecord.errors import ConsistencyError, SchemaError

__all__ = ["verify_parts"]


def verify_parts(data: dict[str, Any]) -> None:
    """Raise SchemaError or ConsistencyError naming the first part that is wrong."""
    _verify_events(data["events"])
    _verify_interact(data["interact"])
    _verify_cleanup(data["cleanup"])
    _verify_setup(data)
    _verify_attempt_errors(data["steps"])
    _verify_observer_errors(data)
    _verify_infos(data)
    _verify_completion(data)


def _error(value: Any, field: str) -> None:
    """An error record, as ``onrecord._exceptions.error_record`` writes it."""
    if not (
        type(value) is dict and type(value.get("type")) is str and type(value.get("message")) is str
    ):
        raise SchemaError(f"{field} must be an error record {{'type': str, 'message': str}}")


def _verify_events(events: list[Any]) -> None:
    for index, event in enumerate(events):
        field = f"events[{index}]"
        _error(event, field)
        if type(event.get("phase")) is not str:
            raise SchemaError(f"{field}.phase must be a string such as 'step'")
        position = event.get("index")
        if type(position) is not int or position < 0:
            raise SchemaError(f"{field}.index must be a non-negative integer")


def _verify_interact(interact: dict[str, Any] | None) -> None:
    if interact is None:
        return
    if interact.keys() != {"error", "returned"}:
        raise SchemaError("interact must hold exactly 'error' and 'returned' (or be null)")
    if interact["error"] is not None:
        _error(interact["error"], "interact.error")
        if interact["returned"] is not None:
            raise ConsistencyError("interact holds both an error and a returned value")


def _verify_cleanup(cleanup: dict[str, Any]) -> None:
    ok, error = cleanup["ok"], cleanup["error"]
    if ok not in (True, False, None) or type(ok) not in (bool, type(None)):
        raise SchemaError("cleanup.ok must be true, false or null")
    if ok is False:
        _error(error, "cleanup.error")
    elif error is not None:
        raise ConsistencyError(f"cleanup.error must be null when cleanup.ok is {ok}")


def _verify_setup(data: dict[str, Any]) -> None:
    """What ran follows from how far setup got: no environment, no cleanup; a failed
    reset, no ``interact`` and no steps; a reset that returned, ``interact`` ran."""
    factory = any(event["phase"] == "factory" for event in data["events"])
    reset_error = data["initial"]["reset_error"]
    if reset_error is not None:
        _error(reset_error, "initial.reset_error")
    if (data["cleanup"]["ok"] is None) != factory:
        raise ConsistencyError(
            "cleanup.ok is null exactly when the factory failed (there was nothing to close)"
        )
    ran = not factory and reset_error is None
    if (data["interact"] is not None) != ran:
        raise ConsistencyError(
            "interact must be recorded exactly when the environment was made and reset"
        )
    if not ran and data["steps"]["status"]:
        raise ConsistencyError("steps are recorded although setup failed before interact")


def _verify_attempt_errors(steps: dict[str, Any]) -> None:
    for index, (status, error) in enumerate(zip(steps["status"], steps["error"], strict=True)):
        if status == "ok":
            if error is not None:
                raise ConsistencyError(f"steps.error[{index}] must be null: the step succeeded")
        else:
            _error(error, f"steps.error[{index}]")
    times = steps["wall_time_ns"]
    if not all(type(value) is int and value >= 0 for value in times):
        raise SchemaError("steps.wall_time_ns must hold non-negative integers")


def _verify_observer_errors(data: dict[str, Any]) -> None:
    """An observer error means the state could not be read: its state is null."""
    steps, initial = data["steps"], data["initial"]
    pairs = [
        ("initial.observer_error", initial["observer_error"], initial["state"]),
        ("final_observer_error", data["final_observer_error"], data["final_state"]),
    ]
    errors = steps["observer_error"]
    if errors.count(None) != len(errors):  # one C pass in the common case of none
        pairs += [
            (f"steps.observer_error[{index}]", error, steps["state"][index])
            for index, error in enumerate(errors)
            if error is not None
        ]
    for field, error, state in pairs:
        if error is None:
            continue
        if type(error) is not str:
            raise SchemaError(f"{field} must be a string or null")
        if state is not None:
            raise ConsistencyError(f"{field} says the state could not be read, yet one is kept")


def _verify_infos(data: dict[str, Any]) -> None:
    if not isinstance(data["initial"]["info"], dict | None):
        raise SchemaError("initial.info must be an object or null")
    if not all(type(info) is dict for info in data["steps"]["info"]):
        raise SchemaError("steps.info must hold one object per successful step")


def _verify_completion(data: dict[str, Any]) -> None:
    """The completion coverage is computed from is the case's own, which its content
    digest covers."""
    declared = data["case"].get("completion", "terminated")
    if data["environment"]["completion"] != declared:
        raise ConsistencyError(
            f"environment.completion is {data['environment']['completion']!r} but the case "
            f"declares {declared!r}"
        )
