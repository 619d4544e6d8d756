"""A partial run's decision as commands print it: never accept.

A run missing planned episodes is not accepted on those it holds (a measured failure
still rejects). ``onrecord run`` exits 2 for it and ``gate`` decides indeterminate, but
``run`` and ``show RUN`` printed the policy's verdict on the recorded episodes,
``decision: accept``, above the line saying the run was incomplete: a CI log grepped for
the verdict read an accept the exit code denied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from onrecord.policy import INCOMPLETE_RUN, PolicyDecision

__all__ = ["partial_body", "partial_decision"]

_NEVER = "a partial run is never accepted (`onrecord run --resume` retries them)"


def partial_decision(decision: PolicyDecision, missing: int, shown: str = "") -> PolicyDecision:
    """``decision`` made indeterminate when it accepts a run missing ``missing``
    planned episodes (``shown`` names some of them), with the reason why."""
    if not missing or decision.decision != "accept":
        return decision
    reason = f"{INCOMPLETE_RUN}{_missing(missing, shown)}; {_NEVER}"
    return dataclasses.replace(
        decision, decision="indeterminate", reasons=(*decision.reasons, reason)
    )


def partial_body(body: Mapping[str, Any], recorded: int, expected: int) -> Mapping[str, Any]:
    """A saved decision's body (``decision.json``'s ``decision``) as it is printed for a
    run that recorded ``recorded`` of ``expected`` planned episodes."""
    missing = expected - recorded
    if missing <= 0 or body.get("decision") != "accept":
        return body
    reasons = [*body.get("reasons", ()), f"{INCOMPLETE_RUN}{_missing(missing, '')}; {_NEVER}"]
    return {**body, "decision": "indeterminate", "reasons": reasons}


def _missing(count: int, shown: str) -> str:
    # Plural even for one: gate's saved decisions carry this text, and are verified.
    return f"{count} planned episodes have no trial" + (f" ({shown})" if shown else "")
