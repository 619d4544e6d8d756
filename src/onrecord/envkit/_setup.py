"""What a ``ToolWorld`` is built from, checked: its tools, its hidden tables, its file."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from onrecord.case import EvalCase
from onrecord.envkit._connection import WorldConnection
from onrecord.envkit._guard import StatementGuard
from onrecord.envkit._rule_names import (
    SchemaFacts,
    did_you_mean,
    read_facts,
    schema_facts,
    with_hints,
)
from onrecord.envkit._sql import INTERNAL_PREFIX, Table, internal, quote, readonly_uri
from onrecord.envkit.audit import CTX
from onrecord.envkit.log import ActionLog
from onrecord.envkit.snapshot import Snapshot, new_database, path_argument
from onrecord.envkit.tools import Tool
from onrecord.errors import InputError

__all__ = [
    "check_injectable",
    "check_reset",
    "declared_tools",
    "drop_temp_objects",
    "hidden_layouts",
    "observed",
    "open_log",
    "open_world",
    "world_path",
    "world_snapshot",
]


def declared_tools(tools: Iterable[Tool]) -> dict[str, Tool]:
    declared: dict[str, Tool] = {}
    for item in _tool_list(tools):
        if not isinstance(item, Tool):
            raise InputError(f"ToolWorld tools must be declared with @tool, got {item!r}")
        if item.name in declared:
            raise InputError(f"two tools are named {item.name!r}; tool names must be unique")
        declared[item.name] = item
    return declared


def _tool_list(tools: Any) -> list[Any]:
    """The tools as a list, refusing a lone tool and a dict (iterated, a dict gives
    its keys, which were then refused as "not declared with @tool")."""
    if isinstance(tools, Tool):
        raise InputError(
            f"ToolWorld tools must be a list of tools, got the tool {tools.name!r} alone: "
            f"write [{tools.name}]"
        )
    if isinstance(tools, Mapping):
        raise InputError(
            "ToolWorld tools must be a list of tools, got a dict (iterating it gives its "
            "keys): pass list(tools.values())"
        )
    try:
        return list(tools)
    except TypeError:
        raise InputError(
            f"ToolWorld tools must be a list of tools declared with @tool, got "
            f"{type(tools).__name__} {tools!r:.80}"
        ) from None


def check_injectable(tool: Any, tools: dict[str, Tool]) -> None:
    """Refuse an ``inject_failure`` target saying why: a misspelt name (listing the
    tools), or a read-only tool, whose calls commit nothing for the failure to follow."""
    declared = type(tool) is str and tool in tools
    if declared and tools[tool].writes:
        return
    why = (
        "is read-only (writes=False): its calls commit nothing for a failure to follow"
        if declared
        else "is not a tool of this world"
    )
    writers = sorted(name for name, spec in tools.items() if spec.writes)
    raise InputError(
        f"inject_failure needs the name of a write tool: {tool!r} {why}; its write "
        f"tools: {writers or 'none (declare one with @tool(writes=True))'}"
    )


def hidden_layouts(snapshot: Snapshot, hidden: Sequence[str]) -> dict[str, Table]:
    names = _hidden_names(hidden)
    layouts = {table.name: table for table in snapshot.tables}
    unknown = [name for name in names if name not in layouts]
    if unknown:
        facts = read_facts(lambda: schema_facts(snapshot.connection))
        raise InputError(
            with_hints(
                f"hidden lists tables {unknown} that the snapshot {snapshot.name!r} does "
                f"not have; it has {sorted(layouts)}",
                [_hidden_hint(name, layouts, facts) for name in unknown],
            )
        )
    return {name: layouts[name] for name in names}


def observed(
    snapshot: Snapshot, hidden: Collection[str], tables: Sequence[str] | None
) -> list[Table]:
    """The layouts ``world.observer(tables)`` exports: ``tables``, or all but hidden ones."""
    layouts = {table.name: table for table in snapshot.tables}
    names = [name for name in layouts if name not in hidden] if tables is None else list(tables)
    unknown = sorted(set(names) - set(layouts))
    if unknown:
        raise InputError(f"observer tables {unknown} do not exist; tables: {sorted(layouts)}")
    return [layouts[name] for name in names]


def _hidden_names(hidden: Any) -> list[str]:
    """The table names of ``hidden``, refusing a bare string (iterated, it would name
    one table per letter) and an entry that is not a name."""
    if isinstance(hidden, str | bytes):
        raise InputError(
            f"ToolWorld hidden must be a list of table names, got the string {hidden!r}: "
            f"write hidden=[{hidden!r}]"
        )
    try:
        names = list(hidden)
    except TypeError:
        raise InputError(
            f"ToolWorld hidden must be a list of table names, got {type(hidden).__name__} "
            f"{hidden!r:.80}"
        ) from None
    for index, name in enumerate(names):
        if type(name) is not str:
            raise InputError(
                f"ToolWorld hidden[{index}] is {type(name).__name__} {name!r:.80}, not a "
                "table name: list the hidden tables by name, as strings"
            )
    return names


def _hidden_hint(name: str, layouts: Collection[str], facts: SchemaFacts | None) -> str:
    """What a name ``hidden`` lists is instead: a view (hide the tables it reads), or a
    misspelt table."""
    if facts is not None and name in facts.views:
        read = list(facts.views[name])
        tables = f"the tables it reads: {read}" if read else "the tables it reads"
        # A tool's read through a view is logged as a read of the tables under it.
        return f"{name!r} is a view, and only tables can be hidden: hide {tables}"
    return did_you_mean(name, layouts)


def world_snapshot(snapshot: Any) -> Snapshot:
    if not isinstance(snapshot, Snapshot):
        raise InputError(
            "ToolWorld snapshot must be a Snapshot (Snapshot.build or Snapshot.from_file), "
            f"got {type(snapshot).__name__} {snapshot!r:.80}"
        )
    return snapshot


def world_path(snapshot: Snapshot, path: Any, overwrite: Any) -> Path:
    """The world's file, refused when writing it would destroy something: each reset
    rebuilds it from the snapshot. A file a world left behind is no loss, so it is
    reused (a script run twice with the same path), whatever ``overwrite`` says."""
    target = path_argument(path, "ToolWorld path")
    scratch = overwrite is False and _left_by_a_world(target)
    return new_database(
        target, "ToolWorld path", overwrite=True if scratch else overwrite, source=snapshot.source
    )


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _left_by_a_world(path: Path) -> bool:
    """Whether ``path`` is a world's file: in WAL mode (header bytes 18-19, which no saved
    snapshot or episode database is) and holding onrecord's audit (no database of yours
    does). The world writes it with ``synchronous = OFF``: it was never a record."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:  # missing, a directory, unreadable: new_database says which
        return False
    if header[:16] != _SQLITE_MAGIC or header[18:20] != b"\x02\x02":
        return False
    try:
        conn = sqlite3.connect(readonly_uri(path), uri=True)
        try:
            found = conn.execute(
                internal("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?"), (CTX,)
            )
            return found.fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def open_world(path: Path, guard: StatementGuard, *, foreign_keys: bool = False) -> WorldConnection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, factory=WorldConnection
        )
    except (OSError, sqlite3.Error) as exc:
        raise _unopenable(path, exc) from exc
    try:
        _configure(conn, foreign_keys)
    except sqlite3.Error as exc:  # e.g. "file is not a database"
        conn.close()
        raise _unopenable(path, exc) from exc
    conn.set_authorizer(guard)
    conn.guard = guard
    return conn


