"""Scenario builders: the rows each task kind adds to its background, and the
expectation (expected-diff rules) the named checks grade against.

An expectation is plain JSON, stored as the case's ``expected_output`` so that its
digest is bound into every episode of the task. Per remittance line it says what the
right action is:

- ``post``: allocations to ``targets`` that sum to ``paid_cents``, plus exactly the
  835's ``adjustments``, also on ``targets``; with ``split`` any division within line
  balances is right;
- ``post_and_case``: the same, plus one case of ``case_kind`` with a note and a
  follow-up due on or before ``deadline``;
- ``case``: no money moves; one case with a note and a follow-up before ``deadline``;
- ``approve``: no money moves; an approval request for ``paid_cents``;
- ``reverse``: allocation ``reverse`` is reversed once, nothing else (no adjustment:
  a recoupment neither writes the amount off nor bills it to the patient);
- ``hold`` / ``duplicate``: nothing at all is written for the line.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from onrecord.domains.remittance._generator import (
    APPROVAL_THRESHOLD_CENTS,
    PROCEDURES,
    TODAY,
    Generator,
    iso,
)
from onrecord.domains.remittance._scenario_lines import (
    Expect,
    at_contract,
    header,
    post_lines,
    within_threshold,
)
from onrecord.domains.remittance._tasks import RemittanceTask
from onrecord.errors import InputError

__all__ = ["build_scenario"]

_HOLD_NOTE = (
    "Call with {payer} provider services (rep M. Osei, ref {ref}): the payment "
    "for this claim on EFT {number} was issued in error and will be recouped. "
    "Do not post it; hold until the recoupment arrives."
)
_REDIRECT_NOTE = (
    "Call with {payer} provider services (rep L. Brandt, ref {ref}): this claim "
    "was replaced by corrected claim {corrected}. The payment on EFT {number} "
    "belongs to the corrected claim; apply it to {corrected}."
)


def build_scenario(task: RemittanceTask) -> tuple[Generator, Expect]:
    """Background plus the task's rows, and the expectation the checks grade against."""
    generator = Generator(task.seed)
    generator.background(task.size)
    builder = _BUILDERS[task.kind]
    expect = builder(generator, task)
    within_threshold(task, expect["lines"])
    expect.update(
        today=iso(TODAY),
        threshold_cents=APPROVAL_THRESHOLD_CENTS,
        allowed_tables=sorted(task.allowed_tables),
        kind=task.kind,
    )
    expect.setdefault("note_claims", [])
    expect.setdefault("note_ids", [])
    expect.setdefault("prior_postings", [])
    return generator, expect


def _full(generator: Generator, task: RemittanceTask) -> Expect:
    remittance = generator.remittance(task.payer_id)
    return header(remittance, post_lines(generator, task, remittance, task.lines, full=True)[1])


def _partial(generator: Generator, task: RemittanceTask) -> Expect:
    remittance = generator.remittance(task.payer_id)
    lines = post_lines(generator, task, remittance, task.lines)[1]
    at_contract(generator, task, lines)
    return header(remittance, lines)


def _deadline_remittance(generator: Generator, task: RemittanceTask) -> tuple[dict[str, Any], str]:
    days = int(task.params["deadline_in_days"])
    window = generator.window(task.payer_id)
    if not 0 < days <= window:
        raise InputError(
            f"task {task.task_id}: deadline_in_days must be in 1..{window} "
            f"(the payer's appeal window), got {days}"
        )
    remittance = generator.remittance(task.payer_id, days_ago=window - days)
    return remittance, iso(TODAY + timedelta(days=days))


def _denial(generator: Generator, task: RemittanceTask) -> Expect:
    remittance, deadline = _deadline_remittance(generator, task)
    codes = [str(line["code"]) for line in task.lines]
    claim_id, line_ids = generator.claim(generator.patient(), task.payer_id, codes)
    lines = []
    for line, line_id in zip(task.lines, line_ids, strict=True):
        billed = PROCEDURES[str(line["code"])]
        rline = generator.rline(
            remittance,
            claim_id,
            line_id,
            billed=billed,
            allowed=0,
            paid=0,
            adjustments=[("CO", str(line["denial"]), billed)],
        )
        lines.append(
            {
                "rline_id": rline,
                "claim_id": claim_id,
                "paid_cents": 0,
                "action": "case",
                "case_kind": "denial",
                "deadline": deadline,
                "targets": [line_id],
                "adjustments": [],
            }
        )
    return header(remittance, lines)


def _underpayment(generator: Generator, task: RemittanceTask) -> Expect:
    remittance, deadline = _deadline_remittance(generator, task)
    _, lines = post_lines(generator, task, remittance, task.lines, action="post_and_case")
    for line in lines:
        line.update(case_kind="underpayment", deadline=deadline)
    return header(remittance, lines)


def _over_threshold(generator: Generator, task: RemittanceTask) -> Expect:
    remittance = generator.remittance(task.payer_id)
    _, lines = post_lines(generator, task, remittance, task.lines)
    for line in lines:
        if line["paid_cents"] > APPROVAL_THRESHOLD_CENTS:
            line.update(action="approve", adjustments=[])
    if all(line["action"] != "approve" for line in lines):  # a contract below the threshold
        raise InputError(
            f"task {task.task_id}: no line pays above the approval threshold "
            f"{APPROVAL_THRESHOLD_CENTS} cents at this payer's contracted amounts, so the "
            "task tests nothing; give a line a paid above the threshold"
        )
    at_contract(generator, task, lines)
    return header(remittance, lines)


