"""Posting handlers: how a "post this invoice" request reaches the ledger.

The idempotent handler keys every posting by ``<invoice>:post`` and skips a repeat, so a
retry is harmless. The unsafe handler inserts every time, so a retry duplicates money.
"""

from __future__ import annotations

import sqlite3
from typing import Literal, Protocol

from onrecord.errors import InputError

__all__ = ["HANDLERS", "HandlerName", "PostingHandler", "idempotent_post", "unsafe_post"]

HandlerName = Literal["idempotent", "unsafe"]


class PostingHandler(Protocol):
    def __call__(self, connection: sqlite3.Connection, invoice_id: str) -> bool:
        """Post the invoice in its own transaction; return True when a row was written."""
        ...


def _insert(connection: sqlite3.Connection, invoice_id: str) -> None:
    cursor = connection.execute(
        "INSERT INTO postings (invoice_id, amount_cents, currency, idempotency_key) "
        "SELECT invoice_id, amount_cents, currency, ? FROM invoices WHERE invoice_id = ?",
        (f"{invoice_id}:post", invoice_id),
    )
    if cursor.rowcount != 1:  # never acknowledge a posting that wrote nothing
        raise InputError(f"the ledger has no invoice {invoice_id!r}; nothing was posted")


def idempotent_post(connection: sqlite3.Connection, invoice_id: str) -> bool:
    """Write the posting unless one with the same idempotency key is already committed."""
    with connection:
        seen = connection.execute(
            "SELECT 1 FROM postings WHERE idempotency_key = ?", (f"{invoice_id}:post",)
        ).fetchone()
        if seen is not None:
            return False
        _insert(connection, invoice_id)
    return True


def unsafe_post(connection: sqlite3.Connection, invoice_id: str) -> bool:
    """Write the posting every time: a retry after a lost acknowledgement duplicates it."""
    with connection:
        _insert(connection, invoice_id)
    return True


HANDLERS: dict[HandlerName, PostingHandler] = {"idempotent": idempotent_post, "unsafe": unsafe_post}
