"""What a view of a saved decision (``show``, the HTML report) makes again from it: the
line saying what decided, ``PolicyDecision.headline`` itself, not a second wording."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord.errors import OnrecordError
from onrecord.policy import CheckRequirement, PolicyDecision, RequirementOutcome

__all__ = ["saved_headline"]


def saved_headline(body: Mapping[str, Any]) -> str:
    """``PolicyDecision.headline`` of a saved decision, made from each requirement's
    check, criticality and status, the coverage issues and the reasons; empty when the
    record does not hold them as a decision saves them."""
    try:
        outcomes = tuple(
            RequirementOutcome(
                CheckRequirement(str(item["check"]), critical=bool(item.get("critical", True))),
                item["status"],
                0,
                0,
                0,
                0,
                (),
                "",
            )
            for item in body.get("requirements", ())
        )
        issues = tuple(map(str, body.get("coverage_issues", ())))
        # The reasons too: a cause outside the requirements (a partial run) is only there.
        reasons = tuple(map(str, body.get("reasons", ())))
    except (KeyError, TypeError, ValueError, AttributeError, OnrecordError):
        return ""
    decision = str(body.get("decision"))
    return PolicyDecision(decision, reasons, outcomes, issues, "", "").headline  # type: ignore[arg-type]