def _hidden_hold(generator: Generator, task: RemittanceTask) -> Expect:
    remittance = generator.remittance(task.payer_id)
    claim_id, lines = post_lines(generator, task, remittance, task.lines, action="hold")
    note = generator.note(
        claim_id,
        _HOLD_NOTE.format(payer=task.payer_id, ref=task.seed, number=remittance["payment_number"]),
        author="billing.desk",
        days_ago=1,
    )
    for line in lines:
        line["adjustments"] = []
    expect = header(remittance, lines)
    expect.update(note_claims=[claim_id], note_ids=[note])
    return expect


def _hidden_redirect(generator: Generator, task: RemittanceTask) -> Expect:
    remittance = generator.remittance(task.payer_id)
    claim_id, lines = post_lines(generator, task, remittance, task.lines)
    patient = generator.index[claim_id]["patient_id"]
    codes = [str(line["code"]) for line in task.lines]
    corrected, corrected_lines = generator.claim(patient, task.payer_id, codes, days_ago=12)
    note = generator.note(
        claim_id,
        _REDIRECT_NOTE.format(
            payer=task.payer_id,
            ref=task.seed,
            corrected=corrected,
            number=remittance["payment_number"],
        ),
        author="billing.desk",
        days_ago=2,
    )
    for line, target in zip(lines, corrected_lines, strict=True):
        line.update(targets=[target], claim_id=corrected)
    at_contract(generator, task, lines)
    expect = header(remittance, lines)
    expect.update(note_claims=[claim_id], note_ids=[note])
    return expect


def _split(generator: Generator, task: RemittanceTask) -> Expect:
    remittance = generator.remittance(task.payer_id)
    codes = [str(line["code"]) for line in task.lines]
    claim_id, line_ids = generator.claim(generator.patient(), task.payer_id, codes)
    paid = int(task.params["paid"])
    billed = sum(PROCEDURES[code] for code in codes)
    if not 0 < paid <= billed:
        raise InputError(f"task {task.task_id}: paid must be in 1..{billed}, got {paid}")
    rline = generator.rline(remittance, claim_id, None, billed=billed, allowed=paid, paid=paid)
    line: Expect = {
        "rline_id": rline,
        "claim_id": claim_id,
        "paid_cents": paid,
        "action": "post",
        "split": True,
        "targets": line_ids,
        "adjustments": [],
    }
    filled = next(
        n for n in range(1, len(codes) + 1) if sum(PROCEDURES[c] for c in codes[:n]) >= paid
    )
    if filled > 1:  # allocations the careful agent's first fit makes (writes_needed)
        line["first_fit_lines"] = filled
    return header(remittance, [line])


def _duplicate(generator: Generator, task: RemittanceTask) -> Expect:
    original = generator.remittance(task.payer_id, days_ago=9, status="posted")
    _, posted = post_lines(generator, task, original, task.lines)
    for line in posted:
        for target in line["targets"]:
            generator.allocate(line["rline_id"], target, line["paid_cents"], days_ago=8)
        for group, reason, amount in line["adjustments"]:
            generator.adjust(
                line["rline_id"], line["targets"][0], group, reason, amount, days_ago=8
            )
    again = generator.remittance(
        task.payer_id, days_ago=2, payment_number=original["payment_number"]
    )
    again["payment_date"] = original["payment_date"]
    lines = []
    for line in posted:
        source = next(
            r for r in generator.rows["remittance_lines"] if r["rline_id"] == line["rline_id"]
        )
        adjustments = [(g, r, a) for g, r, a in line["adjustments"]]
        rline = generator.rline(
            again,
            line["claim_id"],
            source["line_id"],
            billed=source["billed_cents"],
            allowed=source["allowed_cents"],
            paid=source["paid_cents"],
            patient_resp=source["patient_resp_cents"],
            adjustments=adjustments,
        )
        lines.append({**line, "rline_id": rline, "action": "duplicate", "adjustments": []})
    expect = header(again, lines)
    expect["prior_postings"] = [[expect["payment_key"], t] for x in posted for t in x["targets"]]
    return expect


def _recoupment(generator: Generator, task: RemittanceTask) -> Expect:
    earlier = generator.remittance(task.payer_id, days_ago=40, status="posted")
    _, paid_before = post_lines(generator, task, earlier, task.lines, full=True)
    remittance = generator.remittance(task.payer_id)
    lines = []
    for line in paid_before:
        target = line["targets"][0]
        allocation = generator.allocate(line["rline_id"], target, line["paid_cents"], days_ago=38)
        amount = line["paid_cents"]
        rline = generator.rline(
            remittance, line["claim_id"], target, billed=-amount, allowed=-amount, paid=-amount
        )
        lines.append(
            {
                "rline_id": rline,
                "claim_id": line["claim_id"],
                "paid_cents": -amount,
                "action": "reverse",
                "reverse": allocation,
                "targets": [target],
                "adjustments": [],
            }
        )
    if task.params.get("offset"):
        offset = tuple(task.params["offset"])
        lines += post_lines(generator, task, remittance, offset, full=True)[1]
    return header(remittance, lines)


_BUILDERS: dict[str, Callable[[Generator, RemittanceTask], Expect]] = {
    "full_payment": _full,
    "partial_contractual": _partial,
    "denial": _denial,
    "underpayment": _underpayment,
    "over_threshold": _over_threshold,
    "hidden_hold": _hidden_hold,
    "hidden_redirect": _hidden_redirect,
    "split": _split,
    "duplicate": _duplicate,
    "recoupment": _recoupment,
}
