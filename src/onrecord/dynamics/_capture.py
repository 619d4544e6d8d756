"""``capture_forecast``: ask a model to forecast an actual reference, and keep both.

The model sees a detached request holding only ``initial_state`` and ``actions``. Its
answer is validated (one finite vector per action, positive deviations, portable
metadata); anything else is recorded as ``model_error``. The request is the model's own
copy: changing it changes nothing recorded.
A reference whose simulator, setup, observer or cleanup failed, or whose own ``interact``
raised before the last declared horizon, gets ``simulator_error`` and the model is never
called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from onrecord._canonical import to_portable
from onrecord._exceptions import describe_raised, exception_text
from onrecord.dynamics._envs import Coordinate
from onrecord.dynamics._evidence import FORECAST_SCHEMA, ForecastEvidence
from onrecord.dynamics._gaps import unobserved_steps
from onrecord.dynamics._layout import censors
from onrecord.dynamics._protocol import WorldModel, refuse_async, refuse_class, state_vector
from onrecord.dynamics._response import ModelError, check_response, read_answer
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord.episode import EpisodeEvidence

__all__ = ["ForecastSpec", "capture_forecast", "reference_states"]

Predict = Callable[[dict[str, Any]], Any]
_SIMULATOR_PHASES = ("factory", "reset", "step", "cleanup")


class ForecastSpec:
    """Validated ``model_id``, ``contract``, coordinates and horizons of a capture."""

    __slots__ = ("contract", "coordinates", "dim", "horizons", "model_id", "state_key")

    def __init__(
        self,
        model_id: Any,
        contract: Any,
        coordinates: Any,
        horizons: Any,
        angular: Any,
        state_key: str,
    ) -> None:
        for name, value in (("model_id", model_id), ("contract", contract)):
            if not isinstance(value, str) or not value.strip():
                raise InputError(
                    f"{name} must be a non-empty string such as 'persistence/v1', got {value!r}"
                )
        if not isinstance(state_key, str) or not state_key:
            raise InputError(
                f"state_key must be the key of the state vector in the observer's output "
                f"such as 'state', got {state_key!r}"
            )
        self.model_id, self.contract, self.state_key = model_id, contract, state_key
        self.coordinates = _coordinates(coordinates, angular)
        self.dim = len(self.coordinates)
        self.horizons = _horizons(horizons)

    def record(
        self, episode: Any, scope: str, request: dict[str, Any] | None, truth: list[Any]
    ) -> dict[str, Any]:
        """The record fields every forecast of this capture shares."""
        return {
            "schema": FORECAST_SCHEMA,
            "episode": episode_reference(episode),
            "model_id": self.model_id,
            "contract": self.contract,
            "coordinates": self.coordinates,
            "horizons": self.horizons,
            "action_scope": scope,
            "request": request,
            "reference": self._reference(episode, truth),
        }

    def _reference(self, episode: Any, truth: list[Any]) -> dict[str, Any]:
        reference: dict[str, Any] = {"states": truth, "ended": episode.ended}
        gaps = unobserved_steps(episode, self.state_key, self.dim, truth)
        if gaps:  # only then: a complete reference's record (and digest) is as before
            reference["unobserved"] = gaps
        return reference


def _coordinates(coordinates: Any, angular: Any) -> list[dict[str, Any]]:
    if isinstance(coordinates, Mapping):
        items = [Coordinate(name, unit) for name, unit in coordinates.items()]
    elif isinstance(coordinates, Sequence) and all(isinstance(c, Coordinate) for c in coordinates):
        items = list(coordinates)
    else:
        raise InputError(
            "coordinates must map each state coordinate to its unit, e.g. "
            f"{{'x': 'm', 'angle': 'rad'}}, got {coordinates!r:.80}"
        )
    names = [c.name for c in items]
    angular = _angular_names(angular)
    if not items or any(
        not isinstance(c.name, str)
        or not c.name
        or "/" in c.name
        or not isinstance(c.unit, str)
        or not c.unit
        for c in items
    ):
        raise InputError(
            "coordinates need at least one entry; names and units must be "
            "non-empty strings and names may not contain '/'"
        )
    if len(set(names)) != len(names):
        # Names key every metric and check; a repeated name would silently merge two
        # state components into one.
        repeated = sorted({name for name in names if names.count(name) > 1})
        raise InputError(f"coordinates repeat the names {repeated}; give each one a unique name")
    extra = sorted(set(angular) - set(names))
    if extra:
        raise InputError(
            f"angular names unknown coordinates {extra}; declare them in coordinates {names} first"
        )
    return [
        {"name": c.name, "unit": c.unit, "angular": c.angular or c.name in angular} for c in items
    ]


def _angular_names(angular: Any) -> set[str]:
    # A bare string would otherwise be read character by character: "xy" would make
    # both "x" and "y" angular without a word.
    if isinstance(angular, str) or not isinstance(angular, Iterable):
        raise InputError(
            f"angular must be a list of coordinate names such as ('theta',), got {angular!r}"
        )
    names = list(angular)
    if not all(isinstance(name, str) for name in names):
        raise InputError(f"angular must hold coordinate names (strings), got {names!r}")
    return set(names)


def _horizons(horizons: Any) -> list[int]:
    try:
        given = list(horizons)  # once: a generator can be read a single time
    except TypeError:
        raise InputError(f"horizons must be a list of positive ints, got {horizons!r}") from None
    values = [int(h) for h in given if type(h) is int or isinstance(h, np.integer)]
    if (
        not values
        or len(values) != len(given)
        or min(values) < 1
        or len(set(values)) != len(values)
    ):
        raise InputError(
            f"horizons must be distinct positive ints such as [1, 4], got {horizons!r}"
        )
    return sorted(values)


def episode_reference(episode: Any) -> dict[str, Any]:
    """How a forecast names its reference: digest, case identity, environment."""
    env = episode.environment
    case = episode.case
    identity = {key: case.get(key) for key in ("case_id", "source_id", "content_digest")}
    return {
        "digest": episode.digest,
        "case": identity,
        "environment_id": env["environment_id"],
        "observer_id": env["observer_id"],
        "seed": env["seed"],
    }


def reference_states(
    episode: Any, state_key: str = "state"
) -> tuple[list[float] | None, list[list[float] | None]]:
    """The observed initial state and the state after each executed action."""
    transitions = episode.transitions()
    initial = state_vector(episode.initial.get("state"), state_key)
    return initial, [state_vector(step["state"], state_key) for step in transitions]


def check_state_key(episode: Any, state_key: str) -> None:
    """``InputError`` when the observer answered without ``state_key``: the caller's key
    is wrong, and blaming the simulator ("initial state not observed") would hide the fix."""
    observed = episode.initial.get("state")
    if isinstance(observed, Mapping) and state_key not in observed:
        raise InputError(
            f"state_key {state_key!r} is not in the reference's observer output, which "
            f"has the keys {sorted(map(str, observed))}; pass the key of the state vector"
        )


def check_state_length(episode: Any, state_key: str, coordinates: list[dict[str, Any]]) -> None:
    """``InputError`` when the reference's observed initial state is not one number per
    declared coordinate: the caller's ``coordinates`` (or references) do not fit, and
    recording it as the reference's ``simulator_error`` blamed the environment."""
    initial = state_vector(episode.initial.get("state"), state_key)
    if initial is not None and len(initial) != len(coordinates):
        names = [c["name"] for c in coordinates]
        raise InputError(
            f"coordinates declare {len(names)} ({names}) but the reference "
            f"{episode.digest[:12]} observes a state of {len(initial)} numbers under "
            f"{state_key!r}; declare one coordinate per number of the state vector, in order"
        )


