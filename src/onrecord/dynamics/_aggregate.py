"""``aggregate_metrics``: many forecasts of one model, per coordinate × horizon.

Counts come first: for every horizon, how many forecasts were measured, censored (the
reference ended earlier), unobserved, or lost to model or simulator errors. Errors are
then summarized over the measured ones only: bias, MAE, RMSE, skill against persistence
(the initial state carried forward), and, with standard deviations, interval coverage
*beside* mean interval width, Gaussian NLL, closed-form Gaussian CRPS, a PIT histogram
and a calibration error. ``same_cohort=True`` keeps only forecasts measured at every
declared horizon, so a horizon curve is not a survivor curve; every count of a row then
describes that cohort, and the forecasts left out are counted apart (``left_out``,
``left_out_censored``). Units are never pooled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._angles import wrap_angles
from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics._extras import normal_cdf
from onrecord.dynamics._metrics import (
    _HALF_LOG_2PI,
    LEVELS,
    Z_SCORES,
    portable_number,
)
from onrecord.dynamics._protocol import FloatArray
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = ["PIT_BINS", "AggregateMetrics", "aggregate_metrics"]

PIT_BINS = 10
_CAL_LEVELS = np.arange(1, 20) / 20
_INV_SQRT_PI = 1 / math.sqrt(math.pi)
_STATS = ("bias", "mae", "rmse", "persistence_rmse", "skill", "nll", "crps", "calibration_error")


@dataclass(frozen=True, eq=False)
class AggregateMetrics:
    """Summary arrays are ``[H, d]`` (NaN when nothing was measured); coverage and width
    are ``[L, H, d]`` for ``LEVELS``; ``pit`` is ``[H, d, PIT_BINS]`` counts."""

    model_id: str
    coordinates: dict[str, str]
    horizons: tuple[int, ...]
    same_cohort: bool
    forecasts: int
    """Every forecast given, whatever its status."""
    model_errors: int
    simulator_errors: int
    cohort: int
    """Forecasts the statistics are computed over (ok, and in the cohort if requested)."""
    measured: NDArray[np.int64]
    """``[H, d]`` forecasts with an actual value at that horizon: the denominator."""
    censored: NDArray[np.int64]
    """``[H]`` forecasts of the cohort whose reference ended before the horizon (none,
    with ``same_cohort``: the cohort is observed at every horizon)."""
    with_std: int
    """How many of the cohort carried standard deviations."""
    bias: FloatArray
    mae: FloatArray
    rmse: FloatArray
    persistence_rmse: FloatArray
    skill: FloatArray
    """``1 - rmse / persistence_rmse``; NaN when persistence is exact."""
    coverage: FloatArray | None = None
    width: FloatArray | None = None
    nll: FloatArray | None = None
    crps: FloatArray | None = None
    pit: NDArray[np.int64] | None = None
    calibration_error: FloatArray | None = None
    """Mean over levels 0.05…0.95 of ``|fraction(PIT <= p) - p|``."""
    left_out: int = 0
    """With ``same_cohort``: ok forecasts left out, not observed at every horizon."""
    left_out_censored: NDArray[np.int64] | None = None
    """With ``same_cohort``: ``[H]`` of those left out, how many were censored there."""

    @property
    def unobserved(self) -> NDArray[np.int64]:
        """``[H, d]`` forecasts of the cohort neither measured nor censored there: the
        reference reached the horizon but its state was not observed (an observer error).
        Derived, so a row's ``denominator - censored - measured``: rows and saved
        experiment tables keep their fields."""
        return self.cohort - self.censored[:, None] - self.measured

    def rows(self) -> list[dict[str, Any]]:
        """One portable row per coordinate × horizon (None where unavailable)."""
        out = []
        for j, (name, unit) in enumerate(self.coordinates.items()):
            for i, h in enumerate(self.horizons):
                row: dict[str, Any] = {
                    "model_id": self.model_id,
                    "coordinate": name,
                    "unit": unit,
                    "horizon": h,
                    "measured": int(self.measured[i, j]),
                    "censored": int(self.censored[i]),
                    "denominator": self.cohort,
                }
                if self.same_cohort and self.left_out_censored is not None:
                    # Beside the cohort's own counts, never in them: "censored 29" next
                    # to "measured 11 of 11" read as a contradiction.
                    row["left_out_censored"] = int(self.left_out_censored[i])
                for stat in _STATS:
                    value = getattr(self, stat)
                    row[stat] = None if value is None else portable_number(value[i, j])
                for k, level in enumerate(LEVELS):
                    tag = round(level * 100)
                    row[f"coverage_{tag}"] = (
                        None if self.coverage is None else portable_number(self.coverage[k, i, j])
                    )
                    row[f"width_{tag}"] = (
                        None if self.width is None else portable_number(self.width[k, i, j])
                    )
                row["pit"] = None if self.pit is None else self.pit[i, j].tolist()
                out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Portable form: counts and every row."""
        return {
            "model_id": self.model_id,
            "coordinates": dict(self.coordinates),
            "horizons": list(self.horizons),
            "same_cohort": self.same_cohort,
            "forecasts": self.forecasts,
            "model_errors": self.model_errors,
            "simulator_errors": self.simulator_errors,
            "cohort": self.cohort,
            "with_std": self.with_std,
            **({"left_out": self.left_out} if self.same_cohort else {}),
            "levels": list(LEVELS),
            "rows": self.rows(),
        }

    def __rich__(self) -> Printed:
        """A table, one row per coordinate × horizon (``rich.print``, IPython with rich)."""
        from onrecord._display_dynamics import aggregate_view

        return aggregate_view(self)

    def _repr_html_(self) -> str:
        """The same table for Jupyter: names escaped, no script."""
        from onrecord._display_dynamics_html import aggregate_html

        return aggregate_html(self)


