"""``forecast_metrics``: the errors of one forecast against its actual reference.

Every number stays in its coordinate's unit. Horizons after the reference's observed
prefix are *censored*: they have no error, no interval and no density, and nothing
fills them. With standard deviations the forecast also gets central Gaussian intervals
at ``LEVELS``, whether each covered the actual value, and the Gaussian negative log
density (a density, not a probability: it depends on units and can be negative).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._angles import wrap_angles
from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics._protocol import FloatArray
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = ["LEVELS", "ForecastMetrics", "forecast_metrics", "portable_number"]

LEVELS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)
"""Nominal central-interval levels reported wherever a standard deviation exists."""
Z_SCORES = np.array([NormalDist().inv_cdf(0.5 + level / 2) for level in LEVELS])
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_Z_COLUMN = Z_SCORES[:, None, None]
"""``Z_SCORES`` shaped to scale a ``[H, d]`` std into ``[levels, H, d]`` half-widths."""


def portable_number(value: Any) -> float | str | None:
    """A number for a portable table: NaN (nothing measured) is None, and an infinity is
    the text ``"Infinity"`` or ``"-Infinity"``. JSON has no infinity, and the canonical
    writer would turn it into null, so an infinite NLL would read as "not measured"."""
    number = float(value)
    if math.isnan(number):
        return None
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return number


@dataclass(frozen=True, eq=False)
class ForecastMetrics:
    """Per-horizon, per-coordinate errors of one forecast. Arrays are ``[H, d]`` with
    NaN where a horizon is censored or unobserved; interval arrays are ``[L, H, d]``."""

    forecast_digest: str
    """The forecast these numbers come from."""
    model_id: str
    """Its model."""
    status: str
    """``ok``, ``model_error`` or ``simulator_error``; only ``ok`` has numbers."""
    coordinates: Mapping[str, str]
    """``{name: unit}`` in state order (read-only)."""
    horizons: tuple[int, ...]
    """Declared horizons, the rows of every array."""
    censored: NDArray[np.bool_]
    """``[H]`` true where the horizon lies after the observed prefix."""
    measured: NDArray[np.bool_]
    """``[H, d]`` true where an error exists."""
    error: FloatArray
    """Signed error, prediction minus actual, in the coordinate's unit."""
    abs_error: FloatArray
    """Absolute error."""
    std: FloatArray | None = None
    """Predicted standard deviation at each horizon, if given."""
    lower: FloatArray | None = None
    """Lower bounds of the central intervals at ``LEVELS``; an angle's interval is the
    model's, moved by whole turns onto the actual value's branch."""
    upper: FloatArray | None = None
    """Upper bounds."""
    covered: NDArray[np.bool_] | None = None
    """Whether each interval held the actual value (False where unmeasured)."""
    nll: FloatArray | None = None
    """Gaussian negative log density of the actual value."""
    unobserved: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    """``{horizon: reason}`` for declared horizons the reference reached without an
    observed state (see ``ForecastEvidence.unobserved``)."""

    @classmethod
    def _make(
        cls,
        forecast: ForecastEvidence,
        measured: NDArray[np.bool_],
        error: FloatArray,
        abs_error: FloatArray,
        std: FloatArray | None = None,
        lower: FloatArray | None = None,
        upper: FloatArray | None = None,
        covered: NDArray[np.bool_] | None = None,
        nll: FloatArray | None = None,
    ) -> ForecastMetrics:
        # Filling __dict__ directly skips the frozen dataclass's per-field setattr, which
        # would otherwise cost as much as the arithmetic itself.
        self = object.__new__(cls)
        data, layout = forecast._data, forecast._layout
        self.__dict__.update(
            forecast_digest=forecast._digest,
            model_id=data["model_id"],
            status=data["status"],
            coordinates=layout.units,
            horizons=forecast.horizons,
            censored=layout.censored,
            measured=measured,
            error=error,
            abs_error=abs_error,
            std=std,
            lower=lower,
            upper=upper,
            covered=covered,
            nll=nll,
            unobserved=MappingProxyType(
                {h: why for h, why in forecast.unobserved.items() if h in forecast.horizons}
            ),
        )
        return self

    def to_dict(self) -> dict[str, Any]:
        """Portable nested form: coordinate → ``h<horizon>`` → numbers (None if absent);
        a cell whose state was not observed holds the reason as ``unobserved``."""
        coords: dict[str, Any] = {}
        for j, (name, unit) in enumerate(self.coordinates.items()):
            coords[name] = {
                "unit": unit,
                "horizons": {f"h{h}": self._cell(i, j) for i, h in enumerate(self.horizons)},
            }
        return {
            "forecast": self.forecast_digest,
            "model_id": self.model_id,
            "status": self.status,
            "levels": list(LEVELS),
            "coordinates": coords,
        }

    def _cell(self, i: int, j: int) -> dict[str, Any]:
        if not self.measured[i, j]:
            gap: dict[str, Any] = {"censored": bool(self.censored[i]), "measured": False}
            unobserved = self.status == "ok" and not self.censored[i]  # as ``str`` decides
            why = self.unobserved.get(self.horizons[i]) if unobserved else None
            if why is not None:
                # As ``str`` prints it: the JSON form said only ``measured: false``. Only
                # forecasts that keep reasons have the key (the form is never digested).
                gap["unobserved"] = why
            return gap
        cell: dict[str, Any] = {
            "censored": False,
            "measured": True,
            "error": portable_number(self.error[i, j]),
            "abs_error": portable_number(self.abs_error[i, j]),
        }
        if (
            self.std is not None
            and self.lower is not None
            and self.upper is not None
            and self.covered is not None
            and self.nll is not None
        ):
            cell["std"] = portable_number(self.std[i, j])
            cell["nll"] = portable_number(self.nll[i, j])
            cell["intervals"] = {
                f"{round(level * 100)}": {
                    "lower": portable_number(self.lower[k, i, j]),
                    "upper": portable_number(self.upper[k, i, j]),
                    "covered": bool(self.covered[k, i, j]),
                }
                for k, level in enumerate(LEVELS)
            }
        return cell

    def __str__(self) -> str:
        lines = [f"forecast {self.forecast_digest[:12]} model={self.model_id} status={self.status}"]
        for j, (name, unit) in enumerate(self.coordinates.items()):
            for i, h in enumerate(self.horizons):
                lines.append(f"  {name} h{h}: " + self._describe(i, j, unit))
        return "\n".join(lines)

    def _gap(self, i: int) -> str:
        """Why horizon ``i`` has no error: ``censored``, the forecast's failure status,
        ``not observed: <reason>`` or ``not measured`` (``str()`` and the tables say it)."""
        if self.censored[i]:
            return "censored"
        if self.status != "ok":
            return self.status.replace("_", " ")
        why = self.unobserved.get(self.horizons[i])
        return "not measured" if why is None else f"not observed: {why}"

    def _describe(self, i: int, j: int, unit: str) -> str:
        if not self.measured[i, j]:
            return self._gap(i)
        text = f"error {self.error[i, j]:+.4g} {unit}"
        if self.std is not None and self.covered is not None and self.nll is not None:
            text += (
                f", std {self.std[i, j]:.4g} {unit}, 90% covered "
                f"{bool(self.covered[2, i, j])}, nll {self.nll[i, j]:.3f}"
            )
        return text

    def __rich__(self) -> Printed:
        """A table, one row per coordinate × horizon (``rich.print``, IPython with rich)."""
        from onrecord._display_dynamics import forecast_view

        return forecast_view(self)

    def _repr_html_(self) -> str:
        """The same table for Jupyter: names and reasons escaped, no script."""
        from onrecord._display_dynamics_html import forecast_html

        return forecast_html(self)


