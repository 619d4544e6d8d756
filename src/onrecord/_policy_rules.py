"""How one requirement of an acceptance policy fares on a report (the rules are stated in
docs/reports-and-policies.md; ``onrecord.policy`` reduces the judgements to a decision)."""

from __future__ import annotations

import fnmatch
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from onrecord._stats import clustered_interval
from onrecord.errors import PolicyError

if TYPE_CHECKING:
    from onrecord.policy import CheckRequirement
    from onrecord.report import EvaluationReport

__all__ = [
    "Judgement",
    "StatusTable",
    "fraction",
    "judge",
    "matches",
    "refuse_unknown_keys",
    "requirement_interval",
    "without_trial",
]

RequirementStatus = Literal["met", "failed", "undecided"]
# Why a (trial, check) result is unmeasured, in the order the reasons name them.
_UNMEASURED_KINDS = ("not_measured", "evaluator_error", "model_error", "missing")


@dataclass(frozen=True)
class Judgement:
    """A requirement's status, its counts and the sentence that explains it."""

    status: RequirementStatus
    passed: int
    failed: int
    unmeasured: int
    cases: int
    matched: tuple[str, ...]
    explanation: str
    interval: tuple[float, float]


def matches(pattern: str, name: str) -> bool:
    """A check name equal to ``pattern`` or matched by it as a glob (case-sensitive on
    every platform)."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def _share(numerator: int, denominator: int, threshold: float) -> str:
    """``numerator/denominator`` as a short decimal that never reads as equal to the
    threshold it missed (899/1000 against 0.9 is "0.899", 8999/10000 is "0.8999"),
    followed by the counts."""
    value = numerator / denominator
    text = f"{value:.3g}"
    for digits in range(4, 18):
        if float(text) != threshold or value == threshold:
            break
        text = f"{value:.{digits}g}"
    return f"{text} ({numerator} of {denominator})"


class StatusTable:
    """Every trial's case and its results' statuses by check name, read once per report
    so that judging many requirements does not search each trial's results again."""

    __slots__ = ("cases", "statuses")

    def __init__(self, report: EvaluationReport) -> None:
        trials = report.trials
        self.cases = [(trial.case["case_id"], trial.case["content_digest"]) for trial in trials]
        self.statuses = [{r.name: r.status for r in trial.results} for trial in trials]


def judge(
    requirement: CheckRequirement, report: EvaluationReport, table: StatusTable | None = None
) -> Judgement:
    """met, failed or undecided, with counts over every (trial, matched check) result
    (``table``, when given, must be ``StatusTable(report)``)."""
    label = f"{requirement.check!r} ({'critical' if requirement.critical else 'advisory'})"
    matched = tuple(name for name in report.check_names if matches(requirement.check, name))
    if not matched:
        why = f"no check in the report matches {requirement.check!r}"
        if not report.trials:
            why += ": the report holds no trial"
        return Judgement("undecided", 0, 0, 0, 0, matched, why, (0.0, 1.0))
    table = table or StatusTable(report)
    kinds: Counter[str] = Counter()
    for name in matched:
        kinds.update(statuses.get(name, "missing") for statuses in table.statuses)
    passed, failed = kinds["pass"], kinds["fail"]
    per_case = _case_tallies(table, matched)
    measured = passed + failed
    total = sum(kinds.values())
    unmeasured = total - measured
    cases = len(per_case)
    interval = clustered_interval(per_case)
    need = requirement.min_pass_rate
    # Evaluator and model errors are named apart from checks that could not measure and
    # from results absent from a trial: each calls for a different fix.
    missing = ", ".join(f"{kinds[kind]} {kind}" for kind in _UNMEASURED_KINDS if kinds[kind])
    counts = f"{passed} passed, {failed} failed, {unmeasured} not measured of {total}" + (
        f" ({missing})" if missing else ""
    )

    def outcome(status: RequirementStatus, why: str) -> Judgement:
        return Judgement(
            status, passed, failed, unmeasured, cases, matched, f"{label} {status}: {why}", interval
        )

    # Failed whatever the missing results turn out to be: even if every one passed.
    if (passed + unmeasured) / total < need:
        return outcome("failed", f"{counts}; needs pass rate >= {need:g}")
    short = []
    if measured / total < requirement.min_coverage:
        short.append(
            f"coverage {_share(measured, total, requirement.min_coverage)} < "
            f"min_coverage {requirement.min_coverage:g}"
        )
    if cases < requirement.min_cases:
        short.append(f"{cases} measured cases < min_cases {requirement.min_cases}")
    if short:
        return outcome("undecided", f"{counts}; {'; '.join(short)}")
    # Enough is measured: the pass rate over the measured results decides, and with
    # min_lower_bound the low end of its interval too; the sentence says which bound did.
    if passed / measured < need:
        return outcome(
            "failed", f"{counts}; measured pass rate {_share(passed, measured, need)} < {need:g}"
        )
    bound = requirement.min_lower_bound
    if bound is None:
        return outcome("met", counts)
    low = f"the lower bound of its {_BOUND} is {_percent(interval[0], bound)}"
    rate = f"measured pass rate {_share(passed, measured, need)} >= {need:g}"
    if interval[0] < bound:
        return outcome(
            "failed",
            f"{counts}; {rate}, but {low} < min_lower_bound {bound:g}: the lower bound decided",
        )
    return outcome("met", f"{counts}; {rate} and {low} >= min_lower_bound {bound:g}")