def _signature(forecast: ForecastEvidence) -> tuple[Any, ...]:
    data = forecast._data
    return (data["contract"], data["coordinates"], data["horizons"], data["model_id"])


def observed_everywhere(forecast: ForecastEvidence) -> bool:
    # Not censored *and* no unobserved state at a declared horizon: otherwise the
    # "same cohort" would still have a different denominator at that horizon.
    layout = forecast._layout
    if layout.measured < len(forecast.horizons):
        return False
    return not layout.gaps or not np.isnan(forecast._truth[layout.rows]).any()


def _stack(
    forecasts: Sequence[ForecastEvidence], index: NDArray[np.int64]
) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """Errors, persistence errors and std ``[N, H, d]`` of ok forecasts; NaN = no value."""
    total = len(index)
    with_std = all(f._std is not None for f in forecasts)
    layouts = [f._layout for f in forecasts]
    if all(layout[1] == total and isinstance(layout[0], slice) for layout in layouts):
        # Every horizon observed and the horizons are 1..H: stack views, no fancy indexing.
        mean = np.stack([f._mean[:total] for f in forecasts])
        truth = np.stack([f._truth[:total] for f in forecasts])
        std = np.stack([f._std[:total] for f in forecasts]) if with_std else None  # type: ignore[index]
    else:
        mean, truth, std = _stack_ragged(forecasts, index, with_std)
    initial = np.stack([f._initial for f in forecasts])[:, None, :]
    mask = forecasts[0].angular_mask
    return (wrap_angles(mean - truth, mask), wrap_angles(initial - truth, mask), std)


def _stack_ragged(
    forecasts: Sequence[ForecastEvidence], index: NDArray[np.int64], with_std: bool
) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    count, dim = len(forecasts), len(forecasts[0].coordinates)
    mean = np.full((count, len(index), dim), np.nan)
    truth = np.full_like(mean, np.nan)
    std = np.full_like(mean, np.nan) if with_std else None
    for n, forecast in enumerate(forecasts):
        rows, measured = forecast._layout[0], forecast._layout[1]
        mean[n, :measured] = forecast._mean[rows]
        truth[n, :measured] = forecast._truth[rows]
        if std is not None:
            std[n, :measured] = forecast._std[rows]  # type: ignore[index]
    return mean, truth, std