def forecast_metrics(forecast: ForecastEvidence) -> ForecastMetrics:
    """Errors, intervals, coverage and density of one forecast at its declared horizons."""
    if type(forecast) is not ForecastEvidence:
        raise InputError(
            f"forecast_metrics takes ForecastEvidence, got "
            f"{type(forecast).__name__}; for many forecasts use "
            "aggregate_metrics"
        )
    layout = forecast._layout
    rows, count = layout.rows, layout.measured
    total = len(layout.censored)
    if not count:
        shape = (total, len(layout.units))
        nan = np.full(shape, np.nan)
        return ForecastMetrics._make(forecast, np.zeros(shape, bool), nan, nan)
    mean = forecast._mean[rows]
    error = mean - forecast._truth[rows]
    if layout.angular:
        wrap_angles(error, forecast._angular)
    std = forecast._std
    sd = None if std is None else std[rows]
    if count < total:  # censored horizons stay NaN; nothing fills them
        mean, error = _pad(mean, total), _pad(error, total)
        sd = None if sd is None else _pad(sd, total)
    measured = layout.all_measured
    if measured is None:
        measured = ~np.isnan(error)
    abs_error = np.abs(error)
    if sd is None:
        return ForecastMetrics._make(forecast, measured, error, abs_error)
    half = _Z_COLUMN * sd
    if layout.angular:
        mean = _on_truth_branch(forecast, rows, mean, error, total)
    # In place: the arrays are small (H x d), so each new array costs about as much as
    # the arithmetic filling it.
    with np.errstate(over="ignore"):  # a tiny deviation: the density's log is truly -inf
        z = error / sd
        squared = z * 0.5  # (0.5 z) z, as the formula's order: z z would overflow first
        squared *= z
        nll = np.log(sd)
        nll += _HALF_LOG_2PI
        nll += squared
    return ForecastMetrics._make(
        forecast, measured, error, abs_error, sd, mean - half, mean + half, abs_error <= half, nll
    )


def _on_truth_branch(
    forecast: ForecastEvidence, rows: Any, mean: FloatArray, error: FloatArray, total: int
) -> FloatArray:
    """Interval centres with each angle moved by whole turns onto the actual value's
    branch (truth + wrapped error): the same arc of the circle, but printed bounds that
    hold the actual value exactly when ``covered`` says so. Pendulum's unwrapped theta of
    7.0 rad is not numerically inside [0.6, 0.84] though the wrapped error is 0.0."""
    truth = forecast._truth[rows]
    if len(truth) < total:
        truth = _pad(truth, total)
    centre = np.array(mean, dtype=np.float64)
    angular = forecast._angular
    centre[:, angular] = truth[:, angular] + error[:, angular]
    return centre


def _pad(values: FloatArray, total: int) -> FloatArray:
    out = np.full((total, values.shape[1]), np.nan)
    out[: len(values)] = values
    return out
