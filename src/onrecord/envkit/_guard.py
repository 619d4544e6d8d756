"""What a tool's SQL may do: an SQLite authorizer active while tool code runs.

The audit sees a tool's writes through triggers, and each call is atomic through
onrecord's savepoint. A tool could still step outside both, through ``ctx.execute`` or
``ctx.connection`` alike: change the schema (a new table's rows would be invisible to
the diff), commit or roll back the call's transaction (a rejected call could no longer
be undone), attach another database (side effects outside the world), change a setting
(``PRAGMA recursive_triggers = OFF``, after which a REPLACE deletes rows unaudited),
edit onrecord's own audit tables (a history that lies), or set the next AUTOINCREMENT id
in ``sqlite_sequence`` (no trigger can watch it, yet it decides which id the next record
gets; SQLite's own update after an insert is not authorized, so inserts still move it).
The authorizer refuses those statements when they are prepared, so they never run; the
world then fails the call with ``forbidden_statement`` and rolls it back. Everything
else (reads, writes to user tables, temporary tables, nested savepoints, reading
pragmas) is allowed.

SQLite asks the authorizer when a statement is prepared, not each time it runs, and the
``sqlite3`` module caches prepared statements by their text. Every statement onrecord
runs ends with an ``-- onrecord`` comment and a token drawn per process
(``_sql.internal``), so a tool's identical ``COMMIT`` is never served from the cache,
nor the undo's ``DELETE`` of a shadow table (which let a tool erase the history of its
own writes). (With a fixed comment, a tool that typed
``RELEASE onrecord_call -- onrecord`` committed its call's writes, then failed: the
rollback found no savepoint.) The world's owner types plain text: when it prepared,
between calls, a statement a tool may not run (an observer's ``UPDATE sqlite_sequence
...``, its own ``BEGIN`` and ``COMMIT``), the guard notes it (``stale``), and the next
call expires every prepared statement before the tool runs (setting the authorizer
again does that), so a tool typing the same text has it prepared again, under the
guard, and refused. A tool's statement that reads a hidden table stays cached: the
world's cursors tell the guard each statement's text, and a text known to read one is
noted each time it runs (``sql_reads``, ``read_texts``: see ``_sql_reads``; a TEMP
schema change has them forgotten); only one prepared past them expires them all.
Nothing else expires them: a tool's own statements stay cached from call to call.
(Schema changes, ``ATTACH`` and pragma settings needed none of this: SQLite prepares
those statements again at each run.)
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from onrecord.envkit._sql import INTERNAL, INTERNAL_PREFIX
from onrecord.envkit._sql_reads import temp_changing

__all__ = ["CALL_SAVEPOINT", "INTERNAL", "READ_ONLY", "StatementGuard"]

CALL_SAVEPOINT = "onrecord_call"
READ_ONLY = "a read-only tool (writes=False) wrote to the database; its changes were rolled back"

_SCHEMA_CHANGES = {
    sqlite3.SQLITE_CREATE_INDEX: "CREATE INDEX",
    sqlite3.SQLITE_CREATE_TABLE: "CREATE TABLE",
    sqlite3.SQLITE_CREATE_TRIGGER: "CREATE TRIGGER",
    sqlite3.SQLITE_CREATE_VIEW: "CREATE VIEW",
    sqlite3.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
    sqlite3.SQLITE_DROP_INDEX: "DROP INDEX",
    sqlite3.SQLITE_DROP_TABLE: "DROP TABLE",
    sqlite3.SQLITE_DROP_TRIGGER: "DROP TRIGGER",
    sqlite3.SQLITE_DROP_VIEW: "DROP VIEW",
    sqlite3.SQLITE_DROP_VTABLE: "DROP VIRTUAL TABLE",
    sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE",
}
_TEMP_CHANGES = {
    sqlite3.SQLITE_CREATE_TEMP_INDEX: "CREATE INDEX",
    sqlite3.SQLITE_CREATE_TEMP_TABLE: "CREATE TABLE",
    sqlite3.SQLITE_CREATE_TEMP_TRIGGER: "CREATE TRIGGER",
    sqlite3.SQLITE_CREATE_TEMP_VIEW: "CREATE VIEW",
    sqlite3.SQLITE_DROP_TEMP_INDEX: "DROP INDEX",
    sqlite3.SQLITE_DROP_TEMP_TABLE: "DROP TABLE",
    sqlite3.SQLITE_DROP_TEMP_TRIGGER: "DROP TRIGGER",
    sqlite3.SQLITE_DROP_TEMP_VIEW: "DROP VIEW",
}
_WRITES = {
    sqlite3.SQLITE_INSERT: "INSERT INTO",
    sqlite3.SQLITE_UPDATE: "UPDATE",
    sqlite3.SQLITE_DELETE: "DELETE FROM",
}
_READING_PRAGMAS = frozenset(
    {
        "foreign_key_check",
        "foreign_key_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "quick_check",
        "table_info",
        "table_list",
        "table_xinfo",
    }
)
"""Pragmas whose argument names what to read, not a value to set."""
_STRAY_MAY = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
"""What a thread a tool left running may still prepare: reads (and reading pragmas)."""


class StatementGuard:
    """The world connection's authorizer; it refuses only while a tool runs. It is also
    the gate the TEMP write triggers ask (``_call_guard``)."""

    def __init__(self, hidden: Iterable[str] = ()) -> None:
        self.hidden = frozenset(hidden)
        """The world's hidden tables (``main``'s): a tool's SQL reading one is noted."""
        self._hidden_names = {name.lower(): name for name in self.hidden}
        self.sql_reads: dict[str, bool] = {}
        """Hidden tables the running call's own SQL read (its ``ToolContext`` holds the
        same dict), not counting ``ctx.reveal``'s statement (``revealing``); False when
        every read named it unqualified, for no column, so a TEMP table may be what was
        read (``_sql_reads.event_reads``)."""
        self.revealing: int | None = None
        """The thread running ``ctx.reveal``'s statement, whose read the reveal logs."""
        self.running: tuple[int, str] | None = None
        """The thread and SQL text a world cursor is running (``_sql_reads.TrackedCursor``)."""
        self.read_texts: dict[str, dict[str, bool]] = {}
        """SQL texts whose prepared statement reads hidden tables (as ``sql_reads``), so
        that a run served from ``sqlite3``'s cache, which SQLite authorizes no more, is
        noted too; emptied whenever every statement is expired (``tool_call``)."""
        self.active = False
        self.refused: str | None = None
        """Why the first statement refused during the current call was refused."""
        self.step: int | None = None
        """The context row's ``step`` while the running call's transaction is alive
        (``None`` for a read-only call, which may change no row)."""
        self.escaped = False
        """Whether the gate refused a write because the call's transaction had ended."""
        self.interrupted = False
        """Whether a KeyboardInterrupt (Ctrl-C) came while SQLite ran this authorizer or
        the gate; sqlite3 would swallow it, so the world raises it (``_ctrl_c``)."""
        self.internal = False
        """Whether onrecord's own code is preparing statements outside a call (``owned``):
        its texts end in ``INTERNAL``, which no tool types, so a tool never reuses them."""
        self.shadows: dict[str, str] = {}
        """The audit's shadow table of each hidden table (``WorldConnection.tool_call``):
        it holds the old and new values of the rows written this episode, so a tool's
        read of it is a read of the hidden table."""
        self.temp_dirty = False
        """Whether a TEMP object may have been created or dropped since ``temp_version``:
        ``read_texts`` may then be wrong (``_sql_reads._check_temp``)."""
        self.temp_version: int | None = None
        """``PRAGMA temp.schema_version`` when ``read_texts`` was last known to match."""
        self.stale = False
        """Whether a statement this guard refuses to tools was prepared outside a call by
        the world's owner (setup, an observer, ``world.conn`` between calls). ``sqlite3``
        caches it by its text, and a tool typing that text would run it unasked: the
        next call expires every prepared statement first (``WorldConnection.tool_call``).
        Also set once a tool's statement that reads a hidden table was prepared
        (``_sql_reads``)."""
        self.strays: dict[int, threading.Thread] = {}
        """Threads started during a call and still alive after it returned, by ident: a
        tool's, whose SQL would otherwise run unguarded between calls, during a reset
        or in a later episode. They may only read (``is_stray``)."""
        self._known: set[threading.Thread] = set()
        """While ``strays`` is not empty: the threads alive when the last call returned,
        and those that ran the world's own code since (``claim_thread``). Any other
        thread was born between calls while a tool's thread ran, so may be that
        thread's own (a thread it started, a pool's worker): it too may only read. (One
        born during a call is the call's until it returns, as without strays.)"""

    @contextmanager
    def tool_call(self, step: int | None) -> Iterator[None]:
        """Guard the statements prepared inside the block (the tool's own code)."""
        self.claim_thread()  # whoever runs the call is the harness, never a stray
        before = threading.enumerate()
        if self.strays:  # born between calls while a stray lived: may be the stray's
            self.strays.update(
                (t.ident, t) for t in before if t not in self._known and t.ident is not None
            )
        self.active, self.refused, self.step, self.escaped = True, None, step, False
        try:
            yield
        finally:
            self.active = False
            after = threading.enumerate()
            if after != before or self.strays:  # the common case costs one comparison
                self._note_strays(before, after)

    @contextmanager
    def owned(self) -> Iterator[None]:
        """onrecord's own statements are prepared in the block (see ``internal``)."""
        was, self.internal = self.internal, True
        try:
            yield
        finally:
            self.internal = was

    def _note_strays(self, before: list[threading.Thread], after: list[threading.Thread]) -> None:
        # With strays about, a thread born between calls counts as theirs: comparing
        # with ``before`` alone would free it (and so a stray's own threads) here.
        known = self._known if self.strays else set(before)
        strays = {ident: t for ident, t in self.strays.items() if t.is_alive()}
        for thread in after:
            if thread not in known and thread.ident is not None and thread.is_alive():
                strays[thread.ident] = thread
        self.strays = strays
        self._known = set(after) if strays else set()

    def claim_thread(self) -> None:
        """The current thread runs the world's own code (a call, a reset): not a stray."""
        if self.strays:
            current = threading.current_thread()
            self.strays.pop(threading.get_ident(), None)
            self._known.add(current)

    def is_stray(self) -> bool:
        """Whether the current thread is one a tool left running, or one born since the
        last call returned while such a thread ran (idents are reused, so the thread
        itself is compared)."""
        if not self.strays:
            return False
        current = threading.current_thread()
        if self.strays.get(current.ident or 0) is current:
            return True
        # In a call, a thread not among the strays was born during it (those born
        # before it were added as it began): it works for the call.
        return not self.active and current not in self._known

    def may_write(self, step: int) -> bool:
        """Whether a row of a user table may change now (``step`` is the context row's):
        always outside tool calls; in a call, only inside its live transaction. Never
        from a thread a tool left running."""
        try:
            if self.strays and self.is_stray():
                return False
            if step == self.step or not self.active:
                return True
            if self.step is None:
                if self.refused is None:
                    self.refused = READ_ONLY
            else:
                self.escaped = True
            return False
        except KeyboardInterrupt:
            # sqlite3 reports it as the statement failing, and drops it: noted, to be
            # raised once SQLite returns (_ctrl_c); raised again to fail the statement.
            self.interrupted = True
            raise

    def __call__(
        self,
        action: int,
        arg1: str | None,
        arg2: str | None,
        database: str | None,
        source: str | None,
    ) -> int:
        try:
            if self.strays and self.is_stray():
                may = action in _STRAY_MAY or (action == sqlite3.SQLITE_PRAGMA and arg2 is None)
                if may and refusal(action, arg1, arg2, source) is None:
                    if action == sqlite3.SQLITE_READ and arg1 in self.hidden:
                        self.stale = True  # no call's read, but cached for a tool's
                    return sqlite3.SQLITE_OK
                return sqlite3.SQLITE_DENY  # not recorded: it is no running call's doing
            if action == sqlite3.SQLITE_READ:  # never refused: only noted
                if arg1 in self.hidden and database == "main":
                    self._hidden_read(arg1, source, True)
                elif arg1 in self.shadows and database == "main" and not self._ours():
                    self._hidden_read(self.shadows[arg1], source, True)
                elif arg2 == "" and self.hidden:  # no column read: the name as written
                    self._nameless_read(arg1 or "", database)
                return sqlite3.SQLITE_OK
            if action in _TEMP_CHANGES and self.hidden:
                temp_changing(self, action, arg1)  # whoever's, even if it fails
            if not self.active:
                # Prepared for the owner: allowed, but noted if a tool may not run it, as
                # the cached statement would otherwise be served to a tool unasked.
                if not (self.internal or self.stale) and refusal(action, arg1, arg2, source):
                    self.stale = True
                return sqlite3.SQLITE_OK
            reason = refusal(action, arg1, arg2, source)
            if reason is None:
                return sqlite3.SQLITE_OK
            if self.refused is None:
                self.refused = reason
            return sqlite3.SQLITE_DENY
        except KeyboardInterrupt:
            # sqlite3 would swallow it and deny the statement ("not authorized"): noted,
            # to be raised once SQLite returns (_ctrl_c); the statement is denied.
            self.interrupted = True
            return sqlite3.SQLITE_DENY

    def _ours(self) -> bool:
        """Whether onrecord's own statement (the audit's, the undo's) is being prepared
        on this thread (not a tool's other thread, preparing while that one runs)."""
        ident, text = self.running or (None, "")
        return ident == threading.get_ident() and INTERNAL in text

    def _nameless_read(self, name: str, database: str | None) -> None:
        """A table read for no column (``SELECT count(*) FROM notes``): SQLite names it
        as the statement wrote it, schema too (``None`` when unqualified, which may be a
        TEMP table of that name: see ``_sql_reads.temp_changing``)."""
        table = self._hidden_names.get(name.lower())
        if table is not None and (database is None or database.lower() == "main"):
            self._hidden_read(table, None, database is not None)

    def _hidden_read(self, table: str, source: str | None, main: bool) -> None:
        """Note that the statement being prepared reads hidden ``table`` (of ``main``, or,
        ``main`` False, of ``main`` unless a TEMP table shadows it), unless onrecord's own
        trigger or ``ctx.reveal`` reads it: by its text, for its later runs from the cache
        (the owner's statements too, which a tool may type), and, in a tool's call, as
        the call's read. One prepared past the world's cursors (no known text) has every
        statement expired before the next call instead (see ``_sql_reads``)."""
        ident = threading.get_ident()
        if (source or "").startswith(INTERNAL_PREFIX) or self.revealing == ident:
            return  # an audit trigger's read, or the reveal's, logged with its key
        running = self.running
        text = running[1] if running is not None and running[0] == ident else None
        if text is not None and INTERNAL not in text:
            reads = self.read_texts.setdefault(text, {})
            reads[table] = main or reads.get(table, False)
        if text is None:  # prepared past the world's cursors: its cached runs unseen
            self.stale = True  # the owner's too, which a tool may type on ctx.execute
        if self.active:
            self.sql_reads[table] = main or self.sql_reads.get(table, False)

    def note_hidden(self, tables: Iterable[str]) -> None:
        """Note reads of hidden ``tables`` a call made outside SQL (a BLOB handle, a copy
        of the database), unless a thread a tool left running made them."""
        if self.active and not (self.strays and self.is_stray()):
            for table in tables:
                self.sql_reads[table] = True

    def hidden_named(self, name: str) -> str | None:
        """The hidden table ``name`` names (SQLite ignores ASCII case), or None."""
        return self._hidden_names.get(name.lower())