def aggregate_metrics(
    forecasts: Sequence[ForecastEvidence], *, same_cohort: bool = False
) -> AggregateMetrics:
    """Summaries per coordinate × horizon over many forecasts of one model."""
    forecasts = list(forecasts)
    if not forecasts or not all(isinstance(f, ForecastEvidence) for f in forecasts):
        raise InputError("aggregate_metrics needs a non-empty list of ForecastEvidence")
    if not isinstance(same_cohort, bool):
        # A truthy string such as "no" would otherwise silently switch the cohort on.
        raise InputError(f"same_cohort must be True or False, got {same_cohort!r}")
    first = forecasts[0]
    signature = _signature(first)
    for forecast in forecasts:
        if _signature(forecast) != signature:
            raise InputError(
                f"forecast {forecast.digest[:12]} ({forecast.model_id}, {forecast.contract}) "
                f"differs from {first.digest[:12]} ({first.model_id}, {first.contract}) in "
                "model, contract, coordinates, units or horizons; aggregate each group "
                "separately, since unlike units are never pooled"
            )
    horizons = np.asarray(first.horizons)
    ok = [f for f in forecasts if f._data["status"] == "ok"]
    cohort_extra: dict[str, Any] = {}
    if same_cohort:
        left_out = [f for f in ok if not observed_everywhere(f)]
        ok = [f for f in ok if observed_everywhere(f)]
        cohort_extra = {
            "left_out": len(left_out),
            "left_out_censored": _censored(left_out, horizons),
        }
    statuses = [f._data["status"] for f in forecasts]
    shape = (len(horizons), len(first.coordinates))
    base: dict[str, Any] = {
        "model_id": first.model_id,
        "coordinates": first.coordinates,
        "horizons": first.horizons,
        "same_cohort": same_cohort,
        "forecasts": len(forecasts),
        "cohort": len(ok),
        # Counted over the cohort only, like ``measured`` and the denominator.
        "censored": _censored(ok, horizons),
        **cohort_extra,
        "model_errors": statuses.count("model_error"),
        "simulator_errors": statuses.count("simulator_error"),
    }
    if not ok:
        nan = np.full(shape, np.nan)
        return AggregateMetrics(
            **base,
            measured=np.zeros(shape, np.int64),
            with_std=0,
            bias=nan,
            mae=nan,
            rmse=nan,
            persistence_rmse=nan,
            skill=nan,
        )
    error, persistence, std = _stack(ok, horizons - 1)
    # Counted, not inferred from whether uncertainty statistics exist: in a mixed cohort
    # they are withheld (their denominator would differ), but the count stays honest.
    with_std = sum(f._std is not None for f in ok)
    return _summarize(base, error, persistence, std, with_std)


def _censored(forecasts: Sequence[ForecastEvidence], horizons: NDArray[Any]) -> NDArray[np.int64]:
    """``[H]`` how many of ``forecasts`` are censored at each horizon (each forecast's own
    mask: only the environment's ending censors)."""
    counts = np.zeros(len(horizons), dtype=np.int64)
    for forecast in forecasts:
        counts += forecast._layout.censored
    return counts


class _Mask:
    """Restricts sums to measured cells; a no-op (and free) when every cell is measured."""

    def __init__(self, measured: NDArray[np.bool_]) -> None:
        self.measured = measured
        self.full = bool(measured.all())

    def keep(self, values: Any, fill: float = 0.0) -> Any:
        return values if self.full else np.where(self.measured, values, fill)

    def both(self, flags: NDArray[np.bool_], extra_axes: int = 0) -> NDArray[np.bool_]:
        if self.full:
            return flags
        shaped = self.measured[(None,) * extra_axes] if extra_axes else self.measured[..., None]
        result: NDArray[np.bool_] = flags & shaped
        return result


def _summarize(
    base: dict[str, Any],
    error: FloatArray,
    persistence: FloatArray,
    std: FloatArray | None,
    with_std: int,
) -> AggregateMetrics:
    mask = _Mask(~np.isnan(error))
    counts = mask.measured.sum(axis=0)
    # over: a huge error against a tiny persistence RMSE makes the skill truly -inf.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        denominator = np.where(counts > 0, counts, np.nan)
        filled = mask.keep(error)
        bias = _mean(filled, denominator)
        mae = _mean(np.abs(filled), denominator)
        rmse = _rms(filled, denominator)
        persisted = mask.keep(persistence)
        persistence_rmse = _rms(persisted, denominator)
        skill = np.where(persistence_rmse > 0, 1 - rmse / persistence_rmse, np.nan)
    stats: dict[str, Any] = {
        "measured": counts,
        "with_std": with_std,
        "bias": bias,
        "mae": mae,
        "rmse": rmse,
        "persistence_rmse": persistence_rmse,
        "skill": skill,
    }
    if std is not None:
        stats.update(_uncertainty(filled, mask, mask.keep(std, 1.0), denominator))
    return AggregateMetrics(**base, **stats)


