"""Tool-world episodes (``onrecord.envkit``) inside a run.

The runner does not save an episode directory per episode (a database backup and five
fsyncs each); it keeps the world's evidence in the run record: the action log, the audit
history, the row diff, the task, the start snapshot's digest and a digest of every table
the episode changed, as it ended. Checks grade the live end state right after the
episode. Re-grading rebuilds the end state from saved evidence alone: the task's start
snapshot (its digest must equal the recorded one) plus the recorded row diff (each
changed table must then hash to its recorded digest). Hashing only the changed tables
costs a fraction of a whole-database digest; unchanged tables are the snapshot's.

JSON has no infinity (orjson writes one as ``null``): in the record's audit history, row
diff and table digests an infinite REAL is ``{"$real": "Infinity"}`` (or
``"-Infinity"``), as in envkit's saved episodes and state digest, so a table holding an
infinity never passes for one holding NULL. Checks see the float, live and re-graded.
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import weakref
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

from onrecord._canonical import canonical_bytes, content_digest
from onrecord.envkit import Snapshot, ToolEpisode, ToolWorld
from onrecord.envkit._sql import (
    encode_reals,
    load_reals,
    native_value,
    portable_value,
    quote,
    rowid_alias,
    save_reals,
    sql_param,
)
from onrecord.envkit._text import lossless
from onrecord.envkit.audit import audit_tables
from onrecord.envkit.diff import StateDiff
from onrecord.envkit.snapshot import readonly_uri
from onrecord.errors import ConsistencyError, PortabilityError, SchemaError

__all__ = [
    "TOOL_EPISODE_SCHEMA",
    "LiveToolEpisode",
    "close_reader",
    "episode_from_evidence",
    "rebuild_episode",
    "table_digests",
    "table_layouts",
    "tool_evidence",
]

TOOL_EPISODE_SCHEMA = "onrecord.run.tool-episode/v1"
_INFINITIES = frozenset((math.inf, -math.inf))


def table_layouts(world: ToolWorld) -> dict[str, dict[str, list[str]]]:
    """Columns and key of every audited table (fixed for a world: cache it)."""
    return {
        table.name: {"columns": list(table.columns), "key": list(table.key)}
        for table, _ in audit_tables(world.conn)
    }


def table_digests(
    conn: sqlite3.Connection,
    names: Iterable[str],
    layouts: Mapping[str, Mapping[str, Sequence[str]]],
) -> dict[str, str]:
    """sha256 of each named table's rows (canonical JSON, in key order; BLOBs as
    ``{"$blob": hex}``, TEXT that is not UTF-8 as ``{"$text": hex}``, infinite REALs as
    ``{"$real": "Infinity"}`` / ``"-Infinity"``)."""
    digests = {}
    for name in sorted(names):
        layout = layouts[name]
        columns = ", ".join(map(quote, layout["columns"]))
        order = ", ".join(map(quote, layout["key"]))
        rows = _rows(conn, f"SELECT {columns} FROM {quote(name)} ORDER BY {order}")
        try:
            data = canonical_bytes(rows)
        except PortabilityError:  # a BLOB or RawText somewhere
            data = _encoded_rows(rows)
        else:  # orjson writes an infinity as null: look only when a null was written
            if b"null" in data and not _INFINITIES.isdisjoint(chain.from_iterable(rows)):
                data = _encoded_rows(rows)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def _rows(conn: sqlite3.Connection, sql: str) -> list[Any]:
    """The rows ``sql`` selects; TEXT that is not UTF-8 as ``RawText`` (``lossless``)."""
    return lossless(conn, lambda: conn.execute(sql).fetchall())


def _encoded_rows(rows: list[Any]) -> bytes:
    return canonical_bytes(encode_reals([[portable_value(v) for v in row] for row in rows]))


def tool_evidence(
    world: ToolWorld,
    *,
    ending: str,
    agent_error: str | None,
    tools: Sequence[Mapping[str, Any]],
    layouts: Mapping[str, Mapping[str, Sequence[str]]],
) -> dict[str, Any]:
    """The evidence record of the world's current episode (call before the next reset)."""
    conn = world.conn
    events, diff = save_reals(*world.history_and_diff())  # infinities as {"$real": ...}
    record: dict[str, Any] = {
        "schema": TOOL_EPISODE_SCHEMA,
        "run_id": world.run_id,
        "task_id": world.task_id,
        "seed": world.seed,
        "snapshot": world.snapshot.identity(),
        "changed_tables": table_digests(conn, diff, layouts),
        "state_version": world.state_version,
        # The tool schemas are the same in every episode of a world: the record keeps
        # their digest; re-grading gets them from the environment and checks the digest.
        "steps": world.step,
        "tools_digest": content_digest({"tools": list(tools)}),
        "writes": sorted(name for name, spec in world.tools.items() if spec.writes),
        "hidden": sorted(world.hidden),
        "ending": ending,
        "agent_error": agent_error,
        "audit": {
            "tables": {
                name: {key: list(value) for key, value in layout.items()}
                for name, layout in layouts.items()
            },
            "events": events,
        },
        "diff": diff,
        "task": None if world.case is None else world.case.to_dict(),
    }
    record["digest"] = content_digest(record)
    return record


