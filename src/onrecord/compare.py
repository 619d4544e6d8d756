"""Paired comparison of two reports over the same cases.

Trials are paired by (case_id, content digest, repeat). Pass/fail checks get an exact
McNemar test; continuous measures a paired bootstrap interval of the mean difference.
Comparison is refused, with every reason, when the two locks differ: different check
versions, environment settings or case sets would make a p-value meaningless.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING, Any

from onrecord._compare_notes import few_bootstrap_cases_note, too_few_pairs_note
from onrecord._compare_rates import PassRate, pass_rates
from onrecord._compare_sources import (
    ComparedSource,
    held_differences,
    incomplete_reasons,
    load_source,
)
from onrecord._lock_diff import legacy_lock, listed, lock_differences
from onrecord._natural import natural_key
from onrecord._stats import (
    exact_mean,
    mcnemar_exact_p,
    mcnemar_smallest_p,
    symmetric_bootstrap_ci,
)
from onrecord.errors import ComparisonRefused, InputError
from onrecord.report import EvaluationReport, Trial
from onrecord.report._report import environment_of

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = [
    "CheckComparison",
    "ComparedSource",
    "Comparison",
    "DiscordantPair",
    "MeasureComparison",
    "PassRate",
    "compare_reports",
    "compare_sources",
    "discordant_cases",
    "few_bootstrap_pairs_note",
    "load_source",
    "lock_differences",
    "too_few_pairs_note",
]


@dataclass(frozen=True)
class DiscordantPair:
    """A paired trial whose check passed on one side only."""

    case_id: str
    """The case's id."""
    content_digest: str
    """The case's content digest (with ``case_id`` and ``repeat``, what pairs trials)."""
    repeat: int
    """The repeat index."""
    passed_a: bool
    """Whether the check passed in A (and so failed in B)."""

    def __str__(self) -> str:
        arrow = "pass→fail" if self.passed_a else "fail→pass"
        return f"{self.case_id}#{self.repeat}: {arrow}"

    def to_dict(self) -> dict[str, Any]:
        """Portable form: fields, not the display text, which a case id can imitate."""
        return {
            "case_id": self.case_id,
            "content_digest": self.content_digest,
            "repeat": self.repeat,
            "a": "pass" if self.passed_a else "fail",
            "b": "fail" if self.passed_a else "pass",
        }


@dataclass(frozen=True)
class CheckComparison:
    """One check, A against B, over the pairs measured on both sides."""

    name: str
    """Check name."""
    both_pass: int
    """Pairs passing in A and B."""
    only_a: int
    """Pairs passing in A only (B regressed)."""
    only_b: int
    """Pairs passing in B only (B improved)."""
    both_fail: int
    """Pairs failing in both."""
    unmeasured: int
    """Pairs without a measured result on at least one side."""
    p_value: float
    """Exact two-sided McNemar p-value."""
    discordant: tuple[DiscordantPair, ...]
    """The discordant pairs (``str()`` of one reads ``case_id#repeat: pass→fail``)."""
    rate_a: PassRate | None = None
    """The check's pass rate in A, as A's report gives it (None in a comparison saved
    before it was recorded)."""
    rate_b: PassRate | None = None
    """The same in B."""

    @property
    def smallest_p(self) -> float:
        """The smallest p-value the test could have given with this many discordant
        pairs: above 0.05 (fewer than 6 pairs) no outcome could have been significant."""
        return mcnemar_smallest_p(self.only_a + self.only_b)


def discordant_cases(pairs: Sequence[DiscordantPair]) -> int:
    """How many distinct cases (case id and content digest) the pairs come from."""
    return len({(pair.case_id, pair.content_digest) for pair in pairs})


@dataclass(frozen=True)
class MeasureComparison:
    """One continuous measure: mean of B − A with a paired bootstrap interval."""

    name: str
    """Measure name."""
    pairs: int
    """Pairs with the measure on both sides."""
    mean_a: float
    """Mean in A."""
    mean_b: float
    """Mean in B."""
    mean_difference: float
    """Mean of B − A."""
    interval: tuple[float, float]
    """95 % paired bootstrap interval of the mean difference."""
    cases: int | None = None
    """Distinct cases the pairs come from (None in a comparison saved before it was
    recorded): repeats of one case are not independent pairs."""


