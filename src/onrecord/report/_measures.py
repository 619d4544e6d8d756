"""Run-level summary of the trials' continuous measures (``tool_calls``,
``rows_put_back``, ``return``, …).

Before, a reviewer saw a measure only one episode at a time (the HTML detail view): a
run where 3 of 300 episodes put rows back after writing them had to be found by opening
episodes. Per measure: how many trials have it, its mean, min, median and max, and in
how many trials it is above 0, the count that matters for counts of bad events
(``rejected_calls``, ``rows_put_back``) where a mean of 0.01 hides whether that is one
episode or many.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from onrecord._natural import natural_key
from onrecord._numbers import measure_number
from onrecord.report._results import Trial

__all__ = [
    "MEASURE_COLUMNS",
    "MEASURE_ROWS",
    "MeasureSummary",
    "measure_cells",
    "summarize_measures",
]

MEASURE_COLUMNS = ("measure", "trials", "mean", "min", "median", "max", "above 0")
"""The columns of a measure summary, in ``onrecord show`` and the HTML report alike."""

MEASURE_ROWS = 20
"""Measures listed (in ``show``, ``run``, gate's Markdown) or shown unfolded (the HTML
report) before the rest are counted: a world model's report has one per coordinate and
statistic (dozens), which pushed the decision and the episodes not passed out of sight.
In natural order, as the report has them: no ranking of measures whose units differ
would mean anything."""


@dataclass(frozen=True)
class MeasureSummary:
    """One measure across the trials that have it."""

    name: str
    """Measure name."""
    trials: int
    """Trials with a value (a trial that did not measure it leaves it out)."""
    mean: float
    """Mean over those trials."""
    minimum: float
    """Smallest value."""
    median: float
    """Median: a few very long episodes pull the mean of ``tool_calls`` up, not this."""
    maximum: float
    """Largest value."""
    above_zero: int
    """Trials whose value is above 0."""

    def to_dict(self) -> dict[str, Any]:
        """Portable form for JSON output (the HTML report's data)."""
        return {
            "name": self.name,
            "trials": self.trials,
            "mean": self.mean,
            "min": self.minimum,
            "median": self.median,
            "max": self.maximum,
            "above_zero": self.above_zero,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MeasureSummary:
        """``to_dict()`` read back (the HTML report renders from its data)."""
        return cls(
            data["name"],
            data["trials"],
            data["mean"],
            data["min"],
            data["median"],
            data["max"],
            data["above_zero"],
        )


def measure_cells(measure: MeasureSummary, total: int) -> tuple[str, ...]:
    """The cells of one measure under ``MEASURE_COLUMNS`` (its name as written):
    ``trials`` says ``12 of 33`` when some trials lack it, so its mean is not read as the
    run's; a mean or median between the min and max never reads as either."""
    bounds = (measure.minimum, measure.maximum)
    return (
        measure.name,
        str(measure.trials) if measure.trials == total else f"{measure.trials} of {total}",
        measure_number(measure.mean, bounds),
        measure_number(measure.minimum),
        measure_number(measure.median, bounds),
        measure_number(measure.maximum),
        str(measure.above_zero),
    )


def summarize_measures(trials: Sequence[Trial]) -> tuple[MeasureSummary, ...]:
    """One summary per measure any trial has, by name in natural order."""
    values: dict[str, list[float]] = defaultdict(list)
    for trial in trials:
        for name, value in trial.measures.items():
            values[name].append(float(value))
    return tuple(_summary(name, values[name]) for name in sorted(values, key=natural_key))


def _summary(name: str, values: list[float]) -> MeasureSummary:
    low, high = min(values), max(values)
    return MeasureSummary(
        name,
        len(values),
        _between(_mean(values), low, high),
        low,
        _median(sorted(values)),
        high,
        sum(value > 0 for value in values),
    )


def _mean(values: list[float]) -> float:
    # fsum: a plain sum of many large and small floats drifts. Values near the largest
    # float (1e308 twice) overflow the sum: then each is divided first.
    try:
        return math.fsum(values) / len(values)
    except OverflowError:
        return math.fsum(value / len(values) for value in values)


def _median(ordered: list[float]) -> float:
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    low, high = ordered[middle - 1], ordered[middle]
    # (a + b) / 2 is inf for two values near the largest float; a / 2 + b / 2 is 0 for
    # two of the smallest: the first unless it overflows.
    half = (low + high) / 2
    return _between(half if math.isfinite(half) else low / 2 + high / 2, low, high)


def _between(value: float, low: float, high: float) -> float:
    """``value`` within [low, high]: rounding can put the mean of identical values an
    ulp outside them, and the table would show a mean below its min."""
    return min(max(value, low), high)
