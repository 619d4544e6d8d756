"""Deterministic start snapshots: realistic clinic data from a seed, at any size.

``Generator`` builds background data (payers, fee schedules, patients, claims already
paid, partly paid or open, with the remittances and allocations that paid them) and then
lets a task scenario add its own rows with ids from the same counters, so an agent cannot
tell the rows a task is about from the background by their names.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from onrecord.domains.remittance._schema import SCHEMA, TABLES

__all__ = ["PAYER_IDS", "PROCEDURES", "TODAY", "Generator", "insert_rows", "write_snapshot"]

TODAY = date(2026, 11, 30)
"""The clinic's "today" in every snapshot, so deadlines are reproducible."""
APPROVAL_THRESHOLD_CENTS = 1_000_000
"""A single posting above 10,000.00 needs a supervisor's approval first."""

PROCEDURES = {  # CPT code: typical billed amount in cents
    "99213": 15_000,
    "99214": 22_000,
    "99215": 31_000,
    "93000": 8_500,
    "80053": 6_200,
    "85025": 3_800,
    "71046": 12_500,
    "36415": 2_500,
    "90471": 4_000,
    "20610": 27_500,
    "29881": 980_000,
    "27447": 2_450_000,
}
_PAYERS = (
    ("PAY-AETNA", "Aetna", 180),
    ("PAY-BCBS", "Blue Cross Blue Shield", 90),
    ("PAY-CIGNA", "Cigna", 180),
    ("PAY-UHC", "UnitedHealthcare", 90),
    ("PAY-MCARE", "Medicare Part B", 120),
    ("PAY-HUMANA", "Humana", 60),
)
PAYER_IDS = tuple(payer_id for payer_id, _, _ in _PAYERS)
_INDEXED = {"claims": "claim_id", "claim_lines": "line_id", "patients": "patient_id"}
_FIRST = (
    "Ana",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jon",
    "Kemi",
    "Luca",
    "Mara",
    "Nils",
    "Olu",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tomas",
)
_LAST = (
    "Alvarez",
    "Brown",
    "Chen",
    "Diallo",
    "Evans",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kim",
    "Lopez",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Patel",
)


def iso(day: date) -> str:
    return day.isoformat()