@dataclass(frozen=True)
class Comparison:
    """Everything ``compare_reports`` found."""

    pairs: int
    """Number of paired trials."""
    checks: tuple[CheckComparison, ...]
    """Per check, in natural order (numbers in names by value: ``h4`` before ``h16``)."""
    measures: tuple[MeasureComparison, ...]
    """Per continuous measure, in natural order."""
    report_a: str
    """Digest of A."""
    report_b: str
    """Digest of B."""

    def to_dict(self) -> dict[str, Any]:
        """Portable form."""
        from onrecord._comparison_dict import check_to_dict

        return {
            "pairs": self.pairs,
            "report_a": self.report_a,
            "report_b": self.report_b,
            "checks": [check_to_dict(check) for check in self.checks],
            "measures": [
                vars(measure) | {"interval": list(measure.interval)} for measure in self.measures
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Rebuild a comparison from ``to_dict()``, or from what ``onrecord compare
        --json`` saved (its ``schema`` and ``digest`` are left to ``onrecord verify``,
        which checks them). Each field is checked as ``verify`` checks it: one missing,
        of the wrong kind or out of range is a ``SchemaError`` naming it; counts,
        p-values, rates or means that do not follow from one another (or a check listed
        twice) a ``ConsistencyError``."""
        from onrecord._comparison_dict import comparison_from_dict

        return comparison_from_dict(data)

    def __rich__(self) -> Printed:
        """A table, as ``onrecord show`` prints it (``rich.print``, IPython with rich)."""
        from onrecord._display import comparison_view

        return comparison_view(self)

    def _repr_html_(self) -> str:
        """A table for Jupyter: record text escaped, no script, colours inherited."""
        from onrecord._display_html import comparison_html

        return comparison_html(self)


def compare_reports(
    a: EvaluationReport, b: EvaluationReport, *, resamples: int = 2000, seed: int = 0
) -> Comparison:
    """Compare B against A. Raises ComparisonRefused when the locks differ."""
    if not isinstance(a, EvaluationReport) or not isinstance(b, EvaluationReport):
        raise InputError(
            "compare_reports takes two EvaluationReport objects; load saved "
            "reports with EvaluationReport.load(path)"
        )
    _check_bootstrap_settings(resamples, seed)
    reasons = lock_differences(a.lock, b.lock)
    if reasons:
        raise ComparisonRefused(reasons)
    trials_b = {trial.key: trial for trial in b.trials}
    pairs = [(trial, trials_b[trial.key]) for trial in a.trials]
    if legacy_lock(a.lock):  # both saved by an earlier onrecord: the trials say it
        _refuse_moved(pairs)
    # Natural order: a world model's horizons read h1, h4, h8, h16, h32 (as text h16
    # and h32 came before h4), tasks task-2 before task-10.
    rates_a, rates_b = pass_rates(a), pass_rates(b)
    checks = tuple(
        _compare_check(name, pairs, (rates_a[name], rates_b[name]))
        for name in sorted(a.check_names, key=natural_key)
    )
    names = sorted(
        {
            name
            for trial_a, trial_b in pairs
            for name in trial_a.measures
            if name in trial_b.measures
        },
        key=natural_key,
    )
    measures = tuple(_compare_measure(name, pairs, resamples, seed) for name in names)
    return Comparison(len(pairs), checks, measures, a.digest, b.digest)


def _refuse_moved(pairs: list[tuple[Trial, Trial]]) -> None:
    """Refuse pairs whose trials ran in other environment settings (what a lock saved by
    an earlier onrecord does not say)."""
    moved = sorted(
        {a.case["case_id"] for a, b in pairs if environment_of(a) != environment_of(b)},
        key=natural_key,
    )
    if moved:
        raise ComparisonRefused(
            [
                f"{len(moved)} case{'s' if len(moved) != 1 else ''} ran in other "
                f"environment settings in A than in B ({listed(moved)}): their repeats "
                "cannot be paired"
            ]
        )


def compare_sources(
    a: ComparedSource, b: ComparedSource, *, resamples: int = 2000, seed: int = 0
) -> Comparison:
    """``compare_reports`` of two loaded sources, refused also when a run is incomplete."""
    reasons = incomplete_reasons(a, b)
    if reasons:
        raise ComparisonRefused(reasons + held_differences(a, b))
    return compare_reports(a.report, b.report, resamples=resamples, seed=seed)


MAX_RESAMPLES = 1_000_000
"""Most bootstrap resamples ``compare_reports`` draws (a percentile interval's Monte
Carlo error is far below a report's own sampling error long before)."""


def _check_bootstrap_settings(resamples: Any, seed: Any) -> None:
    # Checked before any work: NumPy would fail later with a message naming neither.
    if (
        isinstance(resamples, bool)
        or not isinstance(resamples, Integral)
        or not 1 <= int(resamples) <= MAX_RESAMPLES
    ):
        # An upper bound too: 10**12 resamples ran until memory ran out.
        raise InputError(
            f"compare_reports(resamples=...) must be an integer from 1 to {MAX_RESAMPLES:,} "
            f"(2000 is the default), got {resamples!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, Integral) or seed < 0:
        raise InputError(f"compare_reports(seed=...) must be a non-negative integer, got {seed!r}")


def _compare_check(
    name: str, pairs: list[tuple[Trial, Trial]], rates: tuple[PassRate, PassRate]
) -> CheckComparison:
    tally = {"both_pass": 0, "only_a": 0, "only_b": 0, "both_fail": 0, "unmeasured": 0}
    discordant = []
    for trial_a, trial_b in pairs:
        result_a, result_b = trial_a.result(name), trial_b.result(name)
        passed_a = result_a.passed if result_a else None
        passed_b = result_b.passed if result_b else None
        if passed_a is None or passed_b is None:
            tally["unmeasured"] += 1
            continue
        key = {
            (True, True): "both_pass",
            (True, False): "only_a",
            (False, True): "only_b",
            (False, False): "both_fail",
        }[(passed_a, passed_b)]
        tally[key] += 1
        if passed_a != passed_b:
            case = trial_a.case
            discordant.append(
                DiscordantPair(
                    str(case["case_id"]),
                    str(case.get("content_digest", "")),
                    trial_a.repeat,
                    bool(passed_a),
                )
            )
    return CheckComparison(
        name,
        tally["both_pass"],
        tally["only_a"],
        tally["only_b"],
        tally["both_fail"],
        tally["unmeasured"],
        mcnemar_exact_p(tally["only_a"], tally["only_b"]),
        tuple(discordant),
        *rates,
    )


def _compare_measure(
    name: str, pairs: list[tuple[Trial, Trial]], resamples: int, seed: int
) -> MeasureComparison:
    values = [
        (float(a.measures[name]), float(b.measures[name]))
        for a, b in pairs
        if name in a.measures and name in b.measures
    ]
    # Each value is finite, but 1e308 - (-1e308) is not, nor a sum of many large values
    # (fsum raised OverflowError, NumPy gave nan): every sum below stays within 4n × this.
    largest = max(abs(value) for pair in values for value in pair)
    if not math.isfinite(4.0 * len(values) * largest):
        raise InputError(
            f"measure {name!r} cannot be compared: values as large as {largest:g} overflow "
            "floating-point sums; record it in larger units (smaller numbers)"
        )
    differences = [value_b - value_a for value_a, value_b in values]
    cases = {
        (str(a.case["case_id"]), str(a.case.get("content_digest", "")))
        for a, b in pairs
        if name in a.measures and name in b.measures
    }
    return MeasureComparison(
        name,
        len(values),
        exact_mean([value_a for value_a, _ in values]),
        exact_mean([value_b for _, value_b in values]),
        exact_mean(differences),
        symmetric_bootstrap_ci(differences, resamples=resamples, seed=seed),
        len(cases),
    )


def few_bootstrap_pairs_note(measures: Sequence[MeasureComparison]) -> str | None:
    """The note under a comparison's measures when some have pairs from too few cases
    for their percentile bootstrap interval to cover 95 % (fewer than
    ``onrecord._stats.FEW_BOOTSTRAP_PAIRS``; repeats of one case count once)."""
    return few_bootstrap_cases_note([(m.name, m.pairs, m.cases) for m in measures])
