"""Summary statistics of a report: per-check pass rates with Wilson intervals clustered
by case, coverage, trial outcomes and pass^k over repeats."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from onrecord._natural import natural_key
from onrecord._stats import clustered_interval, pass_hat_k
from onrecord.report._measures import MeasureSummary, summarize_measures
from onrecord.report._results import Trial

__all__ = ["CheckSummary", "ReportSummary", "summarize"]


@dataclass(frozen=True)
class CheckSummary:
    """One check across all trials."""

    name: str
    """Check name."""
    passed: int
    """Measured passes."""
    failed: int
    """Measured failures."""
    unmeasured: int
    """Trials without a measured result (not measured, errors, or missing)."""
    pass_rate: float | None
    """passed / measured, or None when nothing was measured."""
    interval: tuple[float, float]
    """95 % Wilson interval of the pass rate over measured trials, clustered by case
    (``clustered_interval``): repeats of one case are not independent trials."""
    errors: int = 0
    """Of the unmeasured, trials whose check raised or misbehaved (evaluator errors) or
    whose model failed (model errors): kept apart from failures, never counted as one."""

    @property
    def coverage(self) -> float:
        """Share of trials with a measured result."""
        total = self.passed + self.failed + self.unmeasured
        return (self.passed + self.failed) / total if total else 0.0


@dataclass(frozen=True)
class ReportSummary:
    """The headline numbers of a report."""

    trials: int
    """Number of trials."""
    outcomes: dict[str, int]
    """Trials per outcome: pass, fail, incomplete."""
    pass_rate: float | None
    """Share of trials whose every check passed with full coverage."""
    interval: tuple[float, float]
    """95 % Wilson interval of that rate, clustered by case (``clustered_interval``)."""
    checks: tuple[CheckSummary, ...]
    """Per-check summaries, by name in natural order (``h4`` before ``h16``)."""
    pass_hat_k: dict[int, float]
    """pass^k for k = 1 .. the largest number of measured repeats of any case: over the
    repeats whose outcome is pass or fail (an incomplete repeat is left out, neither a
    pass nor a failure), averaged over the cases with at least k of them."""
    pass_hat_k_cases: dict[int, int] = field(default_factory=dict)
    """For each k of ``pass_hat_k``, how many cases it averages over: fewer than the
    report's cases when some have fewer than k measured repeats."""
    measures: tuple[MeasureSummary, ...] = ()
    """Per-measure summaries (``summarize_measures``), by name in natural order."""

    def to_dict(self) -> dict[str, Any]:
        """Portable form for JSON output."""
        return {
            "trials": self.trials,
            "outcomes": self.outcomes,
            "pass_rate": self.pass_rate,
            "interval": list(self.interval),
            "pass_hat_k": {str(k): value for k, value in self.pass_hat_k.items()},
            "pass_hat_k_cases": {str(k): count for k, count in self.pass_hat_k_cases.items()},
            "checks": [
                {
                    "name": check.name,
                    "passed": check.passed,
                    "failed": check.failed,
                    "unmeasured": check.unmeasured,
                    "errors": check.errors,
                    "pass_rate": check.pass_rate,
                    "interval": list(check.interval),
                    "coverage": check.coverage,
                }
                for check in self.checks
            ],
            "measures": [measure.to_dict() for measure in self.measures],
        }


def summarize(trials: Sequence[Trial], check_names: Sequence[str]) -> ReportSummary:
    """Compute the summary of ``trials``."""
    outcomes = {"pass": 0, "fail": 0, "incomplete": 0}
    # (passes, measured repeats) per case identity. An incomplete repeat is left out of
    # pass^k: counted as a failure it made {pass, not measured} read pass^2 = 0, a
    # certain "never twice in a row" from one pass and one unknown.
    per_case: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    # (passes, trials) per case for the interval: an incomplete trial is not a pass.
    every: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for trial in trials:
        outcome = trial.outcome_among(check_names)
        outcomes[outcome] += 1
        key = (trial.case["case_id"], trial.case["content_digest"])
        every[key][0] += outcome == "pass"
        every[key][1] += 1
        if outcome != "incomplete":
            tally = per_case[key]
            tally[0] += outcome == "pass"
            tally[1] += 1
    counts = [(passes, repeats) for passes, repeats in per_case.values()]
    most_repeats = max((repeats for _, repeats in counts), default=0)
    return ReportSummary(
        trials=len(trials),
        outcomes=outcomes,
        pass_rate=outcomes["pass"] / len(trials) if trials else None,
        interval=clustered_interval([(passes, total) for passes, total in every.values()]),
        checks=tuple(_check_summary(trials, name) for name in sorted(check_names, key=natural_key)),
        pass_hat_k={k: _value(pass_hat_k(counts, k)) for k in range(1, most_repeats + 1)},
        pass_hat_k_cases={
            k: sum(repeats >= k for _, repeats in counts) for k in range(1, most_repeats + 1)
        },
        measures=summarize_measures(trials),
    )


def _value(estimate: float | None) -> float:
    # k never exceeds the most measured repeats of a case, so some case has k of them.
    assert estimate is not None
    return estimate


def _check_summary(trials: Sequence[Trial], name: str) -> CheckSummary:
    passed = failed = errors = 0
    per_case: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for trial in trials:
        result = trial.result(name)
        status = result.status if result is not None else None
        passed += status == "pass"
        failed += status == "fail"
        errors += status in ("evaluator_error", "model_error")
        if status in ("pass", "fail"):
            tally = per_case[(trial.case["case_id"], trial.case["content_digest"])]
            tally[0] += status == "pass"
            tally[1] += 1
    measured = passed + failed
    return CheckSummary(
        name,
        passed,
        failed,
        len(trials) - measured,
        passed / measured if measured else None,
        clustered_interval([(passes, total) for passes, total in per_case.values()]),
        errors,
    )