def _mean(values: FloatArray, denominator: FloatArray) -> FloatArray:
    """Column means; where the plain sum overflows although every value is finite, the
    mean is taken of the values divided first (the mean of finite numbers is finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        plain: FloatArray = values.sum(axis=0) / denominator
        infinite = np.isinf(plain)
        if infinite.any():  # rare: only then look at the values again
            spilled = infinite & np.isfinite(values).all(axis=0)
            plain = np.where(spilled, (values / denominator).sum(axis=0), plain)
    return plain


def _rms(values: FloatArray, denominator: FloatArray) -> FloatArray:
    """Root mean square; where squaring overflows although every value is finite (errors
    beyond ~1e154), the values are scaled by their largest magnitude first."""
    with np.errstate(over="ignore", invalid="ignore"):
        plain: FloatArray = np.sqrt((values * values).sum(axis=0) / denominator)
        infinite = np.isinf(plain)
        spilled = infinite & np.isfinite(values).all(axis=0) if infinite.any() else infinite
        if spilled.any():
            scale = np.abs(values).max(axis=0)
            scale = np.where(scale > 0, scale, 1.0)
            scaled = values / scale
            plain = np.where(
                spilled, scale * np.sqrt((scaled * scaled).sum(axis=0) / denominator), plain
            )
    return plain


def _uncertainty(
    error: FloatArray, mask: _Mask, std: FloatArray, denominator: FloatArray
) -> dict[str, Any]:
    ndtr = normal_cdf()
    with np.errstate(over="ignore", under="ignore"):  # tiny deviations: |z| may be inf
        z = error / std
        abs_z = np.abs(z)
        nll = mask.keep(_HALF_LOG_2PI + np.log(std) + 0.5 * z * z)
        pdf = np.exp(-0.5 * z * z) * (1 / math.sqrt(2 * math.pi))
    # |error| <= z * std, exactly as forecast_metrics decides ``covered``: |error| / std
    # <= z rounds differently at the bound, and the coverage of a set of forecasts must
    # be the share of them whose own interval covered the actual value.
    half = Z_SCORES[:, None, None, None] * std[None]
    inside = mask.both(np.abs(error)[None] <= half, extra_axes=1)
    coverage = inside.sum(axis=1) / denominator
    width = 2 * Z_SCORES[:, None, None] * _mean(mask.keep(std), denominator)
    cdf = ndtr(abs_z)
    with np.errstate(invalid="ignore"):
        crps = std * (abs_z * (2 * cdf - 1) + 2 * pdf - _INV_SQRT_PI)
    # When error / std overflows, std * inf would say inf; the limit is |error| (the
    # point forecast's CRPS). Finite cells keep the usual form, so saved runs replay.
    crps = mask.keep(np.where(np.isfinite(abs_z), crps, np.abs(error)))
    # PIT of the actual value under the forecast: Phi((actual - mean) / std) = Phi(-z).
    pit = np.where(z <= 0, cdf, 1 - cdf)
    bins = np.minimum((pit * PIT_BINS).astype(np.int64), PIT_BINS - 1)
    histogram = mask.both(bins[..., None] == np.arange(PIT_BINS))
    below = mask.both(pit[None] <= _CAL_LEVELS[:, None, None, None], extra_axes=1).sum(axis=1)
    calibration = np.abs(below / denominator - _CAL_LEVELS[:, None, None]).mean(axis=0)
    return {
        "coverage": coverage,
        "width": width,
        "nll": _mean(nll, denominator),
        "crps": _mean(crps, denominator),
        "pit": histogram.sum(axis=0),
        "calibration_error": calibration,
    }
