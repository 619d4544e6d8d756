"""``capture_forecasts``: many references, one vectorized model call per request length.

``predict(initial_states, actions)`` gets ``[N, d]`` and ``[N, H]`` (or ``[N, H, a]``)
arrays (copies, so changing them cannot alter the record) and returns a ``Prediction`` or a
mapping with ``mean`` and optional ``standard_deviation`` ``[N, H, d]``, or ``samples``
``[N, S, H, d]`` (summarized by their mean and sample deviation), plus ``metadata``.
Each forecast is recorded exactly as ``capture_forecast`` would record it; a row with a
bad value gets its own ``model_error`` without spoiling the others, and a call that
raises is repeated one reference at a time, so only the references it raises on fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from onrecord._exceptions import describe_raised, exception_text
from onrecord.dynamics._capture import (
    ForecastSpec,
    _sealed,
    check_state_key,
    check_state_length,
    plan_scope,
    prepared,
    simulator_problem,
)
from onrecord.dynamics._envs import Coordinate
from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics._protocol import (
    Prediction,
    WorldModel,
    refuse_async,
    refuse_class,
    summarize_particles,
)
from onrecord.dynamics._response import (
    ModelError,
    answer_kind,
    check_array,
    check_deviation,
    numeric_array,
    read_answer,
    read_metadata,
)
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord.episode import EpisodeEvidence

__all__ = ["batch_predictor", "capture_forecasts", "request_predictor"]

BatchPredict = Callable[[np.ndarray, np.ndarray], Any]


def capture_forecasts(
    episodes: Sequence[EpisodeEvidence],
    predict: BatchPredict | WorldModel,
    *,
    model_id: str,
    contract: str,
    coordinates: Mapping[str, str] | Sequence[Coordinate],
    horizons: Sequence[int],
    planned_actions: Sequence[Sequence[Any] | None] | None = None,
    angular: Sequence[str] = (),
    state_key: str = "state",
) -> list[ForecastEvidence]:
    """Forecast many references with a vectorized model; one result per episode, in order.

    ``predict`` may be a ``WorldModel`` (its ``predict`` is called) or a callable.
    ``planned_actions`` holds one plan (or None) per episode.
    """
    from onrecord.episode import EpisodeEvidence

    episodes = list(episodes)
    if not all(isinstance(e, EpisodeEvidence) for e in episodes):
        raise InputError("capture_forecasts takes a list of EpisodeEvidence")
    plans = list(planned_actions) if planned_actions is not None else [None] * len(episodes)
    if len(plans) != len(episodes):
        raise InputError(
            f"planned_actions has {len(plans)} plans for {len(episodes)} "
            "episodes; give one plan (or None) per episode"
        )
    call = batch_predictor(predict)
    spec = ForecastSpec(model_id, contract, coordinates, horizons, angular, state_key)
    results: list[ForecastEvidence | None] = [None] * len(episodes)
    groups: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for n, (episode, plan) in enumerate(zip(episodes, plans, strict=True)):
        check_state_key(episode, state_key)
        check_state_length(episode, state_key, spec.coordinates)
        actions, scope = plan_scope(episode, plan, spec.horizons)
        initial, truth, request = prepared(episode, state_key, actions, spec.dim)
        record = spec.record(episode, scope, request, truth)
        problem = simulator_problem(episode, initial, spec.dim, spec.horizons)
        if problem is not None:
            results[n] = _sealed(
                record, "simulator_error", None, {"type": "SimulatorError", "message": problem}
            )
        else:
            groups.setdefault(len(actions), []).append((n, record))
    angle_mask = np.array([c["angular"] for c in spec.coordinates], dtype=bool)
    for steps, members in groups.items():
        for n, forecast in zip(
            [n for n, _ in members],
            _run_group(call, [r for _, r in members], steps, spec.dim, angle_mask),
            strict=True,
        ):
            results[n] = forecast
    return [r for r in results if r is not None]


def batch_predictor(predict: BatchPredict | WorldModel) -> BatchPredict:
    """The callable ``capture_forecasts`` uses for a model or a function."""
    refuse_class(predict, "predict")
    refuse_async(predict, "predict")
    if isinstance(predict, WorldModel):
        return predict.predict
    if not callable(predict):
        members = ("model_id", "fit", "predict", "describe")
        missing = [name for name in members if not hasattr(predict, name)]
        hint = f" (a WorldModel also needs {missing})" if hasattr(predict, "predict") else ""
        raise InputError(
            f"predict must be a WorldModel or a callable, got {type(predict).__name__}{hint}"
        )
    return predict


def request_predictor(
    model: WorldModel, *, angular: Sequence[bool] | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Adapt a ``WorldModel`` to ``capture_forecast``'s one-request callback.

    ``angular`` (one flag per coordinate) marks the angles whose particles, if the model
    returns samples, are summarized within half a turn of each other."""
    refuse_class(model, "model")
    refuse_async(model, "model")
    mask = None if angular is None else np.asarray(angular, dtype=bool)

    def predict(request: dict[str, Any]) -> dict[str, Any]:
        initial = np.asarray([request["initial_state"]], dtype=np.float64)
        prediction = model.predict(initial, np.asarray([request["actions"]]))
        # Read as capture_forecasts reads it, so a bare array or a wrong shape is named
        # as such instead of failing as "'builtin_function_or_method' object is not
        # subscriptable" (an ndarray's ``.mean`` is a method).
        steps, dim = len(request["actions"]), initial.shape[1]
        mean, std, _, sampled = _read(prediction, 1, steps, dim, mask)
        answer: dict[str, Any] = {
            "states": mean[0],
            "metadata": {"model_id": model.model_id},
        }
        if std is not None and not (sampled and _point_mass(std)):
            answer["standard_deviation"] = std[0]
        return answer

    return predict