def episode_from_evidence(
    evidence: Mapping[str, Any],
    actions: Sequence[Mapping[str, Any]],
    database: Path,
    tools: Sequence[Mapping[str, Any]],
    *,
    shared_reader: bool = True,
) -> ToolEpisode:
    """The ``ToolEpisode`` checks grade: a record made by ``tool_evidence``, its
    action-log events, the world's tool schemas (which must match the recorded digest)
    and the end-state database file. ``shared_reader``: reuse one read-only connection
    per database file (the live world's; see ``LiveToolEpisode``). Infinite REALs saved
    as ``{"$real": ...}`` reach the checks as floats, as the live world held them."""
    if evidence.get("schema") != TOOL_EPISODE_SCHEMA:
        raise SchemaError(
            f"expected a {TOOL_EPISODE_SCHEMA!r} record, got {evidence.get('schema')!r}"
        )
    if content_digest({"tools": list(tools)}) != evidence["tools_digest"]:
        # Usually the user's own module changed (a tool added, renamed, or its
        # docstring or arguments edited), not onrecord: say so, or the fix is a guess.
        raise ConsistencyError(
            f"the tools of task {evidence['task_id']!r} (their names, docstrings and "
            "argument schemas, as the agent saw them) differ from those the episode was "
            "recorded with: regrade with the environment module as it was when the run "
            "was recorded (undo tools added, removed or edited since), or run the agent "
            "again into a new run"
        )
    kind = LiveToolEpisode if shared_reader else ToolEpisode
    return kind.from_parts(
        # The kit's trial reads "ending_error" for its coverage issue: without it an
        # agent's exception is reported as a bare "ended with agent_error".
        {**evidence, "tools": list(tools), "ending_error": evidence.get("agent_error")},
        actions=actions,
        audit_tables=evidence["audit"]["tables"],
        audit_events=_loaded(evidence["audit"]["events"]),
        diff=_loaded(evidence["diff"]),
        task=evidence["task"],
        database=database,
    )


def _loaded(part: Any) -> Any:
    """A saved audit history or diff with its infinite REALs decoded (``load_reals``);
    as it is when it holds none (the common case: one serialization in C decides)."""
    return load_reals(part) if b'"$real"' in canonical_bytes(part) else part


class LiveToolEpisode(ToolEpisode):
    """A ``ToolEpisode`` of a live world's end state, graded right after the episode."""

    def connect(self) -> sqlite3.Connection:
        """A read-only connection to the end-state database (one per database file and
        process, reused: opening one and parsing the schema costs more than most checks)."""
        if self.database is None:
            return super().connect()  # raises, saying why there is no end state
        path = str(self.database)
        if path not in _READERS:
            _READERS[path] = sqlite3.connect(
                readonly_uri(path), uri=True, factory=_SharedReader, check_same_thread=False
            )
        return _READERS[path]