@dataclass
class Generator:
    """Rows of one start snapshot, built deterministically from ``seed``."""

    seed: int
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    index: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Rows of ``claims``, ``claim_lines`` and ``patients`` by primary key (ids never clash:
    each table has its own prefix)."""

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.rows = {table: [] for table in TABLES}
        self.add("settings", key="today", value=iso(TODAY))
        self.add("settings", key="approval_threshold_cents", value=str(APPROVAL_THRESHOLD_CENTS))
        for payer_id, name, window in _PAYERS:
            self.add("payers", payer_id=payer_id, name=name, appeal_window_days=window)
            for code, billed in PROCEDURES.items():
                share = self.rng.uniform(0.55, 0.85)
                self.add(
                    "fee_schedule",
                    payer_id=payer_id,
                    procedure_code=code,
                    allowed_cents=int(billed * share),
                )

    # -- ids and rows -------------------------------------------------------------
    def next_id(self, prefix: str, width: int = 6) -> str:
        self.counters[prefix] = self.counters.get(prefix, 0) + 1
        return f"{prefix}-{self.counters[prefix] + 100_000:0{width}d}"

    def next_int(self, table: str) -> int:
        self.counters[table] = self.counters.get(table, 0) + 1
        return self.counters[table]

    def add(self, table: str, **row: Any) -> dict[str, Any]:
        self.rows[table].append(row)
        key = _INDEXED.get(table)
        if key is not None:
            self.index[row[key]] = row
        return row

    def allowed(self, payer_id: str, code: str) -> int:
        for row in self.rows["fee_schedule"]:
            if row["payer_id"] == payer_id and row["procedure_code"] == code:
                return int(row["allowed_cents"])
        raise KeyError(f"no fee schedule for {payer_id}/{code}")

    def window(self, payer_id: str) -> int:
        return next(
            int(p["appeal_window_days"]) for p in self.rows["payers"] if p["payer_id"] == payer_id
        )

    # -- building blocks ------------------------------------------------------------
    def patient(self) -> str:
        patient_id = self.next_id("PT")
        name = f"{self.rng.choice(_FIRST)} {self.rng.choice(_LAST)}"
        self.add("patients", patient_id=patient_id, name=name, balance_cents=0)
        return patient_id

    def claim(
        self,
        patient_id: str,
        payer_id: str,
        codes: Iterable[str],
        *,
        days_ago: int = 30,
        billed: Iterable[int] | None = None,
    ) -> tuple[str, list[str]]:
        claim_id = self.next_id("CLM")
        service = TODAY - timedelta(days=days_ago)
        self.add(
            "claims",
            claim_id=claim_id,
            patient_id=patient_id,
            payer_id=payer_id,
            service_date=iso(service),
            status="open",
        )
        amounts = list(billed) if billed is not None else None
        line_ids = []
        for index, code in enumerate(codes):
            amount = amounts[index] if amounts is not None else PROCEDURES[code]
            line_id = self.next_id("CL")
            self.add(
                "claim_lines",
                line_id=line_id,
                claim_id=claim_id,
                procedure_code=code,
                billed_cents=amount,
                balance_cents=amount,
            )
            line_ids.append(line_id)
        return claim_id, line_ids

    def remittance(
        self,
        payer_id: str,
        *,
        days_ago: int = 3,
        status: str = "received",
        payment_number: str | None = None,
    ) -> dict[str, Any]:
        number = payment_number or f"EFT{self.rng.randrange(10**9, 10**10)}"
        return self.add(
            "remittances",
            remittance_id=self.next_id("RMT"),
            payer_id=payer_id,
            payment_number=number,
            payment_date=iso(TODAY - timedelta(days=days_ago)),
            total_paid_cents=0,
            status=status,
        )

    def rline(
        self,
        remittance: dict[str, Any],
        claim_id: str,
        line_id: str | None,
        *,
        billed: int,
        allowed: int,
        paid: int,
        patient_resp: int = 0,
        adjustments: Iterable[tuple[str, str, int]] = (),
    ) -> str:
        rline_id = self.next_id("RL")
        self.add(
            "remittance_lines",
            rline_id=rline_id,
            remittance_id=remittance["remittance_id"],
            claim_id=claim_id,
            line_id=line_id,
            billed_cents=billed,
            allowed_cents=allowed,
            paid_cents=paid,
            patient_resp_cents=patient_resp,
        )
        for group, reason, amount in adjustments:
            self.add(
                "remittance_adjustments",
                radj_id=self.next_id("RA"),
                rline_id=rline_id,
                group_code=group,
                reason_code=reason,
                amount_cents=amount,
            )
        remittance["total_paid_cents"] += paid
        return rline_id

    def allocate(self, rline_id: str, line_id: str, amount: int, *, days_ago: int) -> int:
        allocation_id = self.next_int("allocations")
        self.add(
            "allocations",
            allocation_id=allocation_id,
            rline_id=rline_id,
            line_id=line_id,
            amount_cents=amount,
            reverses=None,
            posted_on=iso(TODAY - timedelta(days=days_ago)),
        )
        self._line(line_id)["balance_cents"] -= amount
        return allocation_id

    def adjust(
        self, rline_id: str, line_id: str, group: str, reason: str, amount: int, *, days_ago: int
    ) -> None:
        self.add(
            "adjustments",
            adjustment_id=self.next_int("adjustments"),
            rline_id=rline_id,
            line_id=line_id,
            group_code=group,
            reason_code=reason,
            amount_cents=amount,
            posted_on=iso(TODAY - timedelta(days=days_ago)),
        )
        line = self._line(line_id)
        line["balance_cents"] -= amount
        if group == "PR":
            self._patient_of(line["claim_id"])["balance_cents"] += amount

    def note(self, claim_id: str, body: str, *, author: str, days_ago: int) -> int:
        note_id = self.next_int("case_notes")
        self.add(
            "case_notes",
            note_id=note_id,
            claim_id=claim_id,
            case_id=None,
            author=author,
            written_on=iso(TODAY - timedelta(days=days_ago)),
            body=body,
        )
        return note_id

    def _line(self, line_id: str) -> dict[str, Any]:
        return self.index[line_id]

    def _patient_of(self, claim_id: str) -> dict[str, Any]:
        return self.index[self.index[claim_id]["patient_id"]]

    # -- background -----------------------------------------------------------------
    def background(self, rows: int) -> None:
        """Add about ``rows`` rows of history: claims paid through earlier remittances,
        partly paid claims, and claims still waiting for their remittance."""
        claims = max(10, rows * 10 // 104)  # about 10.4 rows per claim with its history
        patients = [self.patient() for _ in range(max(3, claims // 3))]
        codes = [c for c in PROCEDURES if PROCEDURES[c] < 100_000]
        open_remittance: dict[str, dict[str, Any]] = {}
        for index in range(claims):
            payer_id = _PAYERS[index % len(_PAYERS)][0]
            picked = self.rng.sample(codes, self.rng.randint(1, 3))
            claim_id, line_ids = self.claim(
                self.rng.choice(patients), payer_id, picked, days_ago=self.rng.randint(20, 200)
            )
            if self.rng.random() < 0.3:
                continue  # still waiting for the payer
            if payer_id not in open_remittance or self.rng.random() < 0.1:
                open_remittance[payer_id] = self.remittance(
                    payer_id, days_ago=self.rng.randint(10, 60), status="posted"
                )
            for line_id, code in zip(line_ids, picked, strict=True):
                self._paid_history(open_remittance[payer_id], claim_id, line_id, code)

    def _paid_history(
        self, remittance: dict[str, Any], claim_id: str, line_id: str, code: str
    ) -> None:
        billed = PROCEDURES[code]
        allowed = self.allowed(remittance["payer_id"], code)
        resp = self.rng.choice((0, 0, 2_000, 3_500))
        paid = allowed - resp
        adjustments = [("CO", "45", billed - allowed)] + ([("PR", "2", resp)] if resp else [])
        rline_id = self.rline(
            remittance,
            claim_id,
            line_id,
            billed=billed,
            allowed=allowed,
            paid=paid,
            patient_resp=resp,
            adjustments=adjustments,
        )
        self.allocate(rline_id, line_id, paid, days_ago=5)
        for group, reason, amount in adjustments:
            self.adjust(rline_id, line_id, group, reason, amount, days_ago=5)


def insert_rows(generator: Generator, connection: sqlite3.Connection) -> None:
    """Insert the generator's rows (parents first) into a database with the schema."""
    for table in TABLES:
        rows = generator.rows[table]
        if not rows:
            continue
        columns = list(rows[0])
        sql = (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
        )
        connection.executemany(sql, ([row[c] for c in columns] for row in rows))


def write_snapshot(generator: Generator, path: str | Path) -> Path:
    """Write the generator's rows into a new SQLite file at ``path``."""
    path = Path(path)
    path.unlink(missing_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.executescript(SCHEMA)
        with connection:
            insert_rows(generator, connection)
    finally:
        connection.close()
    return path