def _run_group(
    call: BatchPredict,
    records: list[dict[str, Any]],
    steps: int,
    dim: int,
    angular: NDArray[np.bool_],
) -> list[ForecastEvidence]:
    initial = np.asarray([r["request"]["initial_state"] for r in records], dtype=np.float64)
    actions = np.asarray([r["request"]["actions"] for r in records])
    if actions.ndim == 1:  # zero actions
        actions = actions.reshape(len(records), 0)
    try:
        mean, std, metadata, sampled = _answer(
            call, initial, actions, (len(records), steps, dim), angular
        )
    except ModelError as exc:
        if isinstance(exc, _Raised) and len(records) > 1:
            # One reference the model cannot handle must not fail the references that
            # merely shared its batch: each is asked again alone, so a forecast's status
            # does not depend on which references were captured with it.
            return [f for r in records for f in _run_group(call, [r], steps, dim, angular)]
        error = {"type": "ModelError", "message": exception_text(exc)}
        return [_sealed(r, "model_error", None, dict(error)) for r in records]
    return [
        _row(r, mean[n], None if std is None else std[n], metadata, sampled)
        for n, r in enumerate(records)
    ]


class _Raised(ModelError):
    """The model's own call raised (as opposed to answering something invalid)."""


def _answer(
    call: BatchPredict,
    initial: np.ndarray,
    actions: np.ndarray,
    shape: tuple[int, int, int],
    angular: NDArray[np.bool_],
) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any], bool]:
    try:
        answer = call(initial.copy(), actions.copy())
    except Exception as exc:
        raise _Raised(f"the model raised {describe_raised(exc)}") from None
    return read_answer(_read, answer, *shape, angular)


def _read(
    answer: Any, count: int, steps: int, dim: int, angular: NDArray[np.bool_] | None = None
) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any], bool]:
    """Mean, std, metadata, and whether the std is the spread of particles."""
    sampled = False
    if isinstance(answer, Prediction):
        sampled = answer.samples is not None
        mean, std = answer.mean, answer.std
        if sampled and angular is not None and angular.any():
            mean, std = _angles_from_particles(answer, angular)
        answer = {"mean": mean, "standard_deviation": std}
    if not isinstance(answer, Mapping):
        raise ModelError(
            f"the model returned {answer_kind(answer)}, not a Prediction or "
            "a mapping with 'mean' or 'samples'"
        )
    unknown = sorted(set(map(str, answer)) - {"mean", "standard_deviation", "samples", "metadata"})
    if unknown:
        raise ModelError(f"the model returned unknown fields {unknown}")
    if "samples" in answer and answer["samples"] is not None:
        mean, std = _from_samples(answer["samples"], count, steps, dim, angular)
        sampled = True
    elif "mean" in answer:
        mean = _batch_array(answer["mean"], count, steps, dim, "mean")
        raw = answer.get("standard_deviation")
        std = None if raw is None else _batch_array(raw, count, steps, dim, "standard_deviation")
    else:
        raise ModelError("the model returned neither 'mean' nor 'samples'")
    return mean, std, read_metadata(answer.get("metadata")), sampled


def _point_mass(std: np.ndarray) -> bool:
    """Whether the spread of particles is exactly zero somewhere (and valid elsewhere):
    such a forecast keeps its mean and no deviations, as ``_row`` keeps it in a batch."""
    with np.errstate(invalid="ignore"):
        return bool(np.isfinite(std).all() and (std >= 0).all() and not (std > 0).all())


