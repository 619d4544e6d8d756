"""The layout of a forecast: which horizons are measured, censored or unobserved.

Computed once when a ``ForecastEvidence`` is sealed, so scoring is pure array arithmetic;
``censors`` is also what capture asks of an ending reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:  # the evidence builds its layout from here: no import cycle at run time
    from onrecord.dynamics._evidence import ForecastEvidence

__all__ = ["Layout", "censors", "forecast_layout"]


class Layout(NamedTuple):
    """Precomputed once per forecast so scoring is pure array arithmetic."""

    rows: Any
    """Rows of the forecast at the measured horizons (a slice when they are 1..k)."""
    measured: int
    """How many leading horizons are measured (censoring only cuts a suffix)."""
    gaps: bool
    """Whether the observed truth has unobserved steps (NaN rows)."""
    angular: bool
    """Whether any coordinate wraps."""
    units: Mapping[str, str]
    """Read-only ``{name: unit}``."""
    censored: np.ndarray
    """Read-only ``[H]`` censoring mask."""
    all_measured: np.ndarray | None
    """Read-only all-True ``[H, d]`` mask when nothing is missing, else None."""


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def forecast_layout(forecast: ForecastEvidence) -> Layout:
    """The forecast's layout, computed once when it is sealed."""
    index = np.asarray(forecast.horizons, dtype=np.int64) - 1
    limit = min(forecast.observed_steps, len(forecast._mean)) if forecast.status == "ok" else 0
    measured = int((index < limit).sum())
    rows: Any = index[:measured]
    if measured and rows[-1] == measured - 1:  # 1, 2, ..., k: a view, no copy
        rows = slice(0, measured)
    gaps = bool(np.isnan(forecast._truth).any())
    shape = (len(index), len(forecast._angular))
    complete = measured == len(index) and not gaps
    return Layout(
        rows,
        measured,
        gaps,
        bool(forecast._angular.any()),
        MappingProxyType(forecast.coordinates),
        _read_only(_censored(forecast, index)),
        _read_only(np.ones(shape, bool)) if complete else None,
    )


def _censored(forecast: ForecastEvidence, index: np.ndarray) -> np.ndarray:
    """``[H]``: horizons the reference never executed because its episode ended.
    Censoring is a fact about the reference, whatever the model did: a model error at a
    horizon the reference reached is not a censored horizon."""
    if not censors(forecast._data["reference"]["ended"]):
        return np.zeros(len(index), dtype=bool)
    return index >= forecast.observed_steps


def censors(ended: str) -> bool:
    """Whether a reference that ended ``ended`` censors the horizons it never executed.

    The episode ending (the environment terminated or truncated it, ``max_steps`` cut it
    off, ``interact`` returned) censors. A reference whose own ``interact`` raised
    part-way does not: the error says nothing about later horizons, so they are the
    reference's error, the way ``check_plan`` refuses a plan the environment would stop
    part-way rather than let its later horizons pass for censored. Nor does one whose
    factory or reset failed (``setup_error``): a simulator error, not an ending.
    """
    return ended in _CENSORING_ENDINGS


_CENSORING_ENDINGS = frozenset({"terminated", "truncated", "step_limit", "returned"})
