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
(and a line that sends no money has nothing to approve); a reversal takes money back,
which a payer does on a recoupment line (a negative payment), so a line that pays may
only undo an allocation of its own money (a keying error corrected).
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
]


def _cents(db: sqlite3.Connection, sql: str, *args: Any) -> int:
    return int(db.execute(sql, args).fetchone()[0])


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
    raise Rejected(
        f"remittance line {rline_id} paid {paid} cents and {applied} are already applied, "
        f"so at most {max(left, 0)} cents are left to post, not {amount}; post at most the "
        "amount left (read_claim shows each line's allocations)"
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
    if amount > total - posted:
        raise Rejected(
            f"remittance line {rline_id} carries {code} of {total} cents and {posted} "
            f"are already posted, so at most {total - posted} cents of {code} are left, "
            f"not {amount}"
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


def check_reversal(rline: dict[str, Any], original: dict[str, Any]) -> None:
    """Refuse a reversal on a line that pays, of an allocation that is not its own: only a
    recoupment line (negative paid) takes back an earlier payment."""
    paid, rline_id = int(rline["paid_cents"]), rline["rline_id"]
    if paid < 0 or original["rline_id"] == rline_id:
        return
    raise Rejected(
        f"remittance line {rline_id} pays {paid} cents and takes nothing back, but "
        f"allocation {original['allocation_id']} came from {original['rline_id']}: a payer "
        "takes money back on a recoupment line (a negative payment), so cite that line; "
        "a line that pays may only undo an allocation made from it (a posting corrected)"
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
