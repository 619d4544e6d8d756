"""How much money a remittance line can still give: the limits ``post_allocation`` and
``post_adjustment`` enforce, as a payment poster's screen does.

A remittance line is money the payer sent (``paid_cents``) and the adjustments its 835
carries (group and reason code, amount). A poster applies that money and those
adjustments; it cannot apply money that was not received or post an adjustment the 835
does not carry (a write-off of its own is not an 835 adjustment). So an allocation above
what is left unapplied on the line, or an adjustment above what is left of that code on
it, is refused before anything is written, with the numbers and the fix.

A claim line's open balance is not a limit: a payment above it is real money (a second
payment of a claim, a coordination-of-benefits overlap) and billing systems post it as a
credit balance to be refunded. The tools say so in their reply, and ``balances_reconcile``
fails an episode that leaves one, since no task here calls for it.

The other two tools that cite a remittance line are held to what the line is: an approval
request is for posting the line's payment, so it must ask for exactly what the line paid
(a line that sends no money has nothing to approve), once: a second request while one is
pending is a blind retry, refused like a second reversal of one allocation. A reversal
takes money back, which a payer does on a recoupment line (a negative payment): it names
the claim line and the amount, so it reverses only an allocation on that claim line, up to
what it has left to take back; a line that pays may only undo an allocation of its own
money (a keying error corrected).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from onrecord.domains.remittance._rejected import Rejected

__all__ = [
    "check_adjustment",
    "check_allocation",
    "check_approval",
    "check_reversal",
    "credit_note",
    "pending_approval",
]


def _cents(db: sqlite3.Connection, sql: str, *args: Any) -> int:
    return int(db.execute(sql, args).fetchone()[0])


def _claim_of(db: sqlite3.Connection, line_id: str) -> str:
    return str(
        db.execute("SELECT claim_id FROM claim_lines WHERE line_id = ?", (line_id,)).fetchone()[0]
    )


def check_allocation(db: sqlite3.Connection, rline: dict[str, Any], amount: int) -> None:
    """Refuse ``amount`` if the remittance line has less than that left to apply."""
    paid = int(rline["paid_cents"])
    applied = _cents(
        db,
        "SELECT COALESCE(SUM(amount_cents), 0) FROM allocations WHERE rline_id = ?",
        rline["rline_id"],
    )
    left = paid - applied
    if amount <= left:
        return
    rline_id = rline["rline_id"]
    if paid < 0:
        raise Rejected(
            f"remittance line {rline_id} takes back {-paid} cents (a recoupment): it has "
            "no money to apply; reverse the recouped allocation with reverse_allocation"
        )
    if paid == 0:
        raise Rejected(
            f"remittance line {rline_id} paid 0 cents: it sends no money to apply (its "
            "835 adjustments say why, e.g. a denial); post nothing from it"
        )
    # Either way, a posting already made may be the mistake (a wrong claim line or
    # amount): posting the rest elsewhere would leave it in place, so say how to move it.
    move = (
        "If an earlier posting from it went to the wrong claim line or was the wrong "
        "amount, reverse that allocation citing this line, then post again (read_claim "
        "shows each line's allocations)"
    )
    if left <= 0:
        raise Rejected(
            f"remittance line {rline_id} paid {paid} cents and {applied} are already "
            f"applied: nothing is left to post from it. {move}"
        )
    raise Rejected(
        f"remittance line {rline_id} paid {paid} cents and {applied} are already applied, "
        f"so at most {left} cents are left to post, not {amount}: post at most the "
        f"amount left. {move}"
    )


def check_adjustment(
    db: sqlite3.Connection, rline_id: str, group_code: str, reason_code: str, amount: int
) -> None:
    """Refuse an adjustment the 835 line does not carry, or more of it than it carries."""
    carried = db.execute(
        "SELECT group_code, reason_code, amount_cents FROM remittance_adjustments "
        "WHERE rline_id = ? ORDER BY radj_id",
        (rline_id,),
    ).fetchall()
    code = f"{group_code}-{reason_code}"
    listed = ", ".join(f"{g}-{r} {a} cents" for g, r, a in carried) or "none"
    total = sum(a for g, r, a in carried if (g, r) == (group_code, reason_code))
    if total <= 0:
        raise Rejected(
            f"remittance line {rline_id} carries no {code} adjustment (its 835 "
            f"adjustments: {listed}); post only the adjustments the 835 lists, with "
            "their group and reason codes"
        )
    posted = _cents(
        db,
        "SELECT COALESCE(SUM(amount_cents), 0) FROM adjustments WHERE rline_id = ? "
        "AND group_code = ? AND reason_code = ?",
        rline_id,
        group_code,
        reason_code,
    )
    left = total - posted
    if amount > left:
        then = (
            f"post at most {left} cents of {code}"
            if left > 0
            else f"it is posted in full: post no more {code}"
        )
        # The 835's adjustments listed as for an unknown code: an agent that posted this
        # one in full sees which others the line carries.
        raise Rejected(
            f"remittance line {rline_id} carries {code} of {total} cents and {posted} "
            f"are already posted, so at most {left} cents of {code} are left, not "
            f"{amount} (its 835 adjustments: {listed}); {then}"
        )


def check_approval(rline: dict[str, Any], amount: int) -> None:
    """Refuse an approval request for anything but posting the line's payment: a
    supervisor approves a posting, and an amount that is not the payment (cents for
    dollars, a part of it) would approve a posting that does not exist."""
    paid, rline_id = int(rline["paid_cents"]), rline["rline_id"]
    if paid <= 0:
        raise Rejected(
            f"remittance line {rline_id} pays {paid} cents: it sends no money to post, so "
            "there is no posting to approve; approvals are for lines that pay above the "
            "threshold"
        )
    if amount != paid:
        raise Rejected(
            f"remittance line {rline_id} paid {paid} cents; an approval is for posting that "
            f"payment, so request {paid}, not {amount}"
        )


def pending_approval(db: sqlite3.Connection, rline_id: str) -> None:
    """Refuse a second request while one for the line waits for a supervisor: one posting
    has one approval, and a repeat (a retry after a lost reply, a reworded reason) would
    put the same posting in the supervisor's queue twice."""
    pending = db.execute(
        "SELECT approval_id, amount_cents FROM approvals WHERE rline_id = ? "
        "AND status = 'requested' ORDER BY approval_id LIMIT 1",
        (rline_id,),
    ).fetchone()
    if pending is None:
        return
    raise Rejected(
        f"remittance line {rline_id} already has approval request {pending[0]} for "
        f"{pending[1]} cents pending: it was written and waits for a supervisor, so do not "
        "ask again; post nothing from the line until it is approved (say in finish that "
        "approval was requested)"
    )


