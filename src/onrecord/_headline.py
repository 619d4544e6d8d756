"""A decision's cause in a few words, as ``PolicyDecision.headline`` gives it and every
view (terminal, Markdown, JUnit, HTML) leads with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from onrecord._policy_rules import without_trial

if TYPE_CHECKING:
    from onrecord.policy import RequirementOutcome

__all__ = ["INCOMPLETE_RUN", "decision_headline"]

INCOMPLETE_RUN = "the run is incomplete: "
"""How the reason ``onrecord gate`` adds for a run missing planned episodes begins."""


def decision_headline(
    decision: str,
    outcomes: Sequence[RequirementOutcome],
    coverage_issues: Sequence[str],
    reasons: Sequence[str],
) -> str:
    """An incomplete run, critical failures, undecided requirements, coverage, then
    advisory failures. An advisory failure never decides, so it is named as a warning
    and last: listed as ``failed`` beside a coverage issue it read as the cause of an
    indeterminate."""
    groups: dict[str, list[str]] = {"failed": [], "undecided": [], "advisory": []}
    for o in outcomes:
        if o.status == "undecided" or (o.status == "failed" and o.requirement.critical):
            groups[o.status].append(o.requirement.check)
        elif o.status == "failed":
            groups["advisory"].append(o.requirement.check)
    # A cause outside the requirements (``onrecord gate`` on a partial run) is in the
    # reasons only: without it an indeterminate gate was headlined "every requirement met".
    # First: a run whose every episode timed out was headlined "undecided: posted_once",
    # which reads as a policy naming no check, when its requirements lack trials for it.
    # Up to its episode list or its "; a partial run is never accepted", which `run`
    # and `show` word apart from `gate`: the three headline it alike.
    parts = [_cause(r) for r in reasons if r.startswith(INCOMPLETE_RUN)]
    parts += [
        f"{label}: {', '.join(groups[label])}" for label in ("failed", "undecided") if groups[label]
    ]
    if coverage_issues:
        more = len(coverage_issues) - 1
        parts.append(
            f"coverage: {without_trial(coverage_issues[0])}" + (f" (+{more} more)" if more else "")
        )
    if groups["advisory"]:
        parts.append(f"advisory failed (warning): {', '.join(groups['advisory'])}")
    if not parts and decision != "accept":  # a saved record's other cause
        parts = list(reasons[:1]) or [f"{decision} (no reason recorded)"]
    return "; ".join(parts) or "every requirement met"


def _cause(reason: str) -> str:
    return reason.split(" (", 1)[0].split("; ", 1)[0]