class _SharedReader(sqlite3.Connection):
    """A read-only connection that checks may use as a context manager or "close": it
    stays open for the next episode on the same world."""

    def close(self) -> None:
        """Kept open on purpose (see ``LiveToolEpisode.connect``)."""


_READERS: dict[str, sqlite3.Connection] = {}


def close_reader(path: str | os.PathLike[str]) -> None:
    """Close the shared reader of the database at ``path``, if one is open: its world is
    closing, and a reader kept open would hold the deleted file (three descriptors)."""
    reader = _READERS.pop(str(path), None)
    if reader is not None:
        sqlite3.Connection.close(reader)


def rebuild_episode(
    evidence: Mapping[str, Any],
    actions: Sequence[Mapping[str, Any]],
    snapshot: Snapshot,
    tools: Sequence[Mapping[str, Any]],
    workdir: Path,
) -> ToolEpisode:
    """The end state from the start snapshot plus the recorded diff, verified by digest."""
    if snapshot.identity() != evidence["snapshot"]:
        raise ConsistencyError(
            f"the start snapshot of task {evidence['task_id']!r} is now "
            f"{snapshot.identity()}, but the episode recorded {evidence['snapshot']}: the "
            "snapshot (its schema, rows or populate function) changed since; regrade with "
            "the environment module and the onrecord version that ran the episode"
        )
    # One file, rebuilt for each episode: re-grading grades an episode before loading the
    # next, so a run of any length needs the disk space of one database.
    path = workdir / "rebuilt.sqlite"
    path.unlink(missing_ok=True)
    path.write_bytes(_triggerless_image(snapshot))  # a scratch copy: nothing to sync
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        stale = _apply_diff(conn, evidence["diff"], evidence["audit"]["tables"])
        digests = table_digests(conn, evidence["diff"], evidence["audit"]["tables"])
    finally:
        conn.close()
    if stale:
        raise ConsistencyError(
            f"the recorded diff of {evidence['task_id']!r} says rows of tables {stale} "
            "were, before the episode changed or deleted them, what the start snapshot "
            "does not hold: the diff was changed after recording"
        )
    wrong = sorted(
        name for name, digest in digests.items() if evidence["changed_tables"].get(name) != digest
    )
    if wrong or set(digests) != set(evidence["changed_tables"]):
        raise ConsistencyError(
            f"the end state rebuilt from the recorded diff of "
            f"{evidence['task_id']!r} hashes differently from the recorded "
            f"end state (tables {wrong or sorted(evidence['changed_tables'])})"
            ": the diff or the digests were changed after recording"
        )
    return episode_from_evidence(evidence, actions, path, tools, shared_reader=False)


# The start snapshot being re-graded from, as a database file without its triggers,
# which would re-derive rows the diff already holds (and write audit rows). Made once
# per snapshot: dropping the ~150 triggers in every rebuilt episode (each a schema
# change) and writing the snapshot with a synced backup were half of re-grading's time
# per remittance episode. One is held at a time (a regrade goes task by task, in the
# run's order), so a run of many large snapshots does not hold a copy of each.
_TRIGGERLESS: weakref.WeakKeyDictionary[Snapshot, bytes] = weakref.WeakKeyDictionary()


def _triggerless_image(snapshot: Snapshot) -> bytes:
    """``snapshot`` as the bytes of a SQLite file, its triggers dropped."""
    image = _TRIGGERLESS.get(snapshot)
    if image is None:
        _TRIGGERLESS.clear()
        image = _TRIGGERLESS[snapshot] = _without_triggers(snapshot)
    return image


def _without_triggers(snapshot: Snapshot) -> bytes:
    memory = sqlite3.connect(":memory:", isolation_level=None)
    try:
        snapshot.restore_into(memory)
        memory.execute("BEGIN")
        triggers = memory.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        for (name,) in triggers.fetchall():
            memory.execute(f"DROP TRIGGER {quote(name)}")
        memory.execute("COMMIT")
        return memory.serialize()
    finally:
        memory.close()


