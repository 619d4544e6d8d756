"""Small exact statistics: Wilson intervals (plain and clustered by case), exact binomial
(McNemar) tests, pass^k and a paired bootstrap. Kept dependency-free (NumPy only, for the
bootstrap) so the core needs no SciPy."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "CLUSTERED_INTERVAL",
    "FEW_BOOTSTRAP_PAIRS",
    "clustered_interval",
    "clustered_interval_of",
    "design_effect",
    "exact_mean",
    "mcnemar_exact_p",
    "paired_bootstrap_ci",
    "pass_hat_k",
    "symmetric_bootstrap_ci",
    "wilson_interval",
]

_INDICES_PER_BLOCK = 1_000_000


def wilson_interval(
    successes: int,
    trials: int,
    z: float = 1.959963984540054,
    *,
    effective: float | None = None,
) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % by default); (0, 1) when
    there are no trials. ``effective`` (at most ``trials``) is the sample size the
    interval's width is taken from, when the trials are not independent."""
    if trials == 0:
        return (0.0, 1.0)
    rate = successes / trials
    n = trials if effective is None else effective
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    # At 0 and n successes the bound is exactly 0 or 1; rounding in centre ± half would
    # give 5.6e-17 or 0.9999999999999999 instead.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (float(low), float(high))


CLUSTERED_INTERVAL = "95% interval, clustered by case"
"""How every view heads a pass-rate interval (``clustered_interval``)."""


def design_effect(per_case: Sequence[tuple[int, int]]) -> float:
    """How much the repeats of a case inflate the variance of the pass rate: the
    cluster-robust (between-case) variance of the rate over the binomial variance that
    counts every result as independent, floored at 1. ``per_case`` holds (passes,
    results) per case. 1 when every case has one result or the rate is 0 or 1."""
    return _design_effect([passed for passed, _ in per_case], [total for _, total in per_case])


def clustered_interval(
    per_case: Sequence[tuple[int, int]], z: float = 1.959963984540054
) -> tuple[float, float]:
    """95 % Wilson interval of a pass rate whose results come in cases (``per_case``:
    (passes, results) per case), with the Kish effective sample size: the results over
    the design effect. Three repeats of a task pass or fail together, so 12 failures
    from 4 of 33 tasks weigh as 4 of 33, not as 12 independent failures of 99. Never
    narrower than Wilson over the results; exactly Wilson when each case has one."""
    return clustered_interval_of(
        [passed for passed, _ in per_case], [total for _, total in per_case], z
    )


def clustered_interval_of(
    passes_per_case: Sequence[int], results_per_case: Sequence[int], z: float = 1.959963984540054
) -> tuple[float, float]:
    """``clustered_interval`` of the same cases given as two columns (the passes and
    the results of case i at index i), the same to the last bit: a policy over 10,000
    trials judges each requirement from columns, and building a tuple per case for it
    took as long as the rest of the judging."""
    results = sum(results_per_case)
    passes = sum(passes_per_case)
    effective = results / _design_effect(passes_per_case, results_per_case)
    return wilson_interval(passes, results, z, effective=effective)


def _design_effect(passes_per_case: Sequence[int], results_per_case: Sequence[int]) -> float:
    results = sum(results_per_case)
    passes = sum(passes_per_case)
    # max over a list runs in C; it is the common case's only pass over the cases.
    if results == 0 or passes in (0, results) or max(results_per_case, default=0) <= 1:
        return 1.0  # one result per case: the cluster-robust variance is the binomial one
    rate = passes / results
    between = math.fsum(
        (passed - rate * total) ** 2
        for passed, total in zip(passes_per_case, results_per_case, strict=True)
    )
    return max(1.0, between / (results * rate * (1 - rate)))


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test of the discordant pairs against
    1/2. With no discordant pairs the two sides cannot be told apart: p = 1."""
    discordant = only_a + only_b
    if abs(only_a - only_b) <= 1:  # the tail holds half the mass or more: exactly 1
        return 1.0
    smaller = min(only_a, only_b)
    if discordant > _EXACT_LIMIT:
        return min(1.0, 2 * _binomial_tail(discordant, smaller))
    # Exact integers, each binomial coefficient from the one before it (math.comb from
    # scratch for every term took 25 s for 20,000 discordant pairs; this takes 0.03 s).
    term = tail = 1
    for i in range(smaller):
        term = term * (discordant - i) // (i + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << discordant))


def mcnemar_smallest_p(discordant: int) -> float:
    """The smallest p-value the exact two-sided McNemar test can give with this many
    discordant pairs (all of them on one side): ``2 ** (1 - n)``, and 1 for none or
    one. Below 6 pairs it is above 0.05: no outcome can be significant."""
    return 1.0 if discordant <= 1 else 2.0 ** (1 - discordant)


_EXACT_LIMIT = 50_000
"""Discordant pairs up to which the tail is summed in exact integers: their size grows
with the count, so the sum is quadratic (0.26 s at 50,000, 0.9 s at 100,000, minutes at
a million); above it, in floating point."""


def _binomial_tail(trials: int, last: int) -> float:
    """P(X <= last) for X ~ Binomial(trials, 1/2), ``last`` < trials / 2: the largest
    term from Loader's saddle-point form, the others as ratios to it, summed down until
    they no longer count. Relative error below 1e-12 up to ten million trials (checked
    against 50-digit arithmetic); the log-gamma form it replaced lost 4e-8 there:
    ``lgamma(10**7)``, about 1.5e8, is rounded by some 1e-8, and the difference of three
    of them keeps that absolute error, a relative one once exponentiated."""
    if last == 0:
        return math.ldexp(1.0, -trials)
    ratio = total = 1.0
    for i in range(last, 0, -1):  # term(i - 1) / term(i) = i / (trials - i + 1)
        ratio *= i / (trials - i + 1)
        total += ratio
        if ratio < 1e-17 * total:
            break
    return math.exp(_log_half_binomial(trials, last) + math.log(total))


def _log_half_binomial(trials: int, k: int) -> float:
    """log P(X = k) for X ~ Binomial(trials, 1/2), 0 < k < trials (Loader 2000, as R's
    dbinom): Stirling corrections and deviances, each small where the mass is, so none
    cancels against another as the log-gamma terms did."""
    mean = trials / 2
    log_ratio = (
        _stirling_error(trials)
        - _stirling_error(k)
        - _stirling_error(trials - k)
        - _deviance(k, mean)
        - _deviance(trials - k, mean)
    )
    return log_ratio + 0.5 * math.log(trials / (2 * math.pi * k * (trials - k)))


_STIRLING_SERIES = (1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188)


def _stirling_error(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n / e)^n), n >= 1: exact factorials up to 15 (where
    the series converges too slowly), else the asymptotic series."""
    if n <= 15:
        return (
            math.log(math.factorial(n)) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2 * math.pi)
        )
    s0, s1, s2, s3, s4 = _STIRLING_SERIES
    nn = float(n) * n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _deviance(x: int, mean: float) -> float:
    """x log(x / mean) + mean - x, without the cancellation of its terms when x is near
    the mean (a series in v = (x - mean) / (x + mean))."""
    if abs(x - mean) >= 0.1 * (x + mean):
        return x * math.log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    total, term, j = (x - mean) * v, 2 * x * v, 1
    while True:
        term *= v * v
        following = total + term / (2 * j + 1)
        if following == total:
            return total
        total, j = following, j + 1


