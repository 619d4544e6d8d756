"""Each side's pass rate of a check in a comparison, beside its McNemar p-value.

The discordant counts say how A and B differ, not where they stand: 3 pairs won by B
read the same at 20 % and at 97 %. Each rate is the report's own (what ``onrecord show``
and ``gate`` print for it): passes over its measured results, with the Wilson interval
clustered by case, as the repeats of one case are not independent results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from onrecord._numbers import interval_percent, percent
from onrecord.report import EvaluationReport

__all__ = ["PassRate", "pass_rate_from_dict", "pass_rates", "rate_text"]


@dataclass(frozen=True)
class PassRate:
    """One check's pass rate in one report of a comparison."""

    passed: int
    """Measured passes."""
    measured: int
    """Measured results (passes and failures); unmeasured trials are left out."""
    interval: tuple[float, float]
    """95 % Wilson interval of the rate, clustered by case (``clustered_interval``);
    (0, 1) when nothing was measured."""

    @property
    def pass_rate(self) -> float | None:
        """passed / measured, or None when nothing was measured."""
        return self.passed / self.measured if self.measured else None

    def to_dict(self) -> dict[str, Any]:
        """Portable form (``pass_rate`` included, for a reader of the JSON)."""
        return {
            "passed": self.passed,
            "measured": self.measured,
            "pass_rate": self.pass_rate,
            "interval": list(self.interval),
        }


def pass_rates(report: EvaluationReport) -> dict[str, PassRate]:
    """Per check, the report's pass rate as its summary gives it."""
    return {
        check.name: PassRate(check.passed, check.passed + check.failed, check.interval)
        for check in report.summary().checks
    }


def pass_rate_from_dict(data: Any) -> PassRate | None:
    """``PassRate.to_dict()`` read back; None when absent (a comparison saved before the
    rates were recorded). Raises ValueError or TypeError on a wrong shape."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise TypeError(f"a pass rate must be an object, not {data!r:.40}")
    passed, measured = data["passed"], data["measured"]
    for count in (passed, measured):
        if not isinstance(count, Integral) or isinstance(count, bool) or count < 0:
            raise ValueError(f"a count must be a non-negative integer, not {count!r:.40}")
    if passed > measured:
        raise ValueError(f"{passed} passes of {measured} measured results")
    low, high = data["interval"]
    return PassRate(int(passed), int(measured), (float(low), float(high)))


def rate_text(rate: PassRate) -> str:
    """``87.9% (72.7% – 95.2%)``: the rate and its interval as every view prints them
    (``percent`` never shows 99.97 % as 100.0 %); ``n/a`` when nothing was measured,
    as "0.0% – 100.0%" would read as an interval estimated from data."""
    value = rate.pass_rate
    if value is None:
        return "n/a"
    return f"{percent(value)} ({interval_percent(*rate.interval)})"
