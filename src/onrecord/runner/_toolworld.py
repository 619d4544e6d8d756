"""Tool-world episodes (``onrecord.envkit``) inside a run.

The runner does not save an episode directory per episode (a database backup and five
fsyncs each); it keeps the world's evidence in the run record: the action log, the audit
history, the row diff, the task and the start and end state digests. Checks grade the
live end state right after the episode. Re-grading rebuilds the end state from saved
evidence alone: the task's start snapshot (its digest must equal the recorded one) plus
the recorded row diff (the result's digest must equal the recorded end-state digest).
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onrecord._canonical import content_digest
from onrecord.envkit import Snapshot, ToolEpisode, ToolWorld
from onrecord.envkit._sql import native_value, quote
from onrecord.envkit.audit import audit_events, audit_tables
from onrecord.envkit.diff import StateDiff, audit_diff
from onrecord.envkit.snapshot import readonly_uri
from onrecord.envkit.state import state_digest
from onrecord.errors import ConsistencyError, SchemaError

__all__ = ["TOOL_EPISODE_SCHEMA", "LiveToolEpisode", "rebuild_episode", "tool_evidence"]

TOOL_EPISODE_SCHEMA = "onrecord.run.tool-episode/v1"


def tool_evidence(world: ToolWorld, *, ending: str, agent_error: str | None,
                  tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The evidence record of the world's current episode (call before the next reset)."""
    conn = world.conn
    layouts = {table.name: {"columns": list(table.columns), "key": list(table.key)}
               for table, _ in audit_tables(conn)}
    record: dict[str, Any] = {
        "schema": TOOL_EPISODE_SCHEMA, "run_id": world.run_id, "task_id": world.task_id,
        "seed": world.seed, "snapshot": world.snapshot.identity(),
        "end_state_digest": world.state_digest(), "state_version": world.state_version,
        "steps": world.step, "tools": list(tools),
        "writes": sorted(name for name, spec in world.tools.items() if spec.writes),
        "hidden": sorted(world.hidden), "ending": ending, "agent_error": agent_error,
        "audit": {"tables": layouts, "events": audit_events(conn)},
        "diff": audit_diff(conn),
        "task": None if world.case is None else world.case.to_dict()}
    record["digest"] = content_digest(record)
    return record


class LiveToolEpisode(ToolEpisode):
    """A ``ToolEpisode`` whose parts are held in memory and whose end state is a database
    file given directly, so the kit's checks can grade it without a saved directory."""

    @classmethod
    def from_evidence(cls, evidence: Mapping[str, Any], actions: Sequence[Mapping[str, Any]],
                      database: Path) -> LiveToolEpisode:
        """Wrap a record made by ``tool_evidence`` and its action-log events."""
        if evidence.get("schema") != TOOL_EPISODE_SCHEMA:
            raise SchemaError(f"expected a {TOOL_EPISODE_SCHEMA!r} record, got "
                              f"{evidence.get('schema')!r}")
        episode = cls(database.parent, dict(evidence))
        # cached_property stores in the instance dict; pre-filling it skips file reads.
        episode.__dict__.update(
            actions=tuple(dict(event) for event in actions),
            _audit={"tables": evidence["audit"]["tables"],
                    "events": evidence["audit"]["events"]},
            diff=evidence["diff"], task=evidence["task"], _database=database)
        return episode

    def connect(self) -> sqlite3.Connection:
        """A read-only connection to the end-state database."""
        return sqlite3.connect(readonly_uri(self.__dict__["_database"]), uri=True)


def rebuild_episode(evidence: Mapping[str, Any], actions: Sequence[Mapping[str, Any]],
                    snapshot: Snapshot, workdir: Path) -> LiveToolEpisode:
    """The end state from the start snapshot plus the recorded diff, verified by digest."""
    if snapshot.identity() != evidence["snapshot"]:
        raise ConsistencyError(
            f"the start snapshot of task {evidence['task_id']!r} is now "
            f"{snapshot.identity()}, but the episode recorded {evidence['snapshot']}: the "
            "task generator changed; regrade with the onrecord version that ran the episode")
    path = Path(tempfile.mkdtemp(prefix="regrade-", dir=workdir)) / "final.sqlite"
    snapshot.save(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        _apply_diff(conn, evidence["diff"], evidence["audit"]["tables"])
        digest = state_digest(conn)
    finally:
        conn.close()
    if digest != evidence["end_state_digest"]:
        raise ConsistencyError(f"the end state rebuilt from the recorded diff of "
                               f"{evidence['task_id']!r} hashes to {digest[:12]}…, not the "
                               f"recorded {evidence['end_state_digest'][:12]}…")
    return LiveToolEpisode.from_evidence(evidence, actions, path)


def _apply_diff(conn: sqlite3.Connection, diff: StateDiff,
                layouts: Mapping[str, Mapping[str, Any]]) -> None:
    # Triggers would re-derive rows the diff already holds (and write audit rows).
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                ).fetchall():
        conn.execute(f"DROP TRIGGER {quote(name)}")
    conn.execute("BEGIN")
    for table, change in diff.items():
        key = list(layouts[table]["key"])
        where = " AND ".join(f"{quote(column)} = ?" for column in key)
        for row in change["deleted"]:
            conn.execute(f"DELETE FROM {quote(table)} WHERE {where}",
                         [native_value(row[column]) for column in key])
        for item in change["changed"]:
            after = item["after"]
            sets = ", ".join(f"{quote(column)} = ?" for column in after)
            keys = item["key"] if len(key) > 1 else [item["key"]]
            conn.execute(f"UPDATE {quote(table)} SET {sets} WHERE {where}",
                         [*map(native_value, after.values()), *map(native_value, keys)])
        for row in change["created"]:
            columns = ", ".join(map(quote, row))
            marks = ", ".join("?" for _ in row)
            conn.execute(f"INSERT INTO {quote(table)} ({columns}) VALUES ({marks})",
                         [native_value(value) for value in row.values()])
    conn.execute("COMMIT")
