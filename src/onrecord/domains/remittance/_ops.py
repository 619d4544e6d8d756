"""What each remittance tool does to the database, independent of the environment kit.

Every function takes an open connection and plain arguments, raises ``Rejected`` with a
sentence saying what is wrong and how to fix it, and otherwise returns a portable result.
Writes keep balances consistent: an allocation or adjustment lowers its claim line's
balance, a PR (patient responsibility) adjustment moves that amount to the patient, and a
reversal puts the allocated amount back.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Any

from onrecord.domains.remittance import _limits
from onrecord.domains.remittance._rejected import Rejected, visible

__all__ = ["CASE_KINDS", "CLAIM_STATUSES", "GROUP_CODES", "Rejected", "visible"]

GROUP_CODES = ("CO", "OA", "PI", "PR")
CASE_KINDS = ("denial", "underpayment", "recoupment", "other")
CLAIM_STATUSES = ("open", "appealed", "written_off")
MAX_CENTS = 10**11
"""One billion dollars: any amount above it is a typo, not money."""
Row = dict[str, Any]


def rows(db: sqlite3.Connection, sql: str, *args: Any) -> list[Row]:
    cursor = db.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def one(
    db: sqlite3.Connection,
    sql: str,
    *args: Any,
    what: str,
    hint: str = "search first and use an id from the results",
) -> Row:
    found = rows(db, sql, *args)
    if not found:
        raise Rejected(f"unknown {what}; {hint}")
    return found[0]


_ALLOCATION_HINT = "read_claim lists each claim line's allocations with their ids"
_CASE_HINT = "open_case returns a case's id and read_claim lists each claim's cases"


def today(db: sqlite3.Connection) -> str:
    return str(db.execute("SELECT value FROM settings WHERE key = 'today'").fetchone()[0])


def _search(
    db: sqlite3.Connection, table: str, order_by: str, filters: dict[str, Any], limit: int
) -> list[Row]:
    """Rows of ``table`` equal to every given (not ``None``) filter, in key order.
    Table and column names come from this module, never from a tool argument, so only
    the values are bound parameters."""
    sql = f"SELECT * FROM {table} WHERE 1 = 1"
    args: list[Any] = []
    for column, value in filters.items():
        if value is not None:
            sql += f" AND {column} = ?"
            args.append(value)
    return rows(db, sql + f" ORDER BY {order_by} LIMIT ?", *args, limit)


# -- reads ------------------------------------------------------------------------------
def search_remittances(
    db: sqlite3.Connection,
    payer_id: str | None,
    payment_number: str | None,
    status: str | None,
    limit: int,
) -> Row:
    found = _search(
        db,
        "remittances",
        "remittance_id",
        {"payer_id": payer_id, "payment_number": payment_number, "status": status},
        limit,
    )
    return {"remittances": found, "count": len(found)}


def read_remittance(db: sqlite3.Connection, remittance_id: str) -> Row:
    header = one(
        db,
        "SELECT r.*, p.name AS payer_name, p.appeal_window_days FROM remittances r "
        "JOIN payers p ON p.payer_id = r.payer_id WHERE r.remittance_id = ?",
        remittance_id,
        what=f"remittance_id {remittance_id!r}",
    )
    lines = rows(
        db,
        "SELECT r.*, c.procedure_code FROM remittance_lines r LEFT JOIN claim_lines c "
        "ON c.line_id = r.line_id WHERE r.remittance_id = ? ORDER BY r.rline_id",
        remittance_id,
    )
    for line in lines:
        line["adjustments"] = rows(
            db,
            "SELECT group_code, reason_code, amount_cents FROM remittance_adjustments "
            "WHERE rline_id = ? ORDER BY radj_id",
            line["rline_id"],
        )
    return {**header, "lines": lines}


def search_claims(
    db: sqlite3.Connection,
    patient_id: str | None,
    payer_id: str | None,
    status: str | None,
    limit: int,
) -> Row:
    found = _search(
        db,
        "claims",
        "claim_id",
        {"patient_id": patient_id, "payer_id": payer_id, "status": status},
        limit,
    )
    return {"claims": found, "count": len(found)}


def read_claim(db: sqlite3.Connection, claim_id: str) -> Row:
    claim = one(
        db, "SELECT * FROM claims WHERE claim_id = ?", claim_id, what=f"claim_id {claim_id!r}"
    )
    lines = rows(
        db,
        "SELECT l.*, f.allowed_cents AS contract_allowed_cents FROM claim_lines l "
        "LEFT JOIN fee_schedule f ON f.payer_id = ? AND "
        "f.procedure_code = l.procedure_code WHERE l.claim_id = ? "
        "ORDER BY l.line_id",
        claim["payer_id"],
        claim_id,
    )
    for line in lines:
        line["allocations"] = rows(
            db,
            "SELECT a.allocation_id, a.rline_id, a.amount_cents, a.reverses, "
            "EXISTS (SELECT 1 FROM allocations r WHERE r.reverses = a.allocation_id) "
            "AS reversed FROM allocations a WHERE a.line_id = ? ORDER BY a.allocation_id",
            line["line_id"],
        )
    cases = rows(db, "SELECT * FROM cases WHERE claim_id = ? ORDER BY case_id", claim_id)
    for case in cases:  # so an agent unsure whether a follow-up landed can look
        case["followups"] = rows(
            db,
            "SELECT followup_id, due_date, action FROM followups WHERE case_id = ? "
            "ORDER BY followup_id",
            case["case_id"],
        )
    return {**claim, "lines": lines, "cases": cases}


def read_open_balances(db: sqlite3.Connection, patient_id: str) -> Row:
    patient = one(
        db,
        "SELECT * FROM patients WHERE patient_id = ?",
        patient_id,
        what=f"patient_id {patient_id!r}",
    )
    lines = rows(
        db,
        "SELECT l.line_id, l.claim_id, l.procedure_code, l.balance_cents "
        "FROM claim_lines l JOIN claims c ON c.claim_id = l.claim_id "
        "WHERE c.patient_id = ? AND l.balance_cents != 0 ORDER BY l.line_id",
        patient_id,
    )
    return {**patient, "open_lines": lines}


def read_case_notes(db: sqlite3.Connection, claim_id: str) -> Row:
    one(
        db,
        "SELECT claim_id FROM claims WHERE claim_id = ?",
        claim_id,
        what=f"claim_id {claim_id!r}",
    )
    notes = rows(db, "SELECT * FROM case_notes WHERE claim_id = ? ORDER BY note_id", claim_id)
    return {"claim_id": claim_id, "notes": notes}


# -- writes -----------------------------------------------------------------------------
def _rline(db: sqlite3.Connection, rline_id: str) -> Row:
    return one(
        db,
        "SELECT l.*, r.payer_id FROM remittance_lines l JOIN remittances r "
        "ON r.remittance_id = l.remittance_id WHERE l.rline_id = ?",
        rline_id,
        what=f"remittance_line_id {rline_id!r}",
    )


def _claim_line(db: sqlite3.Connection, line_id: str, payer_id: str) -> Row:
    line = one(
        db,
        "SELECT l.*, c.payer_id, c.patient_id FROM claim_lines l JOIN claims c "
        "ON c.claim_id = l.claim_id WHERE l.line_id = ?",
        line_id,
        what=f"claim_line_id {line_id!r}",
    )
    if line["payer_id"] != payer_id:
        raise Rejected(
            f"claim line {line_id} is billed to {line['payer_id']}, not to "
            f"{payer_id} who sent this remittance; post to a line of that payer"
        )
    return line


def post_allocation(db: sqlite3.Connection, rline_id: str, line_id: str, amount: int) -> Row:
    rline = _rline(db, rline_id)
    _claim_line(db, line_id, rline["payer_id"])
    _limits.check_allocation(db, rline, amount)
    cursor = db.execute(
        "INSERT INTO allocations (rline_id, line_id, amount_cents, reverses, "
        "posted_on) VALUES (?, ?, ?, NULL, ?)",
        (rline_id, line_id, amount, today(db)),
    )
    db.execute(
        "UPDATE claim_lines SET balance_cents = balance_cents - ? WHERE line_id = ?",
        (amount, line_id),
    )
    balance = _balance(db, line_id)
    return {
        "allocation_id": cursor.lastrowid,
        "line_balance_cents": balance,
        **_limits.credit_note(line_id, balance),
    }


def post_adjustment(
    db: sqlite3.Connection,
    rline_id: str,
    line_id: str,
    group_code: str,
    reason_code: str,
    amount: int,
) -> Row:
    rline = _rline(db, rline_id)
    line = _claim_line(db, line_id, rline["payer_id"])
    _limits.check_adjustment(db, rline_id, group_code, reason_code, amount)
    cursor = db.execute(
        "INSERT INTO adjustments (rline_id, line_id, group_code, reason_code, "
        "amount_cents, posted_on) VALUES (?, ?, ?, ?, ?, ?)",
        (rline_id, line_id, group_code, reason_code, amount, today(db)),
    )
    db.execute(
        "UPDATE claim_lines SET balance_cents = balance_cents - ? WHERE line_id = ?",
        (amount, line_id),
    )
    if group_code == "PR":
        db.execute(
            "UPDATE patients SET balance_cents = balance_cents + ? WHERE patient_id = ?",
            (amount, line["patient_id"]),
        )
    balance = _balance(db, line_id)
    return {
        "adjustment_id": cursor.lastrowid,
        "line_balance_cents": balance,
        **_limits.credit_note(line_id, balance),
    }


def reverse_allocation(
    db: sqlite3.Connection, allocation_id: int, rline_id: str, reason: str
) -> Row:
    original = one(
        db,
        "SELECT * FROM allocations WHERE allocation_id = ?",
        allocation_id,
        what=f"allocation_id {allocation_id}",
        hint=_ALLOCATION_HINT,
    )
    rline = _rline(db, rline_id)
    payer = one(
        db,
        "SELECT c.payer_id FROM claim_lines l JOIN claims c ON c.claim_id = l.claim_id "
        "WHERE l.line_id = ?",
        original["line_id"],
        what=f"claim line of allocation {allocation_id}",
    )["payer_id"]
    if payer != rline["payer_id"]:
        raise Rejected(
            f"allocation {allocation_id} is on a claim billed to {payer}, not to "
            f"{rline['payer_id']} who sent remittance line {rline_id}; a payer takes back "
            "only its own payments"
        )
    _limits.check_reversal(db, rline, original)
    cursor = db.execute(
        "INSERT INTO allocations (rline_id, line_id, amount_cents, reverses, "
        "posted_on) VALUES (?, ?, ?, ?, ?)",
        (rline_id, original["line_id"], -original["amount_cents"], allocation_id, today(db)),
    )
    db.execute(
        "UPDATE claim_lines SET balance_cents = balance_cents + ? WHERE line_id = ?",
        (original["amount_cents"], original["line_id"]),
    )
    return {
        "allocation_id": cursor.lastrowid,
        "reason": reason,
        "line_balance_cents": _balance(db, original["line_id"]),
    }


def open_case(db: sqlite3.Connection, claim_id: str, kind: str, reason: str) -> Row:
    one(
        db,
        "SELECT claim_id FROM claims WHERE claim_id = ?",
        claim_id,
        what=f"claim_id {claim_id!r}",
    )
    cursor = db.execute(
        "INSERT INTO cases (claim_id, kind, status, opened_on, reason) VALUES (?, ?, 'open', ?, ?)",
        (claim_id, kind, today(db), reason),
    )
    return {"case_id": cursor.lastrowid}


def add_note(db: sqlite3.Connection, case_id: int, text: str) -> Row:
    case = one(
        db,
        "SELECT * FROM cases WHERE case_id = ?",
        case_id,
        what=f"case_id {case_id}",
        hint=_CASE_HINT,
    )
    cursor = db.execute(
        "INSERT INTO case_notes (claim_id, case_id, author, written_on, body) "
        "VALUES (?, ?, 'agent', ?, ?)",
        (case["claim_id"], case_id, today(db), text),
    )
    return {"note_id": cursor.lastrowid}


def schedule_followup(db: sqlite3.Connection, case_id: int, due_date: str, action: str) -> Row:
    one(
        db,
        "SELECT case_id FROM cases WHERE case_id = ?",
        case_id,
        what=f"case_id {case_id}",
        hint=_CASE_HINT,
    )
    try:
        due = date.fromisoformat(due_date)
    except ValueError:
        raise Rejected(
            f"due_date {due_date!r} is not a calendar date; write it as YYYY-MM-DD, e.g. 2026-12-15"
        ) from None
    if due.isoformat() < today(db):
        raise Rejected(
            f"due_date {due_date} is in the past (today is {today(db)}); pick today or a later date"
        )
    cursor = db.execute(
        "INSERT INTO followups (case_id, due_date, action) VALUES (?, ?, ?)",
        (case_id, due.isoformat(), action),
    )
    return {"followup_id": cursor.lastrowid}


def request_approval(db: sqlite3.Connection, rline_id: str, amount: int, reason: str) -> Row:
    _limits.check_approval(_rline(db, rline_id), amount)
    _limits.pending_approval(db, rline_id)
    cursor = db.execute(
        "INSERT INTO approvals (rline_id, amount_cents, reason, status) "
        "VALUES (?, ?, ?, 'requested')",
        (rline_id, amount, reason),
    )
    return {"approval_id": cursor.lastrowid, "status": "requested"}


def set_claim_status(db: sqlite3.Connection, claim_id: str, status: str) -> Row:
    """Set the claim's status. Setting the status it already has writes nothing: like a
    biller re-saving an unchanged screen, it changes nothing in the books, so the audit
    history must not show a write to ``claims`` (a task that may not touch claims would
    reject an agent that only confirmed the status)."""
    claim = one(
        db,
        "SELECT claim_id, status FROM claims WHERE claim_id = ?",
        claim_id,
        what=f"claim_id {claim_id!r}",
    )
    if claim["status"] == status:
        return {"claim_id": claim_id, "status": status, "changed": False}
    db.execute("UPDATE claims SET status = ? WHERE claim_id = ?", (status, claim_id))
    return {"claim_id": claim_id, "status": status, "changed": True}


def _balance(db: sqlite3.Connection, line_id: str) -> int:
    return int(
        db.execute(
            "SELECT balance_cents FROM claim_lines WHERE line_id = ?", (line_id,)
        ).fetchone()[0]
    )