def refusal(action: int, arg1: str | None, arg2: str | None, source: str | None) -> str | None:
    """Why a tool may not prepare this statement, or None when it may."""
    if action in _SCHEMA_CHANGES:
        return (
            f"{_SCHEMA_CHANGES[action]} {arg1}: a tool may not change the schema during an "
            "episode (the audit would not see the change); put it in the snapshot, or use "
            "a TEMP table for scratch work"
        )
    # onrecord's TEMP triggers keep writes inside the call's transaction (_call_guard);
    # a TEMP object of that name would also shadow onrecord's tables in unqualified SQL.
    if action in _TEMP_CHANGES and (arg1 or "").startswith(INTERNAL_PREFIX):
        return f"{_TEMP_CHANGES[action]} temp.{arg1}: that name is onrecord's own"
    # A TEMP trigger on onrecord's context row would fire on the world's own statement
    # that starts each call (outside the guard): writes attributed to the next call.
    if action == sqlite3.SQLITE_CREATE_TEMP_TRIGGER and (arg2 or "").lower().startswith(
        INTERNAL_PREFIX
    ):
        return f"CREATE TRIGGER temp.{arg1} ON {arg2}: that table is onrecord's own"
    if (
        action == sqlite3.SQLITE_FUNCTION
        and (arg2 or "").startswith(INTERNAL_PREFIX)
        and not (source or "").startswith(INTERNAL_PREFIX)
    ):
        return f"{arg2}(): that function is onrecord's own, for its triggers"
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
        return "load_extension(): an extension is native code that outlives the call and the audit"
    if action == sqlite3.SQLITE_TRANSACTION:
        return (
            f"{arg1}: each tool call runs in onrecord's savepoint and is committed when the "
            "tool returns; a tool may not begin, commit or roll back transactions (use a "
            "SAVEPOINT of its own for a nested unit)"
        )
    # SQLite matches savepoint names without regard to ASCII case: RELEASE ONRECORD_CALL
    # would commit the call's writes out from under its rollback.
    if action == sqlite3.SQLITE_SAVEPOINT and (arg2 or "").lower() == CALL_SAVEPOINT:
        return f"SAVEPOINT {arg2} ({arg1}): that savepoint is onrecord's own"
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        verb = "ATTACH" if action == sqlite3.SQLITE_ATTACH else "DETACH"
        return (
            f"{verb} {arg1}: a tool may not attach databases; writes there would be side "
            "effects outside the world's state"
        )
    if action == sqlite3.SQLITE_PRAGMA and arg2 is not None and arg1 not in _READING_PRAGMAS:
        return (
            f"PRAGMA {arg1} = {arg2}: a tool may read pragmas but not set them; the "
            "world's settings are onrecord's"
        )
    if action in _WRITES:
        return _write_refusal(_WRITES[action], arg1 or "", source or "")
    return None


def _write_refusal(verb: str, table: str, source: str) -> str | None:
    """Why a tool may not write this table: onrecord's own, or the world's next
    AUTOINCREMENT ids. (SQLite's own counter update after an insert is not authorized.)"""
    if table.startswith(INTERNAL_PREFIX) and not source.startswith(INTERNAL_PREFIX):
        return f"{verb} {table}: onrecord's audit tables are written by its triggers only"
    # No trigger can watch sqlite_sequence, so no diff, digest or audit event would show
    # a direct write; yet it decides which id the next record gets. (Only main has one:
    # a TEMP AUTOINCREMENT table is refused, as it creates temp.sqlite_sequence.)
    if table == "sqlite_sequence":
        via = f" (in trigger {source})" if source else ""
        return (
            f"{verb} sqlite_sequence{via}: a tool may not set the next AUTOINCREMENT id "
            "directly (no diff, digest or audit event would show it); it moves only when a "
            "row is inserted, so insert the row with the id it should have instead"
        )
    return None
