"""How one requirement of an acceptance policy fares on a report (the rules are stated in
docs/reports-and-policies.md; ``onrecord.policy`` reduces the judgements to a decision)."""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from onrecord.policy import CheckRequirement
    from onrecord.report import EvaluationReport

__all__ = ["Judgement", "StatusTable", "judge", "matches"]

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
        return Judgement("undecided", 0, 0, 0, 0, matched, why)
    table = table or StatusTable(report)
    kinds: Counter[str] = Counter()
    measured_cases: set[tuple[str, str]] = set()
    for name in matched:
        column = [statuses.get(name, "missing") for statuses in table.statuses]
        kinds.update(column)  # counted in C
        measured_cases.update(
            case
            for case, status in zip(table.cases, column, strict=True)
            if status == "pass" or status == "fail"
        )
    passed, failed = kinds["pass"], kinds["fail"]
    measured = passed + failed
    total = sum(kinds.values())
    unmeasured = total - measured
    cases = len(measured_cases)
    need = requirement.min_pass_rate
    # Evaluator and model errors are named apart from checks that could not measure and
    # from results absent from a trial: each calls for a different fix.
    missing = ", ".join(f"{kinds[kind]} {kind}" for kind in _UNMEASURED_KINDS if kinds[kind])
    counts = f"{passed} passed, {failed} failed, {unmeasured} not measured of {total}" + (
        f" ({missing})" if missing else ""
    )

    def outcome(status: RequirementStatus, why: str) -> Judgement:
        return Judgement(
            status, passed, failed, unmeasured, cases, matched, f"{label} {status}: {why}"
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
    # Enough is measured: the pass rate over the measured results decides.
    if passed / measured >= need:
        return outcome("met", counts)
    return outcome(
        "failed", f"{counts}; measured pass rate {_share(passed, measured, need)} < {need:g}"
    )
