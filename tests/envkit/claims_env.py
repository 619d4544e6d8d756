"""A small claims environment used by the envkit tests (importable from subprocesses)."""

from __future__ import annotations

import random
import sqlite3
from typing import Annotated, Any

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = """
CREATE TABLE claims (id INTEGER PRIMARY KEY, payer TEXT NOT NULL, amount REAL NOT NULL,
                     status TEXT NOT NULL DEFAULT 'open');
CREATE TABLE allocations (id INTEGER PRIMARY KEY, claim_id INTEGER NOT NULL,
                          amount REAL NOT NULL, memo TEXT);
CREATE TABLE notes (id INTEGER PRIMARY KEY, claim_id INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE tags (claim_id INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (claim_id, tag))
    WITHOUT ROWID;
CREATE TABLE events (kind TEXT, payload BLOB);
"""


def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
    conn.executemany(
        "INSERT INTO claims (id, payer, amount) VALUES (?, ?, ?)",
        [(i, f"payer-{i % 3}", round(rng.uniform(10, 100), 2)) for i in range(1, 21)],
    )
    conn.execute("INSERT INTO notes VALUES (1, 17, 'payer called: pay half')")
    conn.execute("INSERT INTO tags VALUES (17, 'urgent')")
    conn.execute("INSERT INTO events VALUES ('seed', x'00ff')")


@tool(writes=True, example={"claim_id": 1, "amount": 5.0})
def allocate(
    ctx: ToolContext, claim_id: int, amount: Annotated[float, {"minimum": 0}], memo: str = ""
) -> dict[str, Any]:
    """Allocate an amount to a claim."""
    claim = ctx.one("SELECT amount FROM claims WHERE id = ?", (claim_id,))
    if claim is None:
        ctx.reject(f"claim {claim_id} does not exist")
    cursor = ctx.execute(
        "INSERT INTO allocations (claim_id, amount, memo) VALUES (?, ?, ?)",
        (claim_id, amount, memo),
    )
    if amount > claim["amount"]:
        # Written first, refused after: the savepoint must undo the insert.
        ctx.reject(f"amount {amount} exceeds the claim amount {claim['amount']}")
    return {"allocation_id": cursor.lastrowid}


@tool(writes=True, example={"claim_id": 2, "status": "closed"})
def set_status(ctx: ToolContext, claim_id: int, status: str) -> None:
    """Set a claim's status."""
    ctx.execute("UPDATE claims SET status = ? WHERE id = ?", (status, claim_id))


@tool(writes=True, example={"claim_id": 3, "tag": "late"})
def tag_claim(ctx: ToolContext, claim_id: int, tag: str) -> None:
    """Tag a claim."""
    ctx.execute("INSERT OR REPLACE INTO tags VALUES (?, ?)", (claim_id, tag))


@tool(writes=True, example={"kind": "ping"})
def log_event(ctx: ToolContext, kind: str) -> None:
    """Append an event with random bytes drawn from ctx.rng."""
    ctx.execute("INSERT INTO events VALUES (?, ?)", (kind, ctx.rng.randbytes(4)))


@tool(example={"claim_id": 1})
def get_claim(ctx: ToolContext, claim_id: int) -> dict[str, Any] | None:
    """Look up a claim."""
    return ctx.one("SELECT * FROM claims WHERE id = ?", (claim_id,))


@tool(example={"note_id": 1})
def read_note(ctx: ToolContext, note_id: int) -> dict[str, Any] | None:
    """Read a case note (hidden state)."""
    return ctx.reveal("notes", note_id)


TOOLS = [allocate, set_status, tag_claim, log_event, get_claim, read_note]


def snapshot() -> Snapshot:
    return Snapshot.build("claims-basic", SCHEMA, populate, seed=1)


def world(snap: Snapshot | None = None, **kwargs: Any) -> ToolWorld:
    return ToolWorld(snap or snapshot(), TOOLS, hidden=["notes"], **kwargs)