def prepared(
    episode: Any, state_key: str, actions: list[Any], dim: int
) -> tuple[list[float] | None, list[list[float] | None], dict[str, Any] | None]:
    """Initial state, per-step truth and the model request; vectors of the wrong length
    are kept out (``simulator_problem`` then says why)."""
    initial, truth = reference_states(episode, state_key)
    truth = [row if row is not None and len(row) == dim else None for row in truth]
    if initial is None or len(initial) != dim:
        return initial, truth, None
    return initial, truth, {"initial_state": initial, "actions": actions}


def simulator_problem(
    episode: Any, initial: list[float] | None, dim: int, horizons: Sequence[int]
) -> str | None:
    """Why the reference cannot be forecast, or None."""
    for failure in episode.failures():
        if failure["phase"] in _SIMULATOR_PHASES:
            return (
                f"reference {failure['phase']} failed at step {failure['index']}: "
                f"{failure['type']}: {failure['message']}"
            )
    if initial is None:
        return "the reference's initial state was not observed"
    if len(initial) != dim:
        return f"the reference state has {len(initial)} numbers but {dim} coordinates are declared"
    return unexecuted_horizon(episode, horizons)


def unexecuted_horizon(episode: Any, horizons: Sequence[int]) -> str | None:
    """Why a declared horizon was never executed although nothing censored it (see
    ``censors``: the reference's ``interact`` raised first), or None."""
    executed = len(episode.transitions())
    if executed >= max(horizons) or censors(episode.ended):
        return None
    return (
        f"the reference's interact failed after {executed} actions, before horizon "
        f"{max(horizons)} ({episode.coverage_issues[0]}); its later horizons were never "
        "executed, so they are not censored: fix the interact and capture the reference again"
    )


