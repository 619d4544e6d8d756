"""The clinic-billing schema: what an insurer's remittance (an X12 835) is posted against.

Money is integer cents everywhere; dates are ISO ``YYYY-MM-DD`` text. Every table has a
primary key so the end-state diff can name rows. ``settings`` holds the facts every task
shares: today's date and the approval threshold.
"""

from __future__ import annotations

__all__ = ["PROTECTED_TABLES", "SCHEMA", "TABLES", "WRITABLE_TABLES"]

SCHEMA = """
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE payers (
    payer_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    appeal_window_days INTEGER NOT NULL
);
CREATE TABLE fee_schedule (
    payer_id TEXT NOT NULL REFERENCES payers(payer_id),
    procedure_code TEXT NOT NULL,
    allowed_cents INTEGER NOT NULL,
    PRIMARY KEY (payer_id, procedure_code)
);
CREATE TABLE patients (
    patient_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    balance_cents INTEGER NOT NULL
);
CREATE TABLE claims (
    claim_id TEXT PRIMARY KEY,
    patient_id TEXT NOT NULL REFERENCES patients(patient_id),
    payer_id TEXT NOT NULL REFERENCES payers(payer_id),
    service_date TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE claim_lines (
    line_id TEXT PRIMARY KEY,
    claim_id TEXT NOT NULL REFERENCES claims(claim_id),
    procedure_code TEXT NOT NULL,
    billed_cents INTEGER NOT NULL,
    balance_cents INTEGER NOT NULL
);
CREATE INDEX claim_lines_claim ON claim_lines(claim_id);
CREATE TABLE remittances (
    remittance_id TEXT PRIMARY KEY,
    payer_id TEXT NOT NULL REFERENCES payers(payer_id),
    payment_number TEXT NOT NULL,
    payment_date TEXT NOT NULL,
    total_paid_cents INTEGER NOT NULL,
    status TEXT NOT NULL
);
CREATE INDEX remittances_payment ON remittances(payer_id, payment_number);
CREATE TABLE remittance_lines (
    rline_id TEXT PRIMARY KEY,
    remittance_id TEXT NOT NULL REFERENCES remittances(remittance_id),
    claim_id TEXT NOT NULL REFERENCES claims(claim_id),
    line_id TEXT REFERENCES claim_lines(line_id),
    billed_cents INTEGER NOT NULL,
    allowed_cents INTEGER NOT NULL,
    paid_cents INTEGER NOT NULL,
    patient_resp_cents INTEGER NOT NULL
);
CREATE INDEX remittance_lines_remittance ON remittance_lines(remittance_id);
CREATE TABLE remittance_adjustments (
    radj_id TEXT PRIMARY KEY,
    rline_id TEXT NOT NULL REFERENCES remittance_lines(rline_id),
    group_code TEXT NOT NULL,
    reason_code TEXT NOT NULL,
    amount_cents INTEGER NOT NULL
);
CREATE INDEX remittance_adjustments_rline ON remittance_adjustments(rline_id);
CREATE TABLE allocations (
    allocation_id INTEGER PRIMARY KEY AUTOINCREMENT,
    rline_id TEXT NOT NULL REFERENCES remittance_lines(rline_id),
    line_id TEXT NOT NULL REFERENCES claim_lines(line_id),
    amount_cents INTEGER NOT NULL,
    reverses INTEGER REFERENCES allocations(allocation_id),
    posted_on TEXT NOT NULL
);
CREATE INDEX allocations_line ON allocations(line_id);
CREATE TABLE adjustments (
    adjustment_id INTEGER PRIMARY KEY AUTOINCREMENT,
    rline_id TEXT NOT NULL REFERENCES remittance_lines(rline_id),
    line_id TEXT NOT NULL REFERENCES claim_lines(line_id),
    group_code TEXT NOT NULL,
    reason_code TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    posted_on TEXT NOT NULL
);
CREATE INDEX adjustments_line ON adjustments(line_id);
CREATE TABLE cases (
    case_id INTEGER PRIMARY KEY AUTOINCREMENT,
    claim_id TEXT NOT NULL REFERENCES claims(claim_id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    opened_on TEXT NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE case_notes (
    note_id INTEGER PRIMARY KEY AUTOINCREMENT,
    claim_id TEXT NOT NULL REFERENCES claims(claim_id),
    case_id INTEGER REFERENCES cases(case_id),
    author TEXT NOT NULL,
    written_on TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX case_notes_claim ON case_notes(claim_id);
CREATE TABLE followups (
    followup_id INTEGER PRIMARY KEY AUTOINCREMENT,
    case_id INTEGER NOT NULL REFERENCES cases(case_id),
    due_date TEXT NOT NULL,
    action TEXT NOT NULL
);
CREATE TABLE approvals (
    approval_id INTEGER PRIMARY KEY AUTOINCREMENT,
    rline_id TEXT NOT NULL REFERENCES remittance_lines(rline_id),
    amount_cents INTEGER NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL
);
"""

TABLES = (
    "settings",
    "payers",
    "fee_schedule",
    "patients",
    "claims",
    "claim_lines",
    "remittances",
    "remittance_lines",
    "remittance_adjustments",
    "allocations",
    "adjustments",
    "cases",
    "case_notes",
    "followups",
    "approvals",
)
"""Every table, parents before children (the order rows are inserted in)."""

WRITABLE_TABLES = (
    "allocations",
    "adjustments",
    "claim_lines",
    "patients",
    "claims",
    "cases",
    "case_notes",
    "followups",
    "approvals",
)
"""Tables some write tool can change; a task allows a subset of them."""

PROTECTED_TABLES = (
    "settings",
    "payers",
    "fee_schedule",
    "remittances",
    "remittance_lines",
    "remittance_adjustments",
)
"""Tables no tool writes: the remittance as received and the clinic's reference data."""