def _unopenable(path: Path, exc: BaseException) -> InputError:
    return InputError(
        f"ToolWorld path {str(path)!r} cannot be opened as a SQLite database ({exc}); pass "
        "the path of a database file in a writable directory"
    )


def _configure(conn: sqlite3.Connection, foreign_keys: bool) -> None:
    # WAL: readers never block the writer and never see a half-restored state.
    conn.execute(internal("PRAGMA journal_mode = WAL"))
    # The file is rebuilt from the snapshot at every reset, so fsyncs buy nothing.
    conn.execute(internal("PRAGMA synchronous = OFF"))
    # REPLACE conflicts must fire DELETE triggers, or the audit would miss rows.
    conn.execute(internal("PRAGMA recursive_triggers = ON"))
    # SQLite enforces REFERENCES (and runs ON DELETE CASCADE) only when asked, per
    # connection; cascaded changes fire the audit's triggers like any other.
    conn.execute(internal(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}"))


def drop_temp_objects(conn: sqlite3.Connection) -> None:
    """Drop what tools created in the connection's TEMP schema. It is the connection's,
    not the file's, so neither a page copy nor an undo resets it: a TEMP table would
    carry one episode's scratch rows into the next, and a TEMP trigger on a user table
    would fire in later episodes, and during the undo itself (writing rows the reset
    then misses). onrecord's own (``_call_guard``'s triggers) stay."""
    objects = conn.execute(
        internal(
            "SELECT type, name FROM temp.sqlite_schema WHERE type IN ('trigger', 'view', 'table') "
            "AND substr(name, 1, ?) != ?"
        ),
        (len(INTERNAL_PREFIX), INTERNAL_PREFIX),
    ).fetchall()
    # Triggers and views first: they may name the tables dropped after them.
    for kind, name in sorted(objects, key=lambda item: item[0] == "table"):
        conn.execute(internal(f"DROP {kind.upper()} IF EXISTS temp.{quote(name)}"))


def check_reset(seed: Any, run_id: Any, case: Any, log_path: Any) -> None:
    """Refuse reset arguments the manifest could not record faithfully (a seed of 1.7
    would silently become 1, a run id of 5 would not be a run id), and a log file that
    cannot be written, all before the reset undoes anything."""
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise InputError(f"reset seed must be an integer, got {seed!r}")
    if run_id is not None and not isinstance(run_id, str):
        raise InputError(f"reset run_id must be a string or None, got {run_id!r}")
    if case is not None and not isinstance(case, EvalCase):
        raise InputError(f"reset case must be an EvalCase or None, got {type(case).__name__}")
    if log_path is not None:
        _probe_log(path_argument(log_path, "reset log_path"))


def _probe_log(path: Path) -> None:
    """Open the log file as the reset will, but to append: it is not emptied yet (it may
    be the current episode's log, and the reset may still be refused)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise _unwritable_log(path, exc) from exc


def open_log(log_path: str | os.PathLike[str] | None) -> ActionLog:
    """The new episode's action log; an ``InputError`` naming ``log_path`` if the file
    cannot be opened after all (it passed :func:`check_reset`)."""
    try:
        return ActionLog(log_path)
    except OSError as exc:
        raise _unwritable_log(Path(str(log_path)), exc) from exc


def _unwritable_log(path: Path, exc: OSError) -> InputError:
    return InputError(
        f"reset log_path {str(path)!r} cannot be opened for writing "
        f"({exc.strerror or exc}); pass the path of a file in a writable directory"
    )
