"""``forecast_case_result``: a forecast as an ordinary report trial.

One check per toleranced coordinate and declared horizon, named
``dynamics/<coordinate>/h<horizon>``: it passes when the absolute error is within the
tolerance. Censored or unobserved horizons are ``not_measured`` (so a policy that
requires ``dynamics/pole_angle/*`` is indeterminate when a horizon is missing), model
failures are ``model_error`` and reference failures are ``evaluator_error`` naming the
reference — never a score.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics._metrics import forecast_metrics, portable_number
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord.report import EvaluationReport, Trial

__all__ = ["CHECK_VERSION", "forecast_case_result", "forecast_report", "normalize_tolerances"]

CHECK_VERSION = "dynamics-abs-error/v1"
# Per horizon: Mapping is invariant in its key, so a user's ``dict[str, float]``
# ({"h1": 0.1, "*": 0.5}) or ``dict[int, float]`` ({1: 0.1}) is not a
# ``Mapping[int | str, float]``: the union names all three.
HorizonTolerances: TypeAlias = Mapping[int, float] | Mapping[str, float] | Mapping[int | str, float]
Tolerances: TypeAlias = Mapping[str, float | HorizonTolerances]


def _tolerance(value: Any, where: str) -> float:
    # numbers.Real admits numpy scalars (np.float32(0.1), np.int64(1)) as well as floats.
    number = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        # An int beyond float range (10**400) overflows: not a usable bound either.
        with contextlib.suppress(OverflowError):
            number = float(value)
    if not math.isfinite(number) or number < 0:
        raise InputError(
            f"{where} must be a finite non-negative number in the coordinate's unit, "
            f"got {value!r:.60}"
        )
    return number


def normalize_tolerances(
    tolerances: Any, coordinates: Mapping[str, str], horizons: tuple[int, ...]
) -> dict[str, dict[int, float]]:
    """``{coordinate: {horizon: tolerance}}``, refusing unknown names and bad numbers.

    A coordinate maps to one number (every horizon) or to ``{horizon: number}`` with an
    optional ``"*"`` default for horizons not listed.
    """
    if not isinstance(tolerances, Mapping) or not tolerances:
        raise InputError(
            "tolerances must be a non-empty mapping such as "
            "{'pole_angle': 0.01, 'cart_velocity': {1: 0.01, '*': 0.1}}"
        )
    out: dict[str, dict[int, float]] = {}
    for name, value in tolerances.items():
        if name not in coordinates:
            raise InputError(
                f"tolerances name the unknown coordinate {name!r}; the forecast "
                f"has {list(coordinates)}"
            )
        if not isinstance(value, Mapping):
            tol = _tolerance(value, f"tolerances[{name!r}]")
            out[name] = dict.fromkeys(horizons, tol)
            continue
        out[name] = _per_horizon(name, value, horizons)
    return out


def _horizon_key(key: Any) -> Any:
    # JSON and TOML keys are strings: accept "4" and "h4" as horizon 4.
    if isinstance(key, str) and key != "*":
        digits = key[1:] if key.startswith("h") else key
        return int(digits) if digits.isascii() and digits.isdigit() else key
    if isinstance(key, bool | np.bool_):
        return repr(key)  # True == 1 would otherwise silently mean horizon 1
    return int(key) if isinstance(key, numbers.Integral) else key


def _per_horizon(name: str, raw: Mapping[Any, Any], horizons: tuple[int, ...]) -> dict[int, float]:
    value: dict[Any, Any] = {}
    for key, item in raw.items():
        horizon = _horizon_key(key)
        if horizon in value:
            # 4 and "h4" both given: keeping either silently would hide a typo.
            raise InputError(
                f"tolerances[{name!r}] gives horizon {horizon} more than once "
                f"(as {key!r} and another key); keep one"
            )
        value[horizon] = item
    unknown = [h for h in value if h != "*" and h not in horizons]
    if unknown:
        raise InputError(
            f"tolerances[{name!r}] names horizons {unknown} that the forecast "
            f"does not declare; its horizons are {list(horizons)}"
        )
    table: dict[int, float] = {}
    for h in horizons:
        if h not in value and "*" not in value:
            raise InputError(
                f"tolerances[{name!r}] has no value for horizon {h}; add it or a '*' default"
            )
        table[h] = _tolerance(value.get(h, value.get("*")), f"tolerances[{name!r}][{h}]")
    return table


def forecast_case_result(
    forecast: ForecastEvidence, tolerances: Tolerances, *, repeat: int = 0
) -> Trial:
    """The ``Trial`` of one forecast under explicit absolute-error tolerances."""
    from onrecord.report import CheckResult, Trial

    if not isinstance(forecast, ForecastEvidence):
        raise InputError(
            f"forecast_case_result takes ForecastEvidence, got {type(forecast).__name__}"
        )
    table = normalize_tolerances(tolerances, forecast.coordinates, forecast.horizons)
    results, measures = _results(forecast, table, CheckResult)
    episode = forecast.episode
    issues = (
        (
            "action_scope is observed_prefix: the model saw the reference-dependent "
            "sequence length, so this is not a predeclared forecast",
        )
        if forecast.action_scope == "observed_prefix"
        else ()
    )
    settings = {
        "kind": "forecast",
        "contract": forecast.contract,
        "coordinates": forecast.coordinates,
        "angular": list(forecast.angular),
        "horizons": list(forecast.horizons),
        "action_scope": forecast.action_scope,
        "environment_id": episode["environment_id"],
        "observer_id": episode["observer_id"],
        "seed": episode["seed"],
        "tolerances": {
            name: {f"h{h}": tol for h, tol in per.items()} for name, per in table.items()
        },
    }
    unchecked = [name for name in forecast.coordinates if name not in table]
    if unchecked:
        # In the lock, so a reviewer sees what no check covers: a policy on
        # dynamics/*/h1 would otherwise accept with these coordinates never compared.
        # Absent when every coordinate is checked, so those trials are as before.
        settings["unchecked_coordinates"] = unchecked
    source = {
        "kind": "forecast",
        "digest": forecast.digest,
        "episode": episode["digest"],
        "model_id": forecast.model_id,
        "status": forecast.status,
    }
    return Trial(episode["case"], repeat, source, tuple(results), issues, measures, settings)


def _results(
    forecast: ForecastEvidence, table: dict[str, dict[int, float]], result_type: Any
) -> tuple[list[Any], dict[str, float]]:
    names = list(forecast.coordinates)
    if forecast.status != "ok":
        status = "model_error" if forecast.status == "model_error" else "evaluator_error"
        error = forecast.error or {}
        reason = (
            f"model error: {error.get('message')}"
            if status == "model_error"
            else f"reference {forecast.episode_digest[:12]} failed: {error.get('message')}"
        )
        return [
            result_type(f"dynamics/{name}/h{h}", CHECK_VERSION, status, reason, {})
            for name, per in table.items()
            for h in per
        ], {}
    metrics = forecast_metrics(forecast)
    errors = metrics.error.tolist()
    observed, gaps = forecast.observed_steps, forecast.unobserved
    results, measures = [], {}
    for name, per in table.items():
        j = names.index(name)
        for i, (h, tol) in enumerate(per.items()):
            check = f"dynamics/{name}/h{h}"
            value = errors[i][j]
            if value != value:  # NaN: nothing to compare
                reason = (
                    f"censored: the reference ended after {observed} steps"
                    if metrics.censored[i]
                    else _unobserved(h, gaps)
                )
                results.append(result_type(check, CHECK_VERSION, "not_measured", reason, {}))
                continue
            passed = abs(value) <= tol
            results.append(
                result_type(
                    check,
                    CHECK_VERSION,
                    "pass" if passed else "fail",
                    "within tolerance" if passed else "beyond tolerance",
                    # Two finite states can differ by more than the largest float; the
                    # report cannot hold an infinity, so it is written out as text.
                    {"error": value if math.isfinite(value) else portable_number(value)},
                )
            )
        measured = metrics.abs_error[:, j][metrics.measured[:, j]]
        mean = _mean_abs_error(measured)
        if mean is not None:
            # One continuous measure per coordinate keeps reports small while still
            # letting compare_reports bootstrap the error difference between models.
            measures[f"dynamics/{name}/mean_abs_error"] = mean
    return results, measures


def _unobserved(horizon: int, gaps: dict[int, str]) -> str:
    if horizon in gaps:
        return f"the reference's state after action {horizon} was not observed: {gaps[horizon]}"
    # A forecast captured before the reasons were kept: the same words as then, so a
    # report rebuilt from it keeps its digest.
    return "the actual state was not observed"


def _mean_abs_error(values: np.ndarray) -> float | None:
    """The mean, even where the plain sum overflows; None when there is nothing to
    average or an error itself is infinite (a report measure must be a finite number)."""
    if not len(values):
        return None
    with np.errstate(over="ignore"):
        mean = float(values.mean())
    if not math.isfinite(mean):
        mean = float((values / len(values)).sum())
    return mean if math.isfinite(mean) else None


def _check_same_subject(first: ForecastEvidence, forecast: ForecastEvidence) -> None:
    """A report is the evidence about one model on one state contract: another model's
    forecasts of the same cases would be numbered as repeats, and a policy would decide
    on the mixture (as ``aggregate_metrics`` refuses to pool them)."""
    if (forecast.model_id, forecast.contract) != (first.model_id, first.contract):
        raise InputError(
            f"forecast {forecast.digest[:12]} is of model {forecast.model_id!r} on "
            f"{forecast.contract!r}, but {first.digest[:12]} is of {first.model_id!r} on "
            f"{first.contract!r}; build one forecast_report per model and contract "
            "(compare_reports then compares the models)"
        )


def forecast_report(
    forecasts: Iterable[ForecastEvidence], tolerances: Tolerances
) -> EvaluationReport:
    """An ``EvaluationReport`` of many forecasts (one trial each, forecasts of one case
    numbered as repeats in order)."""
    from onrecord.report import EvaluationReport

    seen: dict[tuple[str, str], int] = {}
    trials = []
    first: ForecastEvidence | None = None
    for forecast in forecasts:
        if not isinstance(forecast, ForecastEvidence):
            raise InputError(
                f"forecast_report takes ForecastEvidence, got {type(forecast).__name__}"
            )
        first = first or forecast
        _check_same_subject(first, forecast)
        case = forecast.episode["case"]
        key = (case["case_id"], case["content_digest"])
        trials.append(forecast_case_result(forecast, tolerances, repeat=seen.get(key, 0)))
        seen[key] = seen.get(key, 0) + 1
    if not trials:
        # An empty report was returned quietly: a policy then found no check to decide
        # on, and aggregate_metrics refuses the same empty list.
        raise InputError(
            "forecast_report needs at least one ForecastEvidence, got none; pass the "
            "model's forecasts (capture_forecasts or load_forecasts)"
        )
    return EvaluationReport.from_trials(trials)
