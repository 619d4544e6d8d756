"""What the CI formats (JUnit XML, Markdown) say about each requirement of a decision:
the measured pass rate with its interval, the threshold, and the results that did not
pass, read from the report the decision was made on. Text from records is made safe for
any document first (``clean``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from onrecord._numbers import interval_percent, rate_percent, threshold_percent
from onrecord.cli._render import plain
from onrecord.policy import CheckRequirement, PolicyDecision, RequirementOutcome
from onrecord.report import EvaluationReport

__all__ = ["FIRST_UNPASSED", "RequirementFacts", "Unpassed", "clean", "requirement_facts"]

FIRST_UNPASSED = 10
"""Results that did not pass listed per requirement (the HTML report has them all)."""

# Most results fail or err for one reason; the order a reader fixes them in.
_ORDER = ("fail", "evaluator_error", "model_error", "not_measured", "missing")
# Beyond the terminal's controls (``plain``): what XML 1.0 cannot hold at all (lone
# surrogates, U+FFFE, U+FFFF) and what no UTF-8 file can encode (lone surrogates).
_UNWRITABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")


def clean(value: object, limit: int = 500) -> str:
    """``value`` as text any document can hold: control, bidirectional and unencodable
    characters shown as ``\\u001b``-style escapes (tab and newline stay), and cut after
    ``limit`` characters with its length, as ``onrecord show`` cuts."""
    text = _UNWRITABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", plain(value))
    if len(text) > limit:
        return f"{text[:limit]}… ({len(text):,} characters)"
    return text


@dataclass(frozen=True)
class Unpassed:
    """One (trial, check) result of a requirement that was not a pass."""

    episode: str
    """``case_id#repeat``."""
    check: str
    """The check (a requirement's glob can match several)."""
    status: str
    """fail, evaluator_error, model_error, not_measured, or missing (no result)."""
    reason: str
    """The check's sentence, or the error that stopped it."""


@dataclass(frozen=True)
class RequirementFacts:
    """One requirement as the CI formats show it."""

    outcome: RequirementOutcome
    """The requirement and how it fared."""
    rate: str
    """``0.0% (0 of 3)``, or ``n/a (none measured)``."""
    interval: str
    """95 % Wilson interval of the measured pass rate clustered by case (the
    requirement's, ``RequirementOutcome.interval``), ``0.0%–56.2%`` (``—`` if none)."""
    threshold: str
    """``≥ 95.0%``, with cases and coverage when not the defaults."""
    unpassed: tuple[Unpassed, ...]
    """The first ``FIRST_UNPASSED`` results that did not pass, failures first."""
    more: int
    """How many more did not pass."""


def requirement_facts(decision: PolicyDecision, report: EvaluationReport) -> list[RequirementFacts]:
    """The facts of every requirement of ``decision`` (made on ``report``), in order."""
    return [_facts(outcome, report) for outcome in decision.outcomes]


def _facts(outcome: RequirementOutcome, report: EvaluationReport) -> RequirementFacts:
    measured = outcome.passed + outcome.failed
    if measured:
        low, high = outcome.interval
        need = outcome.requirement.min_pass_rate
        rate = f"{rate_percent(outcome.passed / measured, need)} ({outcome.passed} of {measured})"
        interval = interval_percent(low, high)
    else:
        rate, interval = "n/a (none measured)", "—"
    unpassed = _unpassed(outcome, report)
    return RequirementFacts(
        outcome,
        rate,
        interval,
        threshold(outcome.requirement),
        tuple(unpassed[:FIRST_UNPASSED]),
        max(0, len(unpassed) - FIRST_UNPASSED),
    )


def threshold(requirement: CheckRequirement) -> str:
    """What the requirement asks, as ``onrecord gate`` prints it."""
    parts = [f"≥ {threshold_percent(requirement.min_pass_rate)}"]
    if requirement.min_cases != 1:
        parts.append(f"≥ {requirement.min_cases} cases")
    if requirement.min_coverage != 1:
        parts.append(f"coverage ≥ {threshold_percent(requirement.min_coverage)}")
    if requirement.min_lower_bound is not None:
        parts.append(f"lower bound ≥ {threshold_percent(requirement.min_lower_bound)}")
    return ", ".join(parts)


def _unpassed(outcome: RequirementOutcome, report: EvaluationReport) -> list[Unpassed]:
    found = []
    for trial in report.trials:
        episode = f"{trial.case['case_id']}#{trial.repeat}"
        for name in outcome.matched:
            result = trial.result(name)
            if result is None:
                found.append(Unpassed(episode, name, "missing", "the trial has no result"))
            elif result.status != "pass":
                found.append(Unpassed(episode, name, result.status, result.reason))
    # Stable: within a status, the report's order (the run's order of episodes).
    return sorted(found, key=lambda item: _ORDER.index(item.status))