def _apply_diff(
    conn: sqlite3.Connection, diff: StateDiff, layouts: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Apply ``diff`` to the snapshot ``conn`` holds; the tables whose recorded rows
    before the episode (deleted, and changed ones' ``before``) are not the snapshot's."""
    # A scratch copy, rebuilt for each episode: nothing to make durable.
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    stale = [
        table
        for table, change in diff.items()
        if not _apply_table(conn, table, change, layouts[table])
    ]
    conn.execute("COMMIT")
    return stale


def _apply_table(
    conn: sqlite3.Connection, table: str, change: Mapping[str, Any], layout: Mapping[str, Any]
) -> bool:
    """Apply one table's part of the diff; whether the rows it records as they were
    before the episode (deleted rows, changed rows' ``before`` and ``key``) are the
    snapshot's: the digests cover only the end state, so an edited ``before`` (which
    rules such as ``changed(where=...)`` grade) would otherwise pass unseen.

    Changed rows are deleted and inserted again, not updated: the end state satisfied
    every UNIQUE constraint, but a value that moved between rows (two rows swapping a
    rank) fails one halfway through UPDATEs in any order. Deleting all first leaves a
    subset of the end state at every step. A rowid table's changed row keeps its rowid
    (the order a scan without ORDER BY returns rows in, as in the live world)."""
    columns, key = list(layout["columns"]), list(layout["key"])
    listed = conn.execute("SELECT wr FROM pragma_table_list WHERE name = ?", (table,)).fetchone()
    rowid = None if listed is None or listed[0] else rowid_alias(columns)
    select = f"SELECT {', '.join(map(quote, [*columns, *([rowid] if rowid else [])]))} FROM "
    same, inserts = True, []
    earlier = [(row, None) for row in change["deleted"]]
    earlier += [(item["before"], item) for item in change["changed"]]
    for before, item in earlier:
        keys = [before[column] for column in key]
        where, params = _terms(key, keys, " AND ")
        sql = f"{select}{quote(table)} WHERE {where}"
        found = lossless(conn, partial(_one, conn, sql, params))
        same = same and found is not None and _same_row(found[: len(columns)], before, columns)
        if item is not None:
            after, recorded = item["after"], keys if len(key) > 1 else keys[0]
            same = same and item["key"] == recorded == _key_of(after, key)
            inserts.append((after, found[-1] if found is not None and rowid else None))
        conn.execute(f"DELETE FROM {quote(table)} WHERE {where}", params)
    inserts += [(row, None) for row in change["created"]]
    for row, old_rowid in inserts:
        names = [*row, *([rowid] if old_rowid is not None else [])]
        bound = [sql_param(native_value(value)) for value in row.values()]
        marks = ", ".join([*(mark for mark, _ in bound), *(["?"] if old_rowid is not None else [])])
        conn.execute(
            f"INSERT INTO {quote(table)} ({', '.join(map(quote, names))}) VALUES ({marks})",
            [*(param for _, param in bound), *([old_rowid] if old_rowid is not None else [])],
        )
    return same


def _one(conn: sqlite3.Connection, sql: str, params: list[Any]) -> Any:
    return conn.execute(sql, params).fetchone()


def _same_row(found: Sequence[Any], recorded: Mapping[str, Any], columns: list[str]) -> bool:
    """Whether the snapshot's row is the recorded one, compared as the diff encodes values
    (BLOBs, TEXT not UTF-8 and infinities as ``{"$...": ...}``), as JSON: 1 and 1.0 differ."""
    return _encoded_rows([list(found)]) == canonical_bytes([[recorded[c] for c in columns]])


def _key_of(row: Mapping[str, Any], key: list[str]) -> Any:
    return [row[column] for column in key] if len(key) > 1 else row[key[0]]


def _terms(columns: Sequence[str], values: Sequence[Any], joiner: str) -> tuple[str, list[Any]]:
    """``"column" = ?`` for each column, joined, and the parameters: saved values bound
    exactly as they were stored (``sql_param``: TEXT that is not UTF-8 stays TEXT)."""
    terms, params = [], []
    for column, value in zip(columns, values, strict=True):
        mark, param = sql_param(native_value(value))
        terms.append(f"{quote(column)} = {mark}")
        params.append(param)
    return joiner.join(terms), params
