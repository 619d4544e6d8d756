"""The world's connection: what lives on it, not in the file, stays within its scope.

A reset restores the world's file; the connection's own state (limits, SQL functions,
collations, callbacks, row and text factories) no restore touches, and neither the
authorizer nor a trigger sees a tool change it through ``ctx.connection``. Left alone, a
tool could change what every later episode reads (a replaced ``like`` or ``NOCASE``),
crash the harness's own reads (``setlimit``), watch and slow its SQL (a trace callback
or progress handler) or falsify its evidence (a row factory the digest reads through).
So each is either scoped or refused:

- scoped to the call: ``setlimit``, ``set_trace_callback``, ``set_progress_handler``,
  ``row_factory`` and ``text_factory`` are put back (the world owner's, or the world's
  own values) as soon as the tool returns, before the world's own statements run,
  however they were changed (the base class's methods too: see ``_end_call``);
- scoped to the episode: a function, aggregate, window function or collation a tool adds
  under a new name stays for later calls of the episode (like a TEMP table) and is
  removed at reset;
- refused while a tool runs (``forbidden_statement``): replacing a function or collation
  SQLite or the world owner defined (``like``, ``NOCASE``, ``BINARY``...: the harness's
  own SQL relies on them), ``isolation_level`` (the world's transactions are onrecord's),
  ``deserialize`` (swaps the database without triggers), incremental BLOB writes
  (``blobopen``: no trigger fires, so the audit would miss the change),
  ``set_authorizer`` (would lift the guard), ``close``.

A thread a tool leaves running when its call returns (``StatementGuard.strays``) may
only read: anything above, and any statement that writes, is refused from it at any
time, so it cannot change the world between calls, during a reset or in a later episode.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, SupportsIndex

from onrecord.envkit._copies import note_copy, refuse_stuck_backup
from onrecord.envkit._ctrl_c import noting, noting_class
from onrecord.envkit._guard import StatementGuard
from onrecord.envkit._registrations import function_names, unregister
from onrecord.envkit._sql import INTERNAL_PREFIX, internal
from onrecord.envkit._sql_reads import TrackedCursor, temp_version, tracked
from onrecord.errors import OnrecordError

__all__ = ["WorldConnection"]

_Added = tuple[str, str, int]
"""A registration a tool made: (method, name in lower case, argument count)."""
_Progress = tuple[Callable[[], int | None] | None, int]
_BASE = sqlite3.Connection
_ROW_FACTORY: Any = _BASE.__dict__["row_factory"]
_TEXT_FACTORY: Any = _BASE.__dict__["text_factory"]
_ISOLATION: Any = _BASE.__dict__["isolation_level"]
_STRAY = (
    "a thread a tool started may not change the world's connection after its call "
    "returned; join the thread before the tool returns"
)
_SHADOWS = internal("SELECT tbl, shadow FROM main._onrecord_audit_tables")
_LIMITS = tuple(getattr(sqlite3, name) for name in dir(sqlite3) if name.startswith("SQLITE_LIMIT_"))
_EXTENSION = "an extension is native code that outlives the call and the audit"
_BUILT_IN = "SQLite or the world owner defines it, and the world's own SQL relies on it"


class WorldConnection(sqlite3.Connection):
    """The world's connection (see the module docstring)."""

    guard: StatementGuard | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Names that exist before any tool runs: SQLite's, then the owner's (added as the
        # owner registers them outside calls). Compared in lower case, as SQLite does.
        self._functions = function_names(self)
        self._collations = {
            row[1].lower() for row in self.execute(internal("PRAGMA collation_list"))
        }
        self._added: dict[_Added, None] = {}
        """What tools registered this episode: (method, name, narg), removed at reset."""
        self._limits = {category: self.getlimit(category) for category in _LIMITS}
        """The owner's limits (the world's as created, or as the owner set them)."""
        self._owner_trace: Callable[[str], object] | None = None
        self._owner_progress: _Progress = (None, 1)
        # The trace callback and progress handler the running tool set (``quiet``).
        self._call_callbacks: tuple[Callable[[str], object] | None, _Progress] = (None, (None, 1))

    # -- refusals ----------------------------------------------------------------------
    def _refuse(self, what: str, why: str) -> None:
        guard = self.guard
        if guard is None:
            return
        self._refuse_stray(what)  # no call of its own to fail: only refused
        if guard.active:
            reason = f"{what}: {why}"
            if guard.refused is None:
                guard.refused = reason
            raise sqlite3.DatabaseError(f"not authorized: {reason}")

    def _refuse_stray(self, what: str) -> None:
        """Refuse ``what`` to a thread a tool left running (a call may do it)."""
        guard = self.guard
        if guard is not None and guard.strays and guard.is_stray():
            raise sqlite3.DatabaseError(f"not authorized: {what}: {_STRAY}")

    def _in_tool(self) -> bool:
        """Whether a tool's code is what is running now (its call, or a thread it left)."""
        guard = self.guard
        return guard is not None and (guard.active or (bool(guard.strays) and guard.is_stray()))

    def blobopen(
        self, table: str, column: str, row: int, /, *, readonly: bool = False, name: str = "main"
    ) -> sqlite3.Blob:
        if not readonly:
            self._refuse(
                f"blobopen({table!r}, {column!r}) for writing",
                "incremental BLOB writes fire no trigger, so the audit would not see the "
                "change; open it with readonly=True, or write the value with UPDATE",
            )
        guard = self.guard
        if guard is not None and str(name).lower() == "main":  # not a TEMP table's BLOB
            hidden = guard.hidden_named(str(table))
            guard.note_hidden([hidden] if hidden is not None else [])
        return super().blobopen(table, column, row, readonly=readonly, name=name)

    # A copy of main holds every hidden table's rows, read past the authorizer; a write
    # call's backup would never end (``_copies``).
    def serialize(self, *, name: str = "main") -> bytes:
        note_copy(self.guard, name)
        return super().serialize(name=name)

    def backup(self, target: sqlite3.Connection, **options: Any) -> None:
        refuse_stuck_backup(self, self.guard, options.get("name", "main"))
        note_copy(self.guard, options.get("name", "main"))
        super().backup(target, **options)

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        # Refused by name: its first statement would be Python's own COMMIT, which the
        # guard refused as "COMMIT", a statement the tool never wrote. (With no open
        # transaction, SQLite ended the call's already; the gate refuses its writes.)
        if self.in_transaction:
            self._refuse(
                "executescript",
                "Python's sqlite3 commits the open transaction before running a script, and "
                "each tool call is one transaction onrecord commits when the tool returns; "
                "run the script's statements one by one with ctx.execute (or "
                "connection.execute)",
            )
        return super().executescript(sql_script)

    # The world's cursors tell the guard what they run (``_sql_reads``). sqlite3's own
    # Connection.execute makes a plain cursor without calling ``cursor()``. (Made by
    # ``cursor()``, not ``TrackedCursor(self)``: only ``cursor()`` has the connection
    # drop its weak references to collected cursors, which otherwise grew every call.)
    def cursor(self, factory: Any = sqlite3.Cursor) -> Any:
        usable = isinstance(factory, type) and issubclass(factory, sqlite3.Cursor)
        return super().cursor(tracked(factory) if usable else factory)

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().cursor(TrackedCursor).execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        return super().cursor(TrackedCursor).executemany(sql, parameters)

    def set_authorizer(self, authorizer_callback: Callable[..., int] | None) -> None:
        self._refuse("set_authorizer", "the world's authorizer is onrecord's guard")
        super().set_authorizer(authorizer_callback)

    def close(self) -> None:
        self._refuse("close", "the world's connection outlives every call")
        super().close()

    def deserialize(self, data: Any, /, *, name: str = "main") -> None:
        self._refuse(
            "deserialize", "it would replace the database without a trigger firing, unaudited"
        )
        super().deserialize(data, name=name)

    def enable_load_extension(self, enable: bool, /) -> None:
        self._refuse("enable_load_extension", _EXTENSION)
        super().enable_load_extension(enable)

    def load_extension(self, name: str, /) -> None:
        self._refuse("load_extension", _EXTENSION)
        super().load_extension(name)

    def interrupt(self) -> None:
        self._refuse_stray("interrupt")  # would abort the world's own statements
        super().interrupt()

    @property  # type: ignore[override]
    def isolation_level(self) -> str | None:
        value: str | None = _ISOLATION.__get__(self)
        return value

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        self._refuse(
            "isolation_level",
            "the world's connection runs each call in onrecord's savepoint and must stay "
            "in autocommit mode between calls",
        )
        _ISOLATION.__set__(self, value)

    # -- functions and collations: a tool's own names last for its episode -------------
    def create_function(
        self, name: str, narg: int, func: Callable[..., Any] | None, *, deterministic: bool = False
    ) -> None:
        added = self._register("create_function", name, narg)
        if not str(name).lower().startswith(INTERNAL_PREFIX):  # ours note it themselves
            func = noting(self, func)
        super().create_function(name, narg, func, deterministic=deterministic)
        self._added.update(added)

    def create_aggregate(self, name: str, n_arg: int, aggregate_class: Any) -> None:
        added = self._register("create_aggregate", name, n_arg)
        super().create_aggregate(name, n_arg, noting_class(self, aggregate_class))
        self._added.update(added)

    def create_window_function(self, name: str, num_params: int, aggregate_class: Any, /) -> None:
        added = self._register("create_window_function", name, num_params)
        super().create_window_function(name, num_params, noting_class(self, aggregate_class))
        self._added.update(added)

    def create_collation(
        self, name: str, callback: Callable[[str, str], SupportsIndex] | None, /
    ) -> None:
        added = self._register("create_collation", name, -1)
        super().create_collation(name, callback)
        self._added.update(added)

    def _register(self, method: str, name: str, narg: int) -> dict[_Added, None]:
        """Refuse what a tool may not register; what to remove at reset once registered."""
        self._refuse_stray(f"{method}({name!r})")
        key = name.lower() if isinstance(name, str) else ""
        if key.startswith(INTERNAL_PREFIX):
            self._refuse(f"{method}({name!r})", "that name is onrecord's own")
        names = self._collations if method == "create_collation" else self._functions
        if not self._in_tool():
            names.add(key)  # the owner's: no tool may replace it, no reset removes it
            for added in [item for item in self._added if item[1] == key]:
                del self._added[added]
            return {}
        if key in names:
            self._refuse(f"{method}({name!r})", f"{_BUILT_IN}; pick another name")
        return {(method, key, narg): None}

    # -- settings a tool may change for its call ---------------------------------------
    def setlimit(self, category: int, limit: int, /) -> int:
        if self._in_tool():
            self._refuse_stray("setlimit")
            return super().setlimit(category, limit)
        previous = super().setlimit(category, limit)
        self._limits[category] = super().getlimit(category)  # SQLite caps it
        return previous

    def set_trace_callback(self, trace_callback: Callable[[str], object] | None) -> None:
        trace_callback = noting(self, trace_callback)
        if self._in_tool():
            self._refuse_stray("set_trace_callback")
            self._call_callbacks = (trace_callback, self._call_callbacks[1])
        else:
            self._owner_trace = trace_callback
        super().set_trace_callback(trace_callback)

    def set_progress_handler(
        self, progress_handler: Callable[[], int | None] | None, n: int
    ) -> None:
        progress_handler = noting(self, progress_handler)
        if self._in_tool():
            self._refuse_stray("set_progress_handler")
            self._call_callbacks = (self._call_callbacks[0], (progress_handler, n))
        else:
            self._owner_progress = (progress_handler, n)
        super().set_progress_handler(progress_handler, n)

    @property
    def row_factory(self) -> Any:
        return _ROW_FACTORY.__get__(self)

    @row_factory.setter
    def row_factory(self, value: Any) -> None:
        self._refuse_stray("row_factory")  # a call may, for itself
        _ROW_FACTORY.__set__(self, value)

    @property
    def text_factory(self) -> Any:
        return _TEXT_FACTORY.__get__(self)

    @text_factory.setter
    def text_factory(self, value: Any) -> None:
        self._refuse_stray("text_factory")
        _TEXT_FACTORY.__set__(self, value)

    @contextmanager
    def tool_call(self, step: int | None) -> Iterator[None]:
        """Run the tool's code under the guard; put back what it may change for its call
        alone as soon as it returns (before the world's own statements run)."""
        guard = self.guard
        assert guard is not None
        self._call_callbacks = (self._owner_trace, self._owner_progress)
        if guard.temp_version is None:  # once: what read_texts is known to match
            guard.temp_version = temp_version(self)
            if guard.hidden:
                guard.shadows = self._shadows(guard.hidden)
        if guard.stale:  # the owner prepared what a tool may not run: see _guard
            guard.stale = False
            guard.read_texts.clear()  # every statement is prepared, and noted, again
            # SQLite expires every prepared statement of the connection when an
            # authorizer is set (3.40: main.c): each is prepared again, under the guard,
            # when next run. The cache (by SQL text) is kept; only the plans are redone.
            _BASE.set_authorizer(self, guard)
        with guard.tool_call(step):
            try:
                yield
            finally:
                self._end_call()

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """onrecord's statements in a call with no callback of the tool's (``_sql_reads``)."""
        if self.guard is None or not self.guard.active:  # the owner's callbacks are set
            yield
            return
        _BASE.set_trace_callback(self, self._owner_trace)
        _BASE.set_progress_handler(self, *self._owner_progress)
        try:
            yield
        finally:
            trace, progress = self._call_callbacks
            _BASE.set_trace_callback(self, trace)
            _BASE.set_progress_handler(self, *progress)

    def _shadows(self, hidden: frozenset[str]) -> dict[str, str]:
        """The audit's shadow table of each hidden table, by shadow table."""
        cursor = self.cursor()
        cursor.row_factory = None  # whatever the owner set
        try:
            rows = cursor.execute(_SHADOWS).fetchall()
        except sqlite3.OperationalError:  # no audit installed: nothing to watch
            return {}
        return {str(row[1]): str(row[0]) for row in rows if row[0] in hidden}

    def _end_call(self) -> None:
        # Compared and set whatever the wrapper saw: a tool may call the base class
        # (sqlite3.Connection.setlimit(ctx.connection, ...)), which no override sees.
        # SQLite offers no getter for callbacks: they are set again (~0.3 us in all).
        for category, limit in self._limits.items():
            if super().getlimit(category) != limit:
                super().setlimit(category, limit)
        super().set_trace_callback(self._owner_trace)
        super().set_progress_handler(*self._owner_progress)
        if _ROW_FACTORY.__get__(self) is not None:
            _ROW_FACTORY.__set__(self, None)
        if _TEXT_FACTORY.__get__(self) is not str:
            _TEXT_FACTORY.__set__(self, str)

    def end_episode(self) -> None:
        """At reset: the resetting thread is the harness's; remove what tools registered."""
        if self.guard is not None:
            self.guard.claim_thread()
        self._end_call()
        for method, name, narg in list(self._added):
            try:
                unregister(self, method, name, narg)
            except sqlite3.Error:
                # SQLite refuses while any statement of the connection is still running,
                # whatever it reads (a cursor a tool kept unread, across calls): end them.
                self._end_statements()
                try:
                    unregister(self, method, name, narg)
                except sqlite3.Error as exc:
                    raise OnrecordError(
                        f"reset: cannot remove {name!r}, which a tool registered "
                        f"({method}): a statement of the world's connection is still "
                        f"running ({exc}); the next episode would see it"
                    ) from exc
            del self._added[(method, name, narg)]
        # Collations a tool registered through the base class, which the wrapper never
        # saw (~5 us a reset). Functions are not listed: PRAGMA function_list lists every
        # built-in too (~0.1 ms a reset), see docs/envkit.md.
        listed = self.execute(internal("SELECT name FROM pragma_collation_list")).fetchall()
        for (name,) in listed:
            if name.lower() not in self._collations:
                self._unregister_unseen(name)

    def _unregister_unseen(self, name: str) -> None:
        try:
            unregister(self, "create_collation", name, -1)
        except sqlite3.Error:
            self._end_statements()  # a kept cursor, as above
            unregister(self, "create_collation", name, -1)

    def _end_statements(self) -> None:
        """Close every cursor of this connection (one a tool kept unread): the tool's
        state from an ending episode, like its TEMP tables (only when a registration
        cannot be removed otherwise)."""
        gc.collect()
        for thing in gc.get_objects():
            if isinstance(thing, sqlite3.Cursor) and thing.connection is self:
                thing.close()
