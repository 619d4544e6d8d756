"""Keep a tool call inside its savepoint, even when SQLite ends the transaction under it.

A tool's statement can make SQLite roll back the whole transaction, not just itself: a
trigger's ``RAISE(ROLLBACK, ...)``, an ``ON CONFLICT ROLLBACK`` constraint, an
``INSERT OR ROLLBACK`` / ``UPDATE OR ROLLBACK`` clause, an interrupt (``interrupt()``, a
progress handler) during a write. The call's savepoint goes with it and the connection
is back in autocommit mode: a tool that catches the error and goes on would commit each
later write at once, outside any transaction the world can roll back, audited at the
previous step.

No statement can be refused for that in advance (the authorizer does not see conflict
clauses or ``RAISE``, nor cached statements), and Python has no commit hook. So every
audited table gets a TEMP ``BEFORE INSERT / UPDATE / DELETE`` trigger (the connection's,
not the file's: the snapshot's schema and the audit are unchanged) that lets a row change
through only while the call's transaction is alive: a write call sets the context row's
``step`` inside its savepoint, so the trigger compares that column with the step the
world is running (``_onrecord_gate``). After a rollback the column is back at an earlier
step, in autocommit mode and in any transaction the tool begins alike, and the write is
refused (``RAISE(ABORT)``: the statement fails and changes nothing). Read-only calls set
no step; any row change they try is refused the same way. TEMP triggers on a main table
fire before the table's own, and whatever the statement (cached, ``WITH ... INSERT``,
``executescript``, a trigger's nested write), so the state after such a call is exactly
the state before it: SQLite's rollback undid the call's earlier writes, and no row
was written later. (Tables that cannot have triggers are outside the gate: TEMP tables,
which are the connection's scratch, and virtual tables; the next reset restores them,
or drops the TEMP ones. ``sqlite_sequence`` a tool may not write at all: ``_guard``.)
The world then fails the call (``TransactionEnded``): when it sees the connection out
of its transaction after the tool returned, when its ``RELEASE`` or ``ROLLBACK TO``
finds no savepoint, or when the gate refused a write.

Outside tool calls (reset, undo) the gate lets every write through. Cost: one trigger
and one Python call per row a tool writes (~0.45 µs), nothing per call; after a reset
that copies pages, the next statement re-parses the TEMP triggers with the schema
(~6 µs each, three per table).

Some of what ``ctx.connection`` offers acts without SQL, so neither the authorizer nor
a trigger sees it; the world's connection (``_connection.WorldConnection``) refuses or
scopes it (incremental BLOB writes, ``set_authorizer``, ``close``, functions named like
onrecord's, which would replace the gate, and the rest of the connection's state).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from onrecord.envkit._guard import CALL_SAVEPOINT, StatementGuard
from onrecord.envkit._sql import INTERNAL_PREFIX, Table, internal, quote
from onrecord.envkit.audit import CTX
from onrecord.errors import OnrecordError

__all__ = ["GATE", "TransactionEnded", "install_gate", "undo_call"]

GATE = f"{INTERNAL_PREFIX}gate"
"""The SQL function the TEMP triggers ask (``StatementGuard.may_write``)."""

_RAISE = (
    "onrecord: write refused: the call''s transaction was rolled back, the tool is read-only, "
    "or the thread is one a tool left running"
)
_ROLLBACK_CALL = internal(f"ROLLBACK TO {CALL_SAVEPOINT}")
_RELEASE_CALL = internal(f"RELEASE {CALL_SAVEPOINT}")


class TransactionEnded(OnrecordError):
    """SQLite ended the call's transaction while the tool ran; the call is a
    ``tool_error`` and changed nothing."""

    def __init__(self) -> None:
        super().__init__(
            "SQLite rolled back the call's transaction while the tool ran (a trigger's "
            "RAISE(ROLLBACK), an ON CONFLICT ROLLBACK constraint or OR ROLLBACK clause, or "
            "an interrupt), undoing the call's writes, and the tool went on; its writes to "
            "the world's tables after that were refused, so it changed none of them"
        )


def install_gate(
    conn: sqlite3.Connection, layout: Sequence[tuple[Table, str]], guard: StatementGuard
) -> None:
    """Register the gate function and a TEMP trigger per audited table and operation."""
    conn.create_function(GATE, 1, guard.may_write)
    conn.execute(internal("BEGIN"))
    try:
        for index, (table, _) in enumerate(layout):
            for op, event in (("I", "INSERT"), ("U", "UPDATE"), ("D", "DELETE")):
                conn.execute(
                    internal(
                        f"CREATE TEMP TRIGGER IF NOT EXISTS {quote(f'{GATE}_{index}_{op}')} "
                        f"BEFORE {event} ON main.{quote(table.name)} "
                        f"WHEN NOT {GATE}((SELECT step FROM main.{CTX})) "
                        f"BEGIN SELECT RAISE(ABORT, '{_RAISE}'); END"
                    )
                )
    except BaseException:
        conn.execute(internal("ROLLBACK"))
        raise
    conn.execute(internal("COMMIT"))


def undo_call(conn: sqlite3.Connection) -> bool:
    """Roll the call back; ``True`` when its savepoint was gone (SQLite, or the tool,
    had ended the transaction): whatever is still open is then rolled back, so no
    SQLite error escapes a call."""
    try:
        conn.execute(_ROLLBACK_CALL)
        conn.execute(_RELEASE_CALL)
    except sqlite3.OperationalError:
        if conn.in_transaction:
            conn.execute(internal("ROLLBACK"))
        return True
    return False
