"""The notes every view of a comparison (terminal, Markdown, HTML, ``show``) puts under
its tables when a McNemar p-value or a bootstrap interval rests on too few cases.

Checks or measures with the same counts are named together: four checks failing on the
same 9 discordant repeats of 3 tasks repeated "(9 discordant pairs from 3 cases,
smallest possible p 0.25)" four times. Both notes count distinct cases, as the tests
treat repeats of one case as independent: 3 repeats of 1 task read "3 pairs" under the
bootstrap interval, which said nothing of the one case behind them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from onrecord._natural import natural_key
from onrecord._stats import FEW_BOOTSTRAP_PAIRS, mcnemar_smallest_p

__all__ = ["few_bootstrap_cases_note", "one_sided_measures_note", "too_few_pairs_note"]

SIGNIFICANT_FROM = 6
"""Discordant cases from which the exact two-sided test can reach p < 0.05 (2/64)."""

_NAMES_SHOWN = 5
"""Names shown per group of like counts; the rest are counted."""


def _grouped(
    rows: Sequence[tuple[str, tuple[int, int]]], shown: int, say: Callable[[int, int], str]
) -> str:
    """``a, b (counts); c (counts)``: names in their order, grouped by their counts
    (``say`` turns the counts into the parenthesis)."""
    groups: dict[tuple[int, int], list[str]] = {}
    for name, counts in rows:
        groups.setdefault(counts, []).append(name)
    parts = []
    for counts, names in groups.items():
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        parts.append(f"{', '.join(names[:shown])}{more} ({say(*counts)})")
    return "; ".join(parts)


def _cases(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"


def too_few_pairs_note(
    checks: Sequence[tuple[str, int, int]], shown: int = _NAMES_SHOWN
) -> str | None:
    """The note under a comparison's McNemar table: the checks (``checks``: name,
    discordant pairs, distinct cases among them) whose discordant pairs come from 1–5
    cases. Below 6 no p-value can fall below 0.05; and the test counts each pair as
    independent, so 6 discordant repeats of 2 cases give p = 0.03 where the 2 cases,
    counted once, could give no less than 0.5. None when no check is in that case (none
    discordant is a measured agreement, not a shortfall)."""
    few = [(name, (n, cases)) for name, n, cases in checks if 0 < cases < SIGNIFICANT_FROM]
    if not few:
        return None

    def say(n: int, cases: int) -> str:
        source = f" pairs from {_cases(cases)}" if cases < n else ""
        return f"{n} discordant{source}, smallest possible p {mcnemar_smallest_p(cases):.4g}"

    repeats = any(cases < n for _, (n, cases) in few)
    return (
        f"McNemar p cannot fall below 0.05 with discordant pairs from fewer than "
        f"{SIGNIFICANT_FROM} cases"
        + (
            " (the test counts each pair as independent; repeats of one case are not, "
            "so each case counts once here)"
            if repeats
            else ""
        )
        + f": {_grouped(few, shown, say)}. Too few cases differ to tell A from B on these "
        "checks: their p-values show neither a difference nor that A and B are alike."
    )


def few_bootstrap_cases_note(
    measures: Sequence[tuple[str, int, int | None]], shown: int = _NAMES_SHOWN
) -> str | None:
    """The note under a comparison's measures: those (name, pairs, distinct cases, None
    when a comparison saved by an earlier onrecord does not say) whose pairs come from
    fewer than ``FEW_BOOTSTRAP_PAIRS`` cases. A percentile interval resamples only what
    was seen and treats repeats of one case as independent, so it is then too narrow.
    None when no measure is so (one pair has no spread to resample: its interval is
    that one difference, as the table shows)."""
    few = [
        (name, (pairs, pairs if cases is None else cases))
        for name, pairs, cases in measures
        if pairs > 1 and (pairs if cases is None else cases) < FEW_BOOTSTRAP_PAIRS
    ]
    if not few:
        return None

    def say(pairs: int, cases: int) -> str:
        return f"{pairs} pairs" + (f" from {_cases(cases)}" if cases < pairs else "")

    repeats = any(cases < pairs for _, (pairs, cases) in few)
    return (
        f"The bootstrap interval is a percentile interval: with pairs from fewer than "
        f"{FEW_BOOTSTRAP_PAIRS} cases it is too narrow and covers the true mean difference "
        "less often than 95%"
        + (" (repeats of one case are not independent pairs)" if repeats else "")
        + f": {_grouped(few, shown, say)}. Read it as a rough range, not as a 95% "
        "interval; more cases narrow it honestly."
    )


def one_sided_measures_note(a: Iterable[Any], b: Iterable[Any]) -> str | None:
    """The note beside a comparison's measures when some are recorded on one side only
    (A's and B's trials given): a run graded by an earlier onrecord lacks measures added
    since (``row_writes``), and the table compared only the rest without a word."""
    names_a = {name for trial in a for name in trial.measures}
    names_b = {name for trial in b for name in trial.measures}
    sides = [
        f"only in {side}: {', '.join(sorted(names, key=natural_key))}"
        for side, names in (("A", names_a - names_b), ("B", names_b - names_a))
        if names
    ]
    if not sides:
        return None
    return (
        f"Measures {'; '.join(sides)} — not compared. A run graded by an earlier onrecord "
        "lacks the measures added since: `onrecord regrade RUN` adds them; compare "
        "RUN/regrades/NAME."
    )