def _batch_array(value: Any, count: int, steps: int, dim: int, name: str) -> np.ndarray:
    array = numeric_array(value, name)
    if array.shape != (count, steps, dim):
        raise ModelError(
            f"{name} has shape {list(array.shape)}, expected "
            f"[{count}, {steps}, {dim}] (references, actions, coordinates)"
        )
    return array


def _from_samples(
    value: Any, count: int, steps: int, dim: int, angular: NDArray[np.bool_] | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    samples = numeric_array(value, "samples")
    if samples.ndim != 4 or samples.shape[0] != count or samples.shape[2:] != (steps, dim):
        raise ModelError(
            f"samples has shape {list(samples.shape)}, expected [{count}, S, {steps}, {dim}]"
        )
    if samples.shape[1] == 0:
        raise ModelError("samples holds no particles; give at least one per reference")
    if angular is not None and angular.any():
        samples = _unwrap_particles(samples, angular)
    return summarize_particles(samples)


def _angles_from_particles(prediction: Prediction, angular: NDArray[np.bool_]) -> tuple[Any, Any]:
    """A sampled Prediction's mean and std, with its angles summarized again from its
    particles: ``Prediction.from_samples`` averaged them as plain numbers, unaware which
    coordinates wrap. Anything malformed, or a negative or non-finite deviation, is left
    as given, for the usual checks to name as the model's error. A deviation of exactly
    0 is the particles' own (they agree there) and does not stop the angles' summary."""
    mean, std = prediction.mean, prediction.std
    samples = numeric_array(prediction.samples, "samples")
    given = np.shape(mean)
    if samples.ndim != 4 or samples.shape[1] < 2 or given != samples.shape[:1] + samples.shape[2:]:
        return mean, std
    if std is not None and (np.shape(std) != given or not (np.asarray(std) >= 0).all()):
        return mean, std
    unwrapped = _unwrap_particles(samples, angular)
    if unwrapped is samples:
        return mean, std
    angle_mean, angle_std = summarize_particles(unwrapped[..., angular])
    mean = np.array(mean, dtype=np.float64)
    mean[..., angular] = angle_mean
    if std is not None and angle_std is not None:
        std = np.array(std, dtype=np.float64)
        std[..., angular] = angle_std
    return mean, std


def _unwrap_particles(samples: np.ndarray, angular: NDArray[np.bool_]) -> np.ndarray:
    """Each angle's particles moved by whole turns to lie within half a turn of their
    circular mean. A model that wraps its angles as Acrobot does puts particles of an
    angle near pi at both pi - 0.01 and -pi + 0.01: averaged as numbers their mean is 0,
    half a turn from every particle, and their spread is ~pi. Particles that need no
    turn are left exactly as they are, so their mean and deviation do not change.

    The circular mean, not the first particle: a cloud centred on 0 but wider than half
    a turn (1.9 and -1.9) needs no turn, and turned towards its first particle its mean
    moved by ~1.5 rad."""
    angles = samples[..., angular]
    with np.errstate(invalid="ignore"):  # non-finite particles stay non-finite
        centre = np.arctan2(
            np.sin(angles).mean(axis=1, keepdims=True), np.cos(angles).mean(axis=1, keepdims=True)
        )
        turns = np.round((angles - centre) / (2 * np.pi))
    moved = np.nan_to_num(turns) != 0
    if not moved.any():
        return samples
    out = samples.astype(np.float64, copy=True)
    out[..., angular] = np.where(moved, angles - 2 * np.pi * turns, angles)
    return out


def _row(
    record: dict[str, Any],
    mean: np.ndarray,
    std: np.ndarray | None,
    metadata: dict[str, Any],
    sampled: bool,
) -> ForecastEvidence:
    steps, dim = mean.shape
    names = [c["name"] for c in record["coordinates"]]
    try:
        states = check_array(mean, steps, dim, "mean", names)
        if std is not None:
            check_array(std, steps, dim, "standard_deviation", names)
            # Particles that agree exactly (a deterministic coordinate, a grid world's
            # first step) are a point mass, which has no Gaussian density: the forecast
            # keeps its mean, as with a single particle, instead of being lost.
            check_deviation(std, ("horizon",), names, allow_zero=sampled)
            if not (std > 0).all():
                std = None
    except ModelError as exc:
        error = {"type": "ModelError", "message": exception_text(exc)}
        return _sealed(record, "model_error", None, error)
    response = {
        "states": states.tolist(),
        "metadata": metadata,
        "standard_deviation": None if std is None else std.tolist(),
    }
    return _sealed(record, "ok", response, None)
