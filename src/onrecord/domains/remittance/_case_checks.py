"""The case rules of ``expected_changes``: which cases an agent must open, which it may,
and the notes and follow-ups they hold.

A case is work someone will pick up: a case the task does not call for is noise in the
work queue, so it fails. One exception is what a billing office does by habit: when a
payer takes money back (a recoupment), a ``recoupment`` case on that claim records the
takeback for the clinic to check or dispute. It is optional (the reversal alone is the
right posting) and, like every case, needs a note saying why it was opened.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["CASE_ACTIONS", "case_problems"]

CASE_ACTIONS = ("case", "post_and_case")
"""Line actions that require a case (of the line's ``case_kind``)."""
Row = dict[str, Any]


def case_problems(
    cases: list[Row], notes: list[Row], followups: list[Row], lines: list[Mapping[str, Any]]
) -> list[str]:
    """Cases beyond the task's (another kind or claim, or more than one per line that
    needs or allows one) and cases left without a note saying why they were opened."""
    required = Counter(
        (x["claim_id"], x["case_kind"]) for x in lines if x["action"] in CASE_ACTIONS
    )
    optional = Counter((x["claim_id"], "recoupment") for x in lines if x["action"] == "reverse")
    allowed = required + optional
    opened = Counter((c["claim_id"], c["kind"]) for c in cases)
    extra = [c for c in cases if (c["claim_id"], c["kind"]) not in allowed]
    # Named by kind, claim and id (the rows are in the evidence's diff), so a reason
    # listing the problems stays short.
    problems = [
        f"cases: unexpected case {c['case_id']} ({c['kind']}) on {c['claim_id']}" for c in extra
    ]
    problems += [
        f"cases: {opened[key]} {key[1]} cases opened on {key[0]}, expected at most {most}"
        for key, most in allowed.items()
        if opened[key] > most
    ]
    noted = {note["case_id"] for note in notes}
    problems += [
        f"cases: {c['kind']} case {c['case_id']} on {c['claim_id']} has no note"
        for c in cases
        if (c["claim_id"], c["kind"]) in allowed and c["case_id"] not in noted
    ]
    return problems + _repeated_work(notes, followups)


def _repeated_work(notes: list[Row], followups: list[Row]) -> list[str]:
    """A note or follow-up written twice word for word is a blind retry, like a payment
    posted twice: the case history says it twice, the work queue holds the same item twice.
    (``read_claim`` shows each case's follow-ups and ``read_case_notes`` its notes, so an
    agent unsure whether a write landed can look before it retries.)"""
    said = Counter((n["case_id"], n["body"]) for n in notes)
    queued = Counter((f["case_id"], f["due_date"], f["action"]) for f in followups)
    return [
        f"cases: the same note was written {n} times on case {case}: {body[:60]!r}"
        for (case, body), n in said.items()
        if n > 1
    ] + [
        f"cases: the same follow-up ({due}, {action[:60]!r}) was scheduled {n} times on case {case}"
        for (case, due, action), n in queued.items()
        if n > 1
    ]