_BOUND = "95% interval (clustered by case)"


def _percent(value: float, threshold: float) -> str:
    """``value`` as a percentage that never reads as equal to the threshold it missed
    or met (0.89996 against 0.9 is "89.996%", not "90.0%")."""
    for digits in range(1, 16):
        text = f"{value * 100:.{digits}f}"
        if (float(text) / 100 < threshold) == (value < threshold):
            return f"{text}%"
    return f"{value * 100!r}%"


def requirement_interval(table: StatusTable, matched: tuple[str, ...]) -> tuple[float, float]:
    """The interval ``judge`` gives a requirement that matched ``matched`` (for views of
    a saved decision, which keeps the counts but not the cases they came from)."""
    return clustered_interval(_case_tallies(table, matched))


def _case_tallies(table: StatusTable, matched: tuple[str, ...]) -> list[tuple[int, int]]:
    """(passes, measured results) per case with one: the interval counts a case's
    repeats, and the checks a glob matches in it, as one cluster, not as independent
    results."""
    per_case: dict[tuple[str, str], list[int]] = {}
    for name in matched:
        for case, statuses in zip(table.cases, table.statuses, strict=True):
            status = statuses.get(name)
            if status == "pass" or status == "fail":
                tally = per_case.setdefault(case, [0, 0])
                tally[0] += status == "pass"
                tally[1] += 1
    return [(passes, results) for passes, results in per_case.values()]


# Field checks of ``onrecord.policy``, kept here so that module stays short.


def fraction(name: str, value: Any, *, below_one: bool = False) -> None:
    """Refuse a share that is not a finite number in (0, 1] (or (0, 1)), naming it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= 1
        or (below_one and value == 1)
    ):
        bounds = (
            "(0, 1), e.g. 0.9 (the lower bound of an interval never reaches 1)"
            if below_one
            else "(0, 1]"
        )
        raise PolicyError(f"CheckRequirement.{name} must be in {bounds}, got {value!r}")


def refuse_unknown_keys(data: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise PolicyError(
            f"{where} has unknown field(s) {unknown}; the fields are {list(allowed)}: "
            "fix the spelling or remove them"
        )


_TRIAL_PREFIX = re.compile(r"^.*?#\d+: ")


def without_trial(issue: str) -> str:
    """A report-level coverage issue without its ``case_id#repeat: `` prefix (a case id
    may itself hold ": ", which splitting on the first one cut in two)."""
    return _TRIAL_PREFIX.sub("", issue, count=1)