def check_reversal(db: sqlite3.Connection, rline: dict[str, Any], original: dict[str, Any]) -> None:
    """Refuse a reversal the cited line cannot make: a line that pays only undoes an
    allocation of its own (a posting corrected); a recoupment line (negative paid) takes
    back a payment on the claim line it names, no more than it recoups."""
    _check_reversible(db, original)
    paid, rline_id = int(rline["paid_cents"]), rline["rline_id"]
    if paid < 0:
        _check_recoupment(db, rline, original)
        return
    if original["rline_id"] == rline_id:
        return
    raise Rejected(
        f"remittance line {rline_id} pays {paid} cents and takes nothing back, but "
        f"allocation {original['allocation_id']} came from {original['rline_id']}: a payer "
        "takes money back on a recoupment line (a negative payment), so cite that line; "
        "a line that pays may only undo an allocation made from it (a posting corrected)"
    )


def _check_reversible(db: sqlite3.Connection, original: dict[str, Any]) -> None:
    """Refuse reversing a reversal, or an allocation already reversed (a blind retry)."""
    allocation_id = original["allocation_id"]
    if original["reverses"] is not None:
        raise Rejected(
            f"allocation {allocation_id} is itself a reversal; reverse the "
            f"original allocation {original['reverses']} instead"
        )
    done = db.execute(
        "SELECT allocation_id, rline_id FROM allocations WHERE reverses = ?", (allocation_id,)
    ).fetchone()
    if done:
        raise Rejected(
            f"allocation {allocation_id} was already reversed (by allocation {done[0]}, "
            f"citing remittance line {done[1]}); nothing to do"
        )


def _check_recoupment(
    db: sqlite3.Connection, rline: dict[str, Any], original: dict[str, Any]
) -> None:
    rline_id, recouped = rline["rline_id"], -int(rline["paid_cents"])
    allocation, amount = original["allocation_id"], int(original["amount_cents"])
    named = rline["line_id"]
    claim = _claim_of(db, original["line_id"])
    if (named is not None and original["line_id"] != named) or claim != rline["claim_id"]:
        where = f"claim line {named}" if named is not None else f"claim {rline['claim_id']}"
        raise Rejected(
            f"remittance line {rline_id} takes back {recouped} cents from {where}, but "
            f"allocation {allocation} is on claim line {original['line_id']} of {claim}: "
            f"a recoupment reverses a payment of the line it names; read_claim on "
            f"{rline['claim_id']} shows that line's allocations"
        )
    # Every allocation of a recoupment line is a reversal (it has no money to post), of
    # a negative amount: what it already took back.
    taken = -_cents(
        db, "SELECT COALESCE(SUM(amount_cents), 0) FROM allocations WHERE rline_id = ?", rline_id
    )
    left = recouped - taken
    if amount <= left:
        return
    own = "To undo a posting of your own, cite the line it was posted from"
    if left <= 0:
        raise Rejected(
            f"remittance line {rline_id} takes back {recouped} cents and {taken} are already "
            f"taken back: nothing is left to take back, so allocation {allocation} "
            f"({amount} cents) cannot be reversed through it. {own}"
        )
    raise Rejected(
        f"remittance line {rline_id} takes back {recouped} cents and {taken} are already "
        f"taken back, so at most {left} cents are left to take back, not the {amount} cents "
        f"of allocation {allocation}: reverse the allocation of the recouped payment "
        f"(read_claim on {rline['claim_id']} shows each allocation). {own}"
    )


def credit_note(line_id: str, balance: int) -> dict[str, Any]:
    """The reply's extra fields when a posting leaves ``line_id`` with a credit balance."""
    if balance >= 0:
        return {}
    return {
        "credit_balance_cents": -balance,
        "warning": (
            f"claim line {line_id} now has a credit balance of {-balance} cents: more was "
            "applied than it owed. If that was a mistake (a payment already posted, the "
            "wrong line), reverse the allocation with reverse_allocation"
        ),
    }
