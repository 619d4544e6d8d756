"""``ToolWorld``: a tool environment over one SQLite file, reset from a snapshot.

Each tool call is one atomic unit in a savepoint, released (committed) when the tool
returns and rolled back when it is rejected or fails; a read-only tool that changed a
row is failed and rolled back (a row count, where ``PRAGMA query_only`` would expire
every prepared statement at each toggle). Statements that would escape the audit or the
savepoint are refused as they are prepared (``_guard``), and no row changes once
SQLite has ended the call's transaction under the tool (``_call_guard``). The file is in
WAL mode, so a read-only observer connected to it always sees committed states only.
"""

from __future__ import annotations

import operator
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from onrecord._scratch import ScratchDirectory
from onrecord.case import EvalCase
from onrecord.envkit import _outcome, _setup, _sync_tools, _unawaited
from onrecord.envkit._call_guard import TransactionEnded, install_gate, undo_call
from onrecord.envkit._ctrl_c import instead, raise_noted, raises_noted
from onrecord.envkit._guard import CALL_SAVEPOINT, READ_ONLY, StatementGuard
from onrecord.envkit._sql import internal
from onrecord.envkit._undo import RowUndo
from onrecord.envkit.audit import CTX, AuditEvent, audit_tables, events_from_raw, read_audit
from onrecord.envkit.context import ToolContext, ToolRejected, Tracer
from onrecord.envkit.diff import StateDiff, audit_diff, history_and_diff, scan_diff
from onrecord.envkit.log import ActionLog
from onrecord.envkit.observer import ReadOnlyObserver
from onrecord.envkit.snapshot import Snapshot, readonly_uri
from onrecord.envkit.state import state_digest, table_rows
from onrecord.envkit.tools import Tool
from onrecord.errors import InputError, OnrecordError

__all__ = ["ENDINGS", "ForbiddenStatement", "InjectedFailure", "ReentrantCall", "ToolWorld"]

ENDINGS = ("finished", "agent_error", "step_limit", "stopped")
"""How an episode can end: the agent finished; the agent raised; it ran out of steps;
the harness stopped it for another reason."""

Event = dict[str, Any]


class InjectedFailure(OnrecordError):
    """The test-only failure set with :meth:`ToolWorld.inject_failure`."""


class ReentrantCall(OnrecordError):
    """World code (``call``, ``reset``, ``end_episode``) was run by a tool while its own
    call was in progress."""


class ForbiddenStatement(OnrecordError):
    """A tool prepared a statement that would escape the audit or the call's savepoint
    (see ``onrecord.envkit._guard``); the call is rolled back."""


_ENDED = (
    "the episode has ended (end_episode or save_episode was called); the call was not "
    "run: reset the world to start a new episode"
)
_SAVEPOINT = internal(f"SAVEPOINT {CALL_SAVEPOINT}")
_RELEASE_CALL = internal(f"RELEASE {CALL_SAVEPOINT}")


