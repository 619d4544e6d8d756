"""The pieces every scenario builder shares: a claim and its remittance lines built from
a task's service lines (billed, allowed, paid, 835 adjustments), one expectation entry per
line, and the rules that refuse a task whose expectation no careful agent could meet."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord.domains.remittance._generator import APPROVAL_THRESHOLD_CENTS, PROCEDURES, Generator
from onrecord.domains.remittance._tasks import RemittanceTask
from onrecord.errors import InputError

__all__ = ["Expect", "at_contract", "header", "post_lines", "within_threshold"]

Expect = dict[str, Any]


def _amounts(
    generator: Generator, payer: str, line: Mapping[str, Any], *, full: bool = False
) -> dict[str, Any]:
    """Billed, allowed, paid and the 835 adjustments of one service line."""
    code = str(line["code"])
    resp = int(line.get("patient_resp", 0))
    if full:
        billed = allowed = PROCEDURES[code]
    elif "paid" in line:
        allowed = int(line["paid"]) + resp
        billed = max(PROCEDURES[code], allowed)
    else:
        billed = PROCEDURES[code]
        allowed = generator.allowed(payer, code) - int(line.get("underpaid_by", 0))
    adjustments = [("CO", "45", billed - allowed)] if billed > allowed else []
    if resp:
        adjustments.append(("PR", "2", resp))
    return {
        "billed": billed,
        "allowed": allowed,
        "paid": allowed - resp,
        "patient_resp": resp,
        "adjustments": adjustments,
    }


def post_lines(
    generator: Generator,
    task: RemittanceTask,
    remittance: dict[str, Any],
    lines: tuple[Mapping[str, Any], ...],
    *,
    full: bool = False,
    action: str = "post",
) -> tuple[str, list[Expect]]:
    """A claim for ``lines`` paid on ``remittance``; one expectation entry per line."""
    codes = [str(line["code"]) for line in lines]
    amounts = [_amounts(generator, task.payer_id, line, full=full) for line in lines]
    for index, a in enumerate(amounts):
        if a["paid"] < 0:
            raise InputError(
                f"task {task.task_id}: line {index + 1} ({codes[index]}) would pay "
                f"{a['paid']} cents: its patient_resp ({a['patient_resp']}) exceeds the "
                f"allowed amount ({a['allowed']}); lower patient_resp or underpaid_by"
            )
    claim_id, line_ids = generator.claim(
        generator.patient(), task.payer_id, codes, billed=[a["billed"] for a in amounts]
    )
    out = []
    for a, line_id in zip(amounts, line_ids, strict=True):
        rline = generator.rline(
            remittance,
            claim_id,
            line_id,
            billed=a["billed"],
            allowed=a["allowed"],
            paid=a["paid"],
            patient_resp=a["patient_resp"],
            adjustments=a["adjustments"],
        )
        out.append(
            {
                "rline_id": rline,
                "claim_id": claim_id,
                "paid_cents": a["paid"],
                "action": action,
                "targets": [line_id],
                "adjustments": [list(x) for x in a["adjustments"]],
            }
        )
    return claim_id, out


def at_contract(generator: Generator, task: RemittanceTask, lines: list[Expect]) -> None:
    """A line to ``post`` or ``approve`` must be allowed at least its contracted amount:
    paid below contract, the right action is an underpayment case (kind ``underpayment``),
    which the expectation of any other kind would count as an extra case. An agent sees
    the underpayment on a line it must ask approval for just as on one it posts."""
    rows = {r["rline_id"]: r for r in generator.rows["remittance_lines"]}
    for line in lines:
        if line["action"] not in ("post", "approve"):
            continue
        code = generator.index[line["targets"][0]]["procedure_code"]
        contract = generator.allowed(task.payer_id, code)
        allowed = int(rows[line["rline_id"]]["allowed_cents"])
        if allowed < contract:
            share = int(rows[line["rline_id"]]["patient_resp_cents"])
            fix = (
                f"give it a paid of at least {contract - share} or none (the contracted amount)"
                if line["action"] == "approve"
                else "use kind 'underpayment' with underpaid_by, or a higher paid"
            )
            raise InputError(
                f"task {task.task_id}: {code} is allowed {allowed} cents, below the "
                f"contracted {contract}: that is an underpayment; {fix}"
            )


def within_threshold(task: RemittanceTask, lines: list[Expect]) -> None:
    """A line to post must not need an approval: the careful action (ask first) and the
    expectation (post it) would disagree, and every agent would be rejected. Only kind
    ``over_threshold`` expects the approval request instead."""
    for line in lines:
        posted = line["action"] in ("post", "post_and_case")
        if posted and line["paid_cents"] > APPROVAL_THRESHOLD_CENTS:
            raise InputError(
                f"task {task.task_id}: a line pays {line['paid_cents']} cents, above the "
                f"approval threshold {APPROVAL_THRESHOLD_CENTS}; use kind 'over_threshold' "
                "(approval instead of posting), or a cheaper code or a lower paid"
            )


def header(remittance: dict[str, Any], lines: list[Expect]) -> Expect:
    return {
        "remittance_id": remittance["remittance_id"],
        "payer_id": remittance["payer_id"],
        "payment_number": remittance["payment_number"],
        "payment_key": f"{remittance['payer_id']}:{remittance['payment_number']}",
        "lines": lines,
    }