def pass_hat_k(passes_per_case: Sequence[tuple[int, int]], k: int) -> float | None:
    """Unbiased estimate of the chance that k independent repeats of a case all pass,
    averaged over cases with at least k repeats. ``passes_per_case`` holds
    (passes, repeats). None when no case has k repeats."""
    estimates = [
        math.comb(passes, k) / math.comb(total, k)
        for passes, total in passes_per_case
        if total >= k
    ]
    return math.fsum(estimates) / len(estimates) if estimates else None


def exact_mean(values: Sequence[float]) -> float:
    """The mean of finite ``values`` (not empty, and whose sum stays finite) to within
    the last bit. ``fsum / n`` alone rounds twice: three pairs each 0.1 apart averaged
    0.10000000000000002, outside every value. The exact residual of that first
    estimate corrects it, so equal values give that value and the mean of negated
    values is the negated mean."""
    first = math.fsum(values) / len(values)
    return first + math.fsum(value - first for value in values) / len(values)


FEW_BOOTSTRAP_PAIRS = 20
"""Pairs below which a percentile bootstrap interval of a mean is too narrow to trust:
it resamples only the values seen, so with 8 pairs a nominal 95 % interval covers
about 90 % or less (more so for skewed differences)."""


def paired_bootstrap_ci(
    differences: Sequence[float], *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean paired difference."""
    import numpy as np  # here: reading records and exact tests need no NumPy (see _loaded)

    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return (math.nan, math.nan)
    if values.min() == values.max():
        # Every resample's mean is that value; NumPy's would round it apart (a shift of
        # 2.0000000000000004 beside a mean difference of 2.0).
        return (float(values[0]), float(values[0]))
    rng = np.random.default_rng(seed)
    # Resampled in blocks of about a million indices, so memory stays flat however many
    # cases there are; the generator yields the same stream as one big draw would.
    block = max(1, _INDICES_PER_BLOCK // values.size)
    means = np.concatenate(
        [
            values[
                rng.integers(0, values.size, size=(min(block, resamples - done), values.size))
            ].mean(axis=1)
            for done in range(0, resamples, block)
        ]
    )
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))


def symmetric_bootstrap_ci(
    differences: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """``paired_bootstrap_ci`` that depends on the differences alone, not on the order of
    the pairs nor on which side they were taken from: the interval of the negated
    differences is the negated interval. Resampling the differences as given made the
    interval change when a report's trials were reordered (a merge, a regrade) or when
    A and B were swapped. The differences are sorted, and of the two orientations (d and
    −d) the one whose sorted values come first is resampled."""
    ordered = sorted(differences)
    negated = [-value for value in reversed(ordered)]  # sorted, as the other side sees it
    if negated < ordered:
        high, low = (
            -bound for bound in paired_bootstrap_ci(negated, resamples=resamples, seed=seed)
        )
    else:
        low, high = paired_bootstrap_ci(ordered, resamples=resamples, seed=seed)
        if negated == ordered:
            # Differences symmetric about 0: so is the bootstrap distribution of their
            # mean, and its interval; only the Monte Carlo error tells the two tails
            # apart. The wider one, so that swapping A and B negates the interval here too.
            half = max(high, -low)
            low, high = -half, half
    # + 0.0 turns the -0.0 a negated zero bound would be (printed "-0.0") into 0.0.
    return (low + 0.0, high + 0.0)