class ToolWorld:
    """Tools over a SQLite database that starts every episode from ``snapshot``."""

    def __init__(
        self,
        snapshot: Snapshot,
        tools: Iterable[Tool],
        *,
        path: str | os.PathLike[str] | None = None,
        hidden: Sequence[str] = (),
        tracer: Tracer | None = None,
        foreign_keys: bool = False,
        overwrite: bool = False,
    ) -> None:
        """``path`` may be an existing file only if a world left it or ``overwrite=True``
        (each reset rebuilds it from the snapshot), never the snapshot's source file."""
        if type(foreign_keys) is not bool:
            raise InputError(f"ToolWorld foreign_keys must be True or False, got {foreign_keys!r}")
        self.snapshot = snapshot = _setup.world_snapshot(snapshot)
        self.tools = _setup.declared_tools(tools)
        self.hidden = _setup.hidden_layouts(snapshot, hidden)
        self.tracer = tracer
        """Optional ``tracer(sql, params)``: sees the statements tools run through their
        context (``ctx.execute``, ``query``, ``one``, ``reveal``), not on ``ctx.connection``."""
        self._tmpdir: ScratchDirectory | None = None  # removed by a later run if killed
        if path is None:
            self._tmpdir = ScratchDirectory("world")
            self.path = Path(self._tmpdir.name) / "world.db"
        else:
            self.path = _setup.world_path(snapshot, path, overwrite)
        self._guard = StatementGuard(self.hidden)  # notes tools' SQL reads of them
        self.conn = _setup.open_world(self.path, self._guard, foreign_keys=foreign_keys)
        self.run_id: str | None = None
        self.case: EvalCase | None = None
        self.seed = 0
        self.step = 0
        self.state_version = 0
        self.ending: str | None = None
        self.ending_error: str | None = None
        self.log = ActionLog()
        self._inject: str | None = None
        self._running: str | None = None
        """The tool whose call is in progress (world methods refuse to nest in it)."""
        self._ended = False
        self._interrupt: BaseException | None = None
        self._task: tuple[EvalCase | None, str | None] = (None, None)
        self._undo: RowUndo | None = None
        self.reset()
        with self._guard.owned():
            # Every reset restores the same snapshot, so the audit layout never changes.
            self._audit_layout = audit_tables(self.conn)
            install_gate(self.conn, self._audit_layout, self._guard)
            self._undo = RowUndo(snapshot.connection, self.conn, foreign_keys=foreign_keys)
            self._undo.restored(self.conn)

    # -- episode lifecycle -------------------------------------------------------------
    @raises_noted
    def reset(
        self,
        *,
        seed: int = 0,
        run_id: str | None = None,
        case: EvalCase | None = None,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Restore the snapshot, start a fresh action log, re-seed, ``state_version = 0``.

        Usually by undoing the rows the audit history lists (no schema change, so no
        connection re-parses the schema); in full when that cannot be proven exact."""
        self._refuse_nesting("reset")
        _setup.check_reset(seed, run_id, case, log_path)  # before anything is undone
        with self._guard.owned():
            self._ended = True  # until the end: a reset that raised half-way is no episode
            self.conn.end_episode()  # tools' functions and collations: see _connection
            if self.conn.in_transaction:
                self.conn.execute(internal("ROLLBACK"))
            _setup.drop_temp_objects(self.conn)  # the connection's, so no restore resets it
            if self._undo is None or not self._undo.undo(self.conn):
                self.snapshot.restore_into(self.conn)
                if self._undo is not None:
                    self._undo.restored(self.conn)
            self.log.close()
            # Never the old log over the restored rows: should the file fail to open after
            # all, the ended episode left is an empty one, and save_episode seals that.
            self.log = ActionLog()
            self.seed, self.run_id, self.case = operator.index(seed), run_id, case
            self.step = self.state_version = 0
            self.ending = self.ending_error = None
            self._inject = None
            self.log = _setup.open_log(log_path)
            self._ended = False

    @property
    def ended(self) -> bool:
        """Whether the episode has ended (``end_episode``); calls are refused until reset."""
        return self._ended

    @property
    def task_id(self) -> str | None:
        """The case id of the current task, if the episode has one."""
        # Logged with every call; a case's identity is a content digest, so keep it.
        if self._task[0] is not self.case:
            case = self.case
            self._task = (case, None if case is None else str(case.identity["case_id"]))
        return self._task[1]

    def end_episode(self, ending: str | None = None, error: str | None = None) -> None:
        """Flush and fsync the action log, and optionally declare how the episode ended
        (one of ``ENDINGS``; a saved episode whose ending is not ``finished`` gets a
        coverage issue in its report trial). Until the next reset, further calls are
        rejected (``episode_ended``) and logged, changing nothing."""
        self._refuse_nesting("end_episode")
        if ending is not None:
            if ending not in ENDINGS:
                raise InputError(f"ending must be one of {ENDINGS}, got {ending!r}")
            self.ending, self.ending_error = ending, error
        self._ended = True
        self.log.close()

    def close(self) -> None:
        """End the episode and close the database (and its temporary directory)."""
        self.end_episode()
        self.conn.close()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()

    def __enter__(self) -> ToolWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tool calls --------------------------------------------------------------------
    @raises_noted
    def call(self, tool: Any, arguments: Any = _outcome.NOT_SENT) -> Event:
        """Run one tool call and log it; returns the event (never raises for bad input)."""
        if self._running is not None:
            self._refuse_nesting("call")
        self.step += 1
        started, ts = time.perf_counter_ns(), time.time()
        args, logged_args, problem = _outcome.arguments(arguments)
        spec = self.tools.get(tool := _outcome.plain_name(tool)) if isinstance(tool, str) else None
        ctx: ToolContext | None = None
        if self._ended:
            outcome = _outcome.rejected("episode_ended", _ENDED)
        elif spec is None:
            outcome = _outcome.rejected("unknown_tool", self._unknown_tool(tool))
        elif problem is not None or (problem := spec.check_arguments(args)) is not None:
            outcome = _outcome.rejected("invalid_arguments", f"{tool}: {problem}")
        else:
            ctx = ToolContext(
                self.conn, step=self.step, seed=self.seed, hidden=self.hidden, tracer=self.tracer
            )
            outcome = self._run(spec, ctx, args)
        event = {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "step": self.step,
            "tool": tool if type(tool) is str and tool.isascii() else _outcome.tool_label(tool),
            "arguments": logged_args,
            "state_version": self.state_version,
            "reads": [] if ctx is None else ctx.logged_reads(),
            "ts": ts,
            "duration_ns": time.perf_counter_ns() - started,
            **outcome,
        }
        self.log.append(event)
        if self._interrupt is not None:  # logged first: the record survives the interrupt
            interrupt, self._interrupt = self._interrupt, None
            raise interrupt
        return event

    def _refuse_nesting(self, method: str) -> None:
        if self._running is not None:
            raise ReentrantCall(
                f"world.{method}() was called while the tool {self._running!r} is running; "
                "a tool may not call tools (or reset or end the episode) through the world, "
                "since each call is one logged, atomic step: call the other tool's "
                "function directly with the same ctx"
            )

    def _unknown_tool(self, tool: Any) -> str:
        names = ", ".join(sorted(self.tools)) or "none"
        return f"there is no tool named {_outcome.safe_repr(tool)}; available tools: {names}"

    def _run(self, spec: Tool, ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        self._guard.refused, self._guard.escaped = None, False
        self._guard.internal = True  # its statements are onrecord's (the tool's: guarded)
        self._guard.claim_thread()  # before its own SAVEPOINT: the caller is the harness
        self.conn.execute(_SAVEPOINT)
        self._running, returned = spec.name, False
        try:
            if spec.writes:
                # INTERNAL: cached under a text no tool types (see _guard).
                self.conn.execute(
                    internal(f"UPDATE {CTX} SET step = ?, version = version + 1"), (self.step,)
                )
            changes = self.conn.total_changes
            with self.conn.tool_call(self.step if spec.writes else None):
                result = _sync_tools.returned(spec.function(ctx, **args))
            raise_noted(self._guard)  # a Ctrl-C SQLite swallowed: the tool's own (_ctrl_c)
            returned = True
            self._refuse_forbidden()
            if not spec.writes and self.conn.total_changes != changes:
                raise ForbiddenStatement(READ_ONLY)
            result = _sync_tools.portable_result(result)
            self.conn.execute(_RELEASE_CALL)  # commits: a deferred foreign key may refuse
        except BaseException as exc:
            ended = undo_call(self.conn) and returned  # after the tool returned: not its error
            unawaited = _unawaited.close_unawaited(exc)  # else they warn once exc is freed
            failed = self._forbidden_or(instead(self._guard, exc), ended)
            return self._failure(spec, failed, unawaited)
        finally:
            self._running, self._guard.internal = None, False
        if not spec.writes:
            return {"status": "ok", "result": result, "error": None}
        self.state_version += 1
        if self._inject == spec.name:
            self._inject = None
            return _outcome.failure(
                spec.name,
                "injected_failure",
                f"InjectedFailure: injected failure after {spec.name!r} committed its changes",
                result,
            )
        return {"status": "ok", "result": result, "error": None}

    def _failure(self, spec: Tool, exc: BaseException, unawaited: str) -> dict[str, Any]:
        if isinstance(exc, ToolRejected):
            return _outcome.rejected("rule_violation", _outcome.message(exc))
        if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: logged, re-raised
            self._interrupt = exc
            return _outcome.failure(spec.name, "interrupted", _outcome.describe(exc))
        if isinstance(exc, ForbiddenStatement):
            return _outcome.failure(spec.name, "forbidden_statement", _outcome.message(exc))
        return _outcome.failure(spec.name, "tool_error", _outcome.describe(exc) + unawaited)

    def _forbidden_or(self, exc: BaseException, ended: bool) -> BaseException:
        """A refused statement, or a transaction SQLite ended under the tool, is why the
        call failed, whatever the tool raised after (KeyboardInterrupt and the like still
        propagate)."""
        refused = self._guard.refused
        if refused is not None and isinstance(exc, Exception):
            return ForbiddenStatement(refused)
        if (ended or self._guard.escaped) and isinstance(exc, Exception):
            return TransactionEnded()
        return exc

    def _refuse_forbidden(self) -> None:
        """Fail a call that tried a forbidden statement, or whose transaction SQLite
        ended, even if the tool caught the error SQLite raised and went on."""
        if self._guard.refused is not None:
            raise ForbiddenStatement(self._guard.refused)
        if self._guard.escaped or not self.conn.in_transaction:
            raise TransactionEnded()

    def inject_failure(self, tool: str) -> None:
        """Test only: the next call of ``tool`` commits its writes, then fails."""
        _setup.check_injectable(tool, self.tools)
        self._inject = tool

    # -- evidence ----------------------------------------------------------------------
    def tool_schemas(self) -> list[dict[str, Any]]:
        """JSON schemas of every tool, for agents (sorted by name)."""
        return [self.tools[name].schema() for name in sorted(self.tools)]

    @raises_noted
    def diff(self) -> StateDiff:
        """End-state diff since reset, folded from the audit history."""
        return audit_diff(self.conn, layout=self._audit_layout)

    def scan_diff(self) -> StateDiff:
        """End-state diff since reset, by comparing every row with the snapshot."""
        pristine = self.snapshot.connection
        pristine.execute(internal("ATTACH DATABASE ? AS cur"), (readonly_uri(self.path),))
        try:
            return scan_diff(pristine, "main", "cur")
        finally:
            pristine.execute(internal("DETACH DATABASE cur"))

    @raises_noted
    def audit_history(self) -> list[AuditEvent]:
        """Every row change since reset, in order, with the step that made it."""
        return events_from_raw(read_audit(self.conn, layout=self._audit_layout))

    @raises_noted
    def history_and_diff(self) -> tuple[list[AuditEvent], StateDiff]:
        """``(audit_history(), diff())`` from one read of the history."""
        return history_and_diff(self.conn, layout=self._audit_layout)

    @raises_noted
    def state_digest(self) -> str:
        """Content digest of the current user tables (equals the snapshot's after reset)."""
        return state_digest(self.conn)

    def connect_readonly(self) -> sqlite3.Connection:
        """A new ``mode=ro`` connection to the world's file: writes through it fail."""
        return sqlite3.connect(readonly_uri(self.path), uri=True, check_same_thread=False)

    def observer(self, tables: Sequence[str] | None = None) -> ReadOnlyObserver:
        """A read-only export of the state (``tables``, default all but hidden ones)."""
        return ReadOnlyObserver(self.path, _setup.observed(self.snapshot, self.hidden, tables))

    def reject_call(self, tool: str, arguments: Any, kind: str, message: str) -> Event:
        """Log a call that was refused before reaching any tool (e.g. unparsable text)."""
        self.step += 1
        event = {
            "run_id": self.run_id,
            "task_id": self.task_id,
            "step": self.step,
            "tool": _outcome.tool_label(tool),
            "arguments": _outcome.arguments(arguments)[1],
            "state_version": self.state_version,
            "reads": [],
            "ts": time.time(),
            "duration_ns": 0,
            **_outcome.rejected(kind, message),
        }
        self.log.append(event)
        return event

    @raises_noted
    def table_rows(self, table: str) -> list[dict[str, Any]]:
        """All rows of a table as dicts, in key order (for tests and review)."""
        layout = next((t for t in self.snapshot.tables if t.name == table), None)
        if layout is None:
            names = [t.name for t in self.snapshot.tables]
            raise InputError(f"no table {table!r}; tables: {names}")
        return [layout.row_of(row) for row in table_rows(self.conn, layout)]  # RawText kept