def plan_scope(episode: Any, planned_actions: Any, horizons: list[int]) -> tuple[list[Any], str]:
    """The actions to request and the recorded ``action_scope``."""
    executed = episode.actions()
    if planned_actions is None:
        return executed, "observed_prefix"
    # A Box action sent as a NumPy array is recorded as plain nested lists (its
    # ``tolist()``); encoded as an ``$ndarray`` object it would never equal the executed
    # action, and the model would receive that object instead of numbers.
    plan = to_portable(
        [a.tolist() if isinstance(a, np.ndarray) else a for a in planned_actions],
        "$.planned_actions",
    )
    if plan[: len(executed)] != executed or len(executed) > len(plan):
        first = next(
            (i for i, (p, e) in enumerate(zip(plan, executed, strict=False)) if p != e),
            min(len(plan), len(executed)),
        )
        raise InputError(
            f"planned_actions differ from the executed actions at step {first}"
            f" (planned {plan[first : first + 1]}, executed "
            f"{executed[first : first + 1]}); pass the plan the reference ran, "
            "or omit planned_actions to forecast the observed prefix"
        )
    if max(horizons) > len(plan):
        raise InputError(
            f"horizon {max(horizons)} exceeds the {len(plan)} planned actions; "
            "plan at least as many actions as the longest horizon"
        )
    return plan, "planned"


def capture_forecast(
    episode: EpisodeEvidence,
    predict: Predict | WorldModel,
    *,
    model_id: str,
    contract: str,
    coordinates: Mapping[str, str] | Sequence[Coordinate],
    horizons: Sequence[int],
    planned_actions: Sequence[Any] | None = None,
    angular: Sequence[str] = (),
    state_key: str = "state",
) -> ForecastEvidence:
    """Forecast an actual reference episode with ``predict`` and bind both together.

    ``predict(request)`` receives ``{"initial_state": [...], "actions": [...]}`` and
    returns ``{"states": [...], "standard_deviation": [...]?, "metadata": {...}?}`` with
    one vector per action. ``angular`` names coordinates whose errors wrap. A
    ``WorldModel`` may be passed instead (asked through ``request_predictor``).
    """
    from onrecord.episode import EpisodeEvidence

    if not isinstance(episode, EpisodeEvidence):
        raise InputError(
            f"episode must be EpisodeEvidence from capture_episode, got {type(episode).__name__}"
        )
    refuse_class(predict, "predict")
    refuse_async(predict, "predict")
    spec = ForecastSpec(model_id, contract, coordinates, horizons, angular, state_key)
    if isinstance(predict, WorldModel) and not callable(predict):
        # As capture_forecasts does: a model object is asked through its predict, its
        # particles of an angle summarized as angles.
        from onrecord.dynamics._batch import request_predictor

        predict = request_predictor(predict, angular=[c["angular"] for c in spec.coordinates])
    if not callable(predict):
        raise InputError(
            f"predict must be a callable or a WorldModel, got {type(predict).__name__}"
        )
    check_state_key(episode, state_key)
    check_state_length(episode, state_key, spec.coordinates)
    actions, scope = plan_scope(episode, planned_actions, spec.horizons)
    initial, truth, request = prepared(episode, state_key, actions, spec.dim)
    record = spec.record(episode, scope, request, truth)
    problem = simulator_problem(episode, initial, spec.dim, spec.horizons)
    if problem is not None:
        return _sealed(
            record, "simulator_error", None, {"type": "SimulatorError", "message": problem}
        )
    assert request is not None
    try:
        names = [c["name"] for c in spec.coordinates]
        response = _call(predict, request, len(actions), names)
    except ModelError as exc:
        error = {"type": "ModelError", "message": exception_text(exc)}
        return _sealed(record, "model_error", None, error)
    return _sealed(record, "ok", response, None)


def _call(
    predict: Predict, request: dict[str, Any], steps: int, names: list[str]
) -> dict[str, Any]:
    # A copy of its own: a model that edits it in place (appends to the actions, shifts
    # the initial state) changes nothing recorded, so its forecast is scored as any other.
    detached = orjson.loads(orjson.dumps(request))
    try:
        answer = predict(detached)
    except ModelError:
        raise  # request_predictor's own reading of a WorldModel's answer, already worded
    except Exception as exc:
        raise ModelError(f"the model raised {describe_raised(exc)}") from None
    return read_answer(check_response, answer, steps, len(names), names)


def _sealed(
    record: dict[str, Any],
    status: str,
    response: dict[str, Any] | None,
    error: dict[str, str] | None,
) -> ForecastEvidence:
    record.update(status=status, response=response, error=error)
    return ForecastEvidence._from_trusted(record)
