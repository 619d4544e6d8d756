"""The shape a saved forecast record must have before it is trusted.

A matching digest only proves the content is self-consistent, not that it came from
``capture_forecast``: a hand-made record can carry a correct digest. Every field the
scoring code reads is therefore checked here, so a malformed record fails as a
``SchemaError`` or ``ConsistencyError`` at load time instead of a ``KeyError`` deep in
the metrics.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from onrecord._record_fields import is_digest
from onrecord.case import EvalCase
from onrecord.episode._coverage import ENDINGS
from onrecord.errors import ConsistencyError, InputError, SchemaError

__all__ = ["CLOSED_LOOP_SCHEMA", "FORECAST_SCHEMA", "verify_shape"]

# Here, beside the shape, so that telling a record's kind needs no NumPy (see
# onrecord._loaded): the modules reading these records import it.
FORECAST_SCHEMA = "onrecord.forecast/v1"
CLOSED_LOOP_SCHEMA = "onrecord.closed-loop/v1"

_STATUSES = ("ok", "model_error", "simulator_error")
_SCOPES = ("planned", "observed_prefix")
_KEYS = {
    "schema",
    "episode",
    "model_id",
    "contract",
    "coordinates",
    "horizons",
    "action_scope",
    "request",
    "reference",
    "response",
    "status",
    "error",
    "digest",
}
_EPISODE_KEYS = {"digest", "case", "environment_id", "observer_id", "seed"}
_LIST, _NUMBERS = frozenset({list}), frozenset({int, float})
_RESTORE = "restore the record capture_forecast wrote, or capture it again"


def _fail(message: str) -> SchemaError:
    return SchemaError(f"forecast record: {message}")


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def verify_shape(data: dict[str, Any]) -> None:
    """Raise unless ``data`` (without its digest) is a well-formed forecast record."""
    if set(data) | {"digest"} != _KEYS:
        raise _fail(f"fields are {sorted(set(data))}, expected {sorted(_KEYS - {'digest'})}")
    status = data["status"]
    if status not in _STATUSES:
        raise _fail(f"status is {status!r}, expected one of {_STATUSES}")
    for name in ("model_id", "contract"):
        if not _is_text(data[name]):
            raise _fail(f"{name} must be a non-empty string, got {data[name]!r:.60}")
    if data["action_scope"] not in _SCOPES:
        raise _fail(f"action_scope is {data['action_scope']!r:.60}, expected one of {_SCOPES}")
    _verify_episode(data["episode"])
    dim = _verify_coordinates(data["coordinates"])
    _verify_horizons(data["horizons"])
    _verify_error(status, data["error"])
    reference = data["reference"]
    if not isinstance(reference, dict) or set(reference) - {"unobserved"} != {"states", "ended"}:
        raise _fail("reference must be {states, ended} with an optional unobserved")
    if not isinstance(reference["ended"], str) or reference["ended"] not in ENDINGS:
        # A list here was a TypeError ("unhashable type") when the forecast was sealed.
        raise _fail(
            f"reference.ended is {reference['ended']!r:.60}, not how an episode ends (one "
            f"of {', '.join(ENDINGS)}); {_RESTORE}"
        )
    _verify_vectors(reference["states"], dim, "reference.states", allow_none=True)
    if "unobserved" in reference:
        _verify_unobserved(reference["unobserved"], reference["states"])
    request = data["request"]
    if request is not None:
        _verify_request(request, dim)
    if status == "ok":
        _verify_ok(data, dim)
    elif data["response"] is not None:
        raise ConsistencyError(f"a forecast with status {status!r} cannot carry a response")


def _verify_episode(episode: Any) -> None:
    if (
        not isinstance(episode, dict)
        or set(episode) != _EPISODE_KEYS
        or not _is_text(episode["digest"])
        or not isinstance(episode["case"], dict)
    ):
        raise _fail(f"episode must be {{{', '.join(sorted(_EPISODE_KEYS))}}} naming its digest")
    _verify_case_identity(episode["case"])


_IDENTITY = ("case_id", "source_id", "content_digest")


def _verify_case_identity(case: dict[str, Any]) -> None:
    """The reference's case identity (``EvalCase.identity``), which reports pair trials
    by: its names by the rules episode evidence checks its case with (``EvalCase``), and
    the content digest it cannot recompute here (the content is in the episode) as a
    sha256. A forecast without ``case_id`` verified, and its report raised a KeyError."""
    missing = [key for key in _IDENTITY if key not in case]
    unknown = sorted(set(case) - set(_IDENTITY))
    if missing or unknown:
        problem = f"lacks {missing[0]!r}" if missing else f"has {unknown[0]!r}"
        raise _fail(
            f"episode.case {problem}: it is the case identity {{{', '.join(_IDENTITY)}}} "
            f"(source_id may be null); {_RESTORE}"
        )
    # Episode evidence checks its case by rebuilding it (``EvalCase.from_dict``, in
    # ``episode._verify``); a forecast holds no case content to rebuild, so its names
    # get the checks that rebuilding makes of them.
    try:
        EvalCase(None, case_id=case["case_id"], source_id=case["source_id"])
    except InputError as exc:
        raise _fail(f"episode.case does not verify: {exc}; {_RESTORE}") from exc
    if case["case_id"] is None:
        raise _fail(f"episode.case.case_id is null: every case identity names it; {_RESTORE}")
    digest = case["content_digest"]
    if not is_digest(digest):
        raise _fail(
            f"episode.case.content_digest is {digest!r:.60}, not a sha256 (64 hex "
            f"digits); {_RESTORE}"
        )


def _verify_coordinates(coordinates: Any) -> int:
    if (
        not isinstance(coordinates, list)
        or not coordinates
        or not all(
            isinstance(c, dict)
            and set(c) == {"name", "unit", "angular"}
            and _is_text(c["name"])
            and "/" not in c["name"]
            and _is_text(c["unit"])
            and isinstance(c["angular"], bool)
            for c in coordinates
        )
    ):
        raise _fail("coordinates must be a non-empty list of {name, unit, angular: bool}")
    names = [c["name"] for c in coordinates]
    if len(set(names)) != len(names):
        raise _fail(f"coordinates repeat a name: {names}")
    return len(coordinates)


def _verify_horizons(horizons: Any) -> None:
    if (
        not isinstance(horizons, list)
        or not horizons
        or not all(_is_int(h) for h in horizons)
        or min(horizons) < 1
        or horizons != sorted(set(horizons))
    ):
        raise ConsistencyError(f"horizons {horizons!r:.60} must be distinct, sorted positive ints")


def _verify_error(status: str, error: Any) -> None:
    if (error is None) != (status == "ok"):
        raise ConsistencyError(f"forecast status {status!r} does not match its error {error!r}")
    if error is not None and (
        not isinstance(error, dict)
        or set(error) != {"type", "message"}
        or not all(isinstance(v, str) for v in error.values())
    ):
        raise _fail(f"error must be {{type, message}} strings, got {error!r:.60}")


def _verify_unobserved(unobserved: Any, states: list[Any]) -> None:
    """One ``{step, reason}`` per unobserved state, in order (a record captured before
    reasons were kept has no ``unobserved`` at all, and stays valid)."""
    missing = [position + 1 for position, row in enumerate(states) if row is None]
    if (
        not isinstance(unobserved, list)
        or not all(
            isinstance(gap, dict)
            and set(gap) == {"step", "reason"}
            and _is_int(gap["step"])
            and _is_text(gap["reason"])
            for gap in unobserved
        )
        or [gap["step"] for gap in unobserved] != missing
        or not missing
    ):
        raise _fail(
            f"reference.unobserved must give {{step, reason}} for each unobserved state "
            f"(steps {missing}), got {unobserved!r:.80}"
        )


def _verify_request(request: Any, dim: int) -> None:
    if not isinstance(request, dict) or set(request) != {"initial_state", "actions"}:
        raise _fail("request must be {initial_state, actions}")
    if not isinstance(request["actions"], list):
        raise _fail("request.actions must be a list")
    _verify_vectors([request["initial_state"]], dim, "request.initial_state")


def _verify_ok(data: dict[str, Any], dim: int) -> None:
    request, response = data["request"], data["response"]
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise _fail("an ok forecast needs a request and a response")
    if set(response) != {"states", "standard_deviation", "metadata"}:
        raise _fail("response must be {states, standard_deviation, metadata}")
    if not isinstance(response["metadata"], dict):
        raise _fail("response.metadata must be an object")
    steps = len(request["actions"])
    _verify_vectors(response["states"], dim, "response.states", length=steps)
    std = response["standard_deviation"]
    if std is not None:
        _verify_vectors(std, dim, "response.standard_deviation", length=steps)
        if any(value <= 0 for row in std for value in row):
            raise ConsistencyError("forecast standard deviations must be positive")
    if len(data["reference"]["states"]) > steps:
        raise ConsistencyError("the reference has more observed steps than requested actions")
    if data["action_scope"] == "planned" and max(data["horizons"]) > steps:
        raise ConsistencyError(
            f"horizon {max(data['horizons'])} exceeds the {steps} planned actions"
        )


def _verify_vectors(
    rows: Any, dim: int, field: str, *, length: int | None = None, allow_none: bool = False
) -> None:
    if not isinstance(rows, list) or (length is not None and len(rows) != length):
        raise _fail(f"{field} must be a list of {length or 'some'} vectors")
    present = [row for row in rows if row is not None] if allow_none else rows
    # The common case in C (a record holds thousands of numbers): lists of ``dim`` plain
    # ints and floats, as read from JSON (never a bool, whose type is not int).
    if (
        set(map(type, present)) <= _LIST
        and set(map(len, present)) <= {dim}
        and set(map(type, chain.from_iterable(present))) <= _NUMBERS
    ):
        return
    for row in rows:  # name the row at fault
        if row is None and allow_none:
            continue
        if (
            not isinstance(row, list)
            or len(row) != dim
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in row)
        ):
            raise _fail(f"{field} holds {row!r:.60}, not a vector of {dim} numbers")
