"""The remittance tools, declared on the environment kit: each says whether it writes,
and its arguments are validated against the JSON schema derived from its type hints
before it runs. A domain-rule violation raises ``ToolRejected`` (state unchanged).

Money is integer cents (``amount_cents``): a float, a string or a boolean is refused by
the schema, so "12.5" or 12.345 never reach the ledger.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from onrecord.domains.remittance import _ops
from onrecord.envkit import Tool, ToolContext, ToolRejected, tool

__all__ = ["HIDDEN_TABLES", "TOOLS", "WRITE_TOOLS"]

HIDDEN_TABLES = ("case_notes",)
"""Notes (a payer's call, say) an agent sees only through ``read_case_notes``."""

T = TypeVar("T")

# JSON-schema constraints the kit merges into each argument's schema.
Cents = Annotated[int, {"minimum": 1, "maximum": _ops.MAX_CENTS}]
Id = Annotated[str, {"minLength": 1, "maxLength": 64}]
Text = Annotated[str, {"minLength": 1, "maxLength": 2000, "pattern": r"\S"}]
"""Free text a person reads later (a case's reason, a note, a follow-up's action): blank
or whitespace-only text is refused, so a case can never be opened with nothing said. Each
tool also passes it through ``_ops.visible``: zero-width or blank characters (which the
pattern cannot list) say nothing either."""
Day = Annotated[str, {"pattern": r"^\d{4}-\d{2}-\d{2}$"}]
Limit = Annotated[int, {"minimum": 1, "maximum": 200}]
Key = Annotated[int, {"minimum": 1, "maximum": 2**62}]
Group = Literal["CO", "OA", "PI", "PR"]
Reason = Annotated[str, {"pattern": r"^[A-Z0-9]{1,5}$"}]


def _declare(**options: Any) -> Callable[[Callable[..., Any]], Tool]:
    """``envkit.tool`` with a typed signature (the kit's decorator returns ``Any``)."""
    declare: Callable[[Callable[..., Any]], Tool] = tool(**options)
    return declare


def _guard(function: Callable[[], T]) -> T:
    """Turn a domain rule violation into ``ToolRejected`` (rolled back, logged)."""
    try:
        return function()
    except _ops.Rejected as exc:
        raise ToolRejected(str(exc)) from None


def _db(ctx: ToolContext) -> sqlite3.Connection:
    return ctx.connection


# -- reads -------------------------------------------------------------------------------
@_declare(example={"payer_id": "PAY-AETNA"})
def search_remittances(
    ctx: ToolContext,
    payer_id: str | None = None,
    payment_number: str | None = None,
    status: str | None = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Find remittances by payer, payment (EFT or check) number or status."""
    return _ops.search_remittances(_db(ctx), payer_id, payment_number, status, limit)


@_declare(example={"remittance_id": "RMT-100001"})
def read_remittance(ctx: ToolContext, remittance_id: Id) -> dict[str, Any]:
    """Read one remittance (835): payer, payment, and every line with its adjustments."""
    return _guard(lambda: _ops.read_remittance(_db(ctx), remittance_id))


@_declare(example={"payer_id": "PAY-AETNA"})
def search_claims(
    ctx: ToolContext,
    patient_id: str | None = None,
    payer_id: str | None = None,
    status: str | None = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Find claims by patient, payer or status."""
    return _ops.search_claims(_db(ctx), patient_id, payer_id, status, limit)


@_declare(example={"claim_id": "CLM-100001"})
def read_claim(ctx: ToolContext, claim_id: Id) -> dict[str, Any]:
    """Read a claim: lines with balances and contracted amounts, allocations, cases."""
    return _guard(lambda: _ops.read_claim(_db(ctx), claim_id))


@_declare(example={"patient_id": "PT-100001"})
def read_open_balances(ctx: ToolContext, patient_id: Id) -> dict[str, Any]:
    """A patient's own balance and every claim line with an open balance."""
    return _guard(lambda: _ops.read_open_balances(_db(ctx), patient_id))


@_declare(example={"claim_id": "CLM-100001"})
def read_case_notes(ctx: ToolContext, claim_id: Id) -> dict[str, Any]:
    """Read the notes on a claim (payer calls, earlier work). Each note read is logged."""
    found = _guard(lambda: _ops.read_case_notes(_db(ctx), claim_id))
    notes = [ctx.reveal("case_notes", note["note_id"]) for note in found["notes"]]
    return {"claim_id": claim_id, "notes": notes}


@_declare(example={"message": "Posted remittance RMT-100001."})
def finish(ctx: ToolContext, message: Text) -> dict[str, Any]:
    """End the task with a short message saying what was done."""
    return _guard(lambda: {"finished": True, "message": _ops.visible(message, "message")})


# -- writes ------------------------------------------------------------------------------
@_declare(writes=True)
def post_allocation(
    ctx: ToolContext, remittance_line_id: Id, claim_line_id: Id, amount_cents: Cents
) -> dict[str, Any]:
    """Apply money from a remittance line to a claim line of the same payer (lowers its
    balance). At most what the remittance line paid less what is already applied from it;
    a line that pays nothing (a denial) or takes money back (a recoupment: reverse instead)
    has nothing to apply. A claim line taken below zero keeps a credit balance (the reply
    says so)."""
    return _guard(
        lambda: _ops.post_allocation(_db(ctx), remittance_line_id, claim_line_id, amount_cents)
    )


@_declare(writes=True)
def post_adjustment(
    ctx: ToolContext,
    remittance_line_id: Id,
    claim_line_id: Id,
    group_code: Group,
    reason_code: Reason,
    amount_cents: Cents,
) -> dict[str, Any]:
    """Post an 835 adjustment (CO write-down, PR patient share, ...) to a claim line of the
    same payer: only a group and reason code the remittance line carries, up to its amount
    less what is already posted of it."""
    return _guard(
        lambda: _ops.post_adjustment(
            _db(ctx), remittance_line_id, claim_line_id, group_code, reason_code, amount_cents
        )
    )


@_declare(writes=True)
def reverse_allocation(
    ctx: ToolContext, allocation_id: Key, remittance_line_id: Id, reason: Text
) -> dict[str, Any]:
    """Reverse an earlier allocation: its amount returns to the claim line's balance. Cite
    the recoupment line (negative paid) that takes it back: the allocation must be on the
    claim line that line names, and no more than it has left to take back. Or, to correct
    a posting of your own, cite the line it was posted from. An allocation is reversed
    once; ids are in read_claim."""
    return _guard(
        lambda: _ops.reverse_allocation(
            _db(ctx), allocation_id, remittance_line_id, _ops.visible(reason, "reason")
        )
    )


@_declare(writes=True)
def open_case(
    ctx: ToolContext,
    claim_id: Id,
    kind: Literal["denial", "underpayment", "recoupment", "other"],
    reason: Text,
) -> dict[str, Any]:
    """Open a follow-up case on a claim: a denial or underpayment to appeal, a recoupment
    (optional) on the claim a payer takes money back from; note why on the case."""
    return _guard(lambda: _ops.open_case(_db(ctx), claim_id, kind, _ops.visible(reason, "reason")))


@_declare(writes=True)
def add_note(ctx: ToolContext, case_id: Key, text: Text) -> dict[str, Any]:
    """Add a note to a case."""
    return _guard(lambda: _ops.add_note(_db(ctx), case_id, _ops.visible(text, "text")))


@_declare(writes=True)
def schedule_followup(
    ctx: ToolContext, case_id: Key, due_date: Day, action: Text
) -> dict[str, Any]:
    """Put a case on the follow-up queue, due on ``due_date`` (YYYY-MM-DD, today or later)."""
    return _guard(
        lambda: _ops.schedule_followup(_db(ctx), case_id, due_date, _ops.visible(action, "action"))
    )


@_declare(writes=True)
def request_approval(
    ctx: ToolContext, remittance_line_id: Id, amount_cents: Cents, reason: Text
) -> dict[str, Any]:
    """Ask a supervisor to approve posting a line's payment above the approval threshold,
    for exactly what the line paid (nothing is posted yet). One request per line: a second
    while it is pending is refused."""
    return _guard(
        lambda: _ops.request_approval(
            _db(ctx), remittance_line_id, amount_cents, _ops.visible(reason, "reason")
        )
    )


@_declare(writes=True)
def set_claim_status(
    ctx: ToolContext, claim_id: Id, status: Literal["open", "appealed", "written_off"]
) -> dict[str, Any]:
    """Change a claim's status (writing a claim off stops collecting it); setting the
    status it already has writes nothing."""
    return _guard(lambda: _ops.set_claim_status(_db(ctx), claim_id, status))


TOOLS: tuple[Tool, ...] = (
    search_remittances,
    read_remittance,
    search_claims,
    read_claim,
    read_open_balances,
    read_case_notes,
    finish,
    post_allocation,
    post_adjustment,
    reverse_allocation,
    open_case,
    add_note,
    schedule_followup,
    request_approval,
    set_claim_status,
)
WRITE_TOOLS = frozenset(t.name for t in TOOLS if t.writes)
