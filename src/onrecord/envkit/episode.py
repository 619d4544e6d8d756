"""Saved tool-world episodes: one directory of evidence that checks read.

Layout::

    DIR/actions.jsonl   the action log (one canonical JSON event per line)
    DIR/audit.json      {"schema": "onrecord.envkit.audit/v1", "tables", "events", "digest"}
    DIR/diff.json       {"schema": "onrecord.envkit.diff/v1", "diff", "digest"}
    DIR/task.json       {"schema": "onrecord.envkit.task/v1", "case", "digest"}
    DIR/final.sqlite    the end-state database (audit tables included)
    DIR/manifest.json   {"schema": "onrecord.envkit.episode/v1", "files": {name: sha256},
                         "snapshot", "end_state_digest", ..., "digest"}

The manifest is written last, so a directory without one is an unfinished save.
Loading re-checks every file's sha256, every record's digest and the shape of every
part, and that the diff is the one the audit history folds to (``_episode_parts``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from onrecord._canonical import atomic_write_bytes, content_digest, record_bytes
from onrecord.case import EvalCase
from onrecord.envkit._ctrl_c import raises_noted
from onrecord.envkit._episode_parts import (
    AUDIT_SCHEMA,
    DIFF_SCHEMA,
    PARTS,
    TASK_SCHEMA,
    read_parts,
)
from onrecord.envkit._episode_records import pinned_bytes, verified_record
from onrecord.envkit._sql import Table, internal, save_reals
from onrecord.envkit.audit import AuditEvent, audit_tables
from onrecord.envkit.diff import StateDiff
from onrecord.envkit.snapshot import path_argument, readonly_uri
from onrecord.envkit.state import state_digest
from onrecord.envkit.world import ToolWorld
from onrecord.errors import DigestMismatch, InputError, SchemaError

__all__ = ["EPISODE_FILES", "EPISODE_SCHEMA", "ToolEpisode", "save_episode"]

EPISODE_SCHEMA = "onrecord.envkit.episode/v1"
EPISODE_FILES = ("actions.jsonl", "audit.json", "diff.json", "final.sqlite", "task.json")
_PART_FIELDS = ("digest", "hidden", "snapshot", "steps", "tools")
_OWN_FILES = frozenset({*EPISODE_FILES, "manifest.json"})
# Manifest fields the loader and the report adapter read, with the type each must have.
_MANIFEST_TYPES: dict[str, type | tuple[type, ...]] = {
    "files": dict,
    "snapshot": dict,
    "steps": int,
    "state_version": int,
    "tools": list,
    "hidden": list,
    "database": bool,
    "ending": str,
}


def save_episode(
    world: ToolWorld,
    directory: str | os.PathLike[str],
    *,
    ending: str | None = None,
    error: str | None = None,
    database: bool = True,
) -> ToolEpisode:
    """End the world's episode and save its evidence to ``directory``; returns it loaded.

    ``ending``/``error`` declare how the episode ended (see ``ToolWorld.end_episode``).
    ``database=False`` leaves out ``final.sqlite`` (faster bulk runs; checks that read the
    end state through ``episode.connect()`` then cannot run).
    """
    _check_world(world, "save_episode world")  # before raises_noted reads its guard
    if not isinstance(database, bool):  # "no" or 0 would be read as its truth value
        raise InputError(
            f"save_episode database must be True or False, got {database!r}; False leaves "
            "out final.sqlite"
        )
    target = path_argument(directory, "save_episode directory")
    target.mkdir(parents=True, exist_ok=True)
    foreign = sorted(set(_entries(target)) - _OWN_FILES)
    if foreign:  # loading would refuse them: an episode directory holds nothing else
        raise InputError(
            f"save_episode: {str(target)!r} already holds {foreign}, which are not "
            "episode files; save into a new or empty directory"
        )
    return _save(world, target, ending, error, database)


@raises_noted  # it reads the world's connection: a Ctrl-C SQLite swallowed is raised
def _save(
    world: ToolWorld, target: Path, ending: str | None, error: str | None, database: bool
) -> ToolEpisode:
    world.end_episode(ending, error)
    layouts = {
        table.name: {"columns": list(table.columns), "key": list(table.key)}
        for table, _ in audit_tables(world.conn)
    }
    events, diff = save_reals(*world.history_and_diff())
    files = {
        "actions.jsonl": world.log.to_bytes(),
        "audit.json": _record(AUDIT_SCHEMA, tables=layouts, events=events),
        "diff.json": _record(DIFF_SCHEMA, diff=diff),
        "task.json": _record(
            TASK_SCHEMA, case=None if world.case is None else world.case.to_dict()
        ),
    }
    digests = {name: _write(target / name, data) for name, data in files.items()}
    if database:
        with world._guard.owned():  # VACUUM INTO asks to attach: onrecord's own (_guard)
            digests["final.sqlite"] = _save_database(world.conn, target / "final.sqlite")
    else:  # an earlier save's end state must not pass for this episode's
        (target / "final.sqlite").unlink(missing_ok=True)
    manifest = {
        "schema": EPISODE_SCHEMA,
        "files": dict(sorted(digests.items())),
        "run_id": world.run_id,
        "task_id": world.task_id,
        "seed": world.seed,
        "snapshot": world.snapshot.identity(),
        "end_state_digest": world.state_digest(),
        "state_version": world.state_version,
        "steps": world.step,
        "tools": world.tool_schemas(),
        "writes": sorted(name for name, spec in world.tools.items() if spec.writes),
        "hidden": sorted(world.hidden),
        "ending": world.ending or "undeclared",
        "ending_error": world.ending_error,
        "database": database,
    }
    manifest["digest"] = content_digest(manifest)
    # Only the manifest is fsynced: it pins every other file by sha256, so a crash that
    # loses a data file's bytes is caught on load instead of costing an fsync per file.
    atomic_write_bytes(target / "manifest.json", record_bytes(manifest))
    return ToolEpisode(target, manifest)  # just written: no need to re-hash every file


def _check_world(world: Any, where: str) -> None:
    if not isinstance(world, ToolWorld):
        raise InputError(
            f"{where} must be a ToolWorld (ToolWorld(snapshot, tools)), got "
            f"{type(world).__name__} {world!r:.80}"
        )


def _record(schema: str, **fields: Any) -> bytes:
    record = {"schema": schema, **fields}
    record["digest"] = content_digest(record)
    return record_bytes(record)


def _write(path: Path, data: bytes) -> str:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # readers never see half a file
    return hashlib.sha256(data).hexdigest()


def _save_database(conn: sqlite3.Connection, path: Path) -> str:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    # VACUUM INTO writes one compact, self-contained (rollback-journal) file.
    conn.execute(internal("VACUUM INTO ?"), (str(tmp),))
    os.replace(tmp, path)
    return _file_digest(path)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class ToolEpisode:
    """A verified saved episode: the evidence checks receive."""

    path: Path
    """The episode directory."""
    manifest: Mapping[str, Any]
    """The verified manifest (file digests, snapshot identity, end-state digest, ...)."""

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> ToolEpisode:
        """Load and verify a saved episode directory: its files, every record's digest,
        the shape of every part, and the diff against the audit history."""
        path = Path(directory).absolute()  # later reads must not depend on the cwd
        manifest_path = path / "manifest.json"
        if not manifest_path.is_file():
            raise SchemaError(
                f"{str(path)!r} has no manifest.json; it is not a saved episode "
                "(or its save did not finish): save it with save_episode()"
            )
        manifest = verified_record(manifest_path, EPISODE_SCHEMA)
        _check_manifest(manifest, manifest_path)
        listed = set(manifest["files"])
        expected = set(_expected_files(manifest))
        if listed != expected:
            raise SchemaError(
                f"{manifest_path} lists the files {sorted(listed)}, but an episode "
                f"saved with database={manifest['database']} has {sorted(expected)}"
            )
        for name in sorted(set(_entries(path)) - listed - {"manifest.json"}):
            raise DigestMismatch(
                f"{path / name} is not part of the saved episode (its manifest does not "
                "list it): it was added after saving; remove it"
            )
        parts = read_parts(path, manifest["files"], sorted(expected))
        episode = cls(path, manifest)
        # Its database is opened immutable (_pinned); each part is re-hashed when first
        # read (the file may change after load), but not parsed and checked again.
        episode.__dict__.update(_parts=parts, _pinned=True)
        return episode

    @classmethod
    def from_parts(
        cls,
        manifest: Mapping[str, Any],
        *,
        actions: Iterable[Mapping[str, Any]],
        audit_tables: Mapping[str, Mapping[str, Sequence[str]]],
        audit_events: Sequence[AuditEvent],
        diff: StateDiff,
        task: Mapping[str, Any] | None,
        database: str | os.PathLike[str] | None = None,
    ) -> ToolEpisode:
        """An episode from parts held in memory (a run record, a live world) plus,
        optionally, the end-state database file; no episode directory is read or written.

        ``manifest`` holds at least ``digest``, ``steps``, ``snapshot``, ``tools`` and
        ``hidden`` (as :func:`save_episode` writes them); ``audit_tables`` maps each
        audited table to ``{"columns", "key"}``. Nothing is re-hashed: the caller vouches
        for the parts (a run store verifies its records before handing them out).
        """
        missing = [name for name in _PART_FIELDS if name not in manifest]
        if missing:
            raise SchemaError(
                f"ToolEpisode.from_parts: the manifest lacks {missing}; give the "
                "fields save_episode writes (digest, steps, snapshot, tools, hidden)"
            )
        file = None if database is None else Path(database).absolute()
        where = file.parent if file is not None else Path(f"<episode {manifest['digest']}>")
        episode = cls(where, dict(manifest))
        # The lazily read parts are cached properties: fill them instead of the files.
        episode.__dict__.update(
            actions=tuple(dict(event) for event in actions),
            _audit={
                "tables": {name: dict(layout) for name, layout in audit_tables.items()},
                "events": audit_events,
            },
            diff=diff,
            task=None if task is None else dict(task),
            database=file,
        )
        return episode

    @property
    def digest(self) -> str:
        """The manifest digest, which pins every file of the episode."""
        return str(self.manifest["digest"])

    def _part(self, name: str) -> Any:
        """A part of the saved episode: read from the file (which must still match its
        manifest sha256), or, once ``load`` has read and checked it, as it was then."""
        data = pinned_bytes(self, name)
        attribute, read = PARTS[name]
        loaded = self.__dict__.get("_parts", {})
        return loaded[attribute] if attribute in loaded else read(self.path / name, data)

    @cached_property
    def actions(self) -> tuple[dict[str, Any], ...]:
        """The action log events, in order."""
        events: tuple[dict[str, Any], ...] = self._part("actions.jsonl")
        return events

    @cached_property
    def _audit(self) -> dict[str, Any]:
        record: dict[str, Any] = self._part("audit.json")
        return record

    @property
    def audit(self) -> list[AuditEvent]:
        """The audit history: every row change with its step."""
        return list(self._audit["events"])

    @property
    def tables(self) -> dict[str, Table]:
        """Layout (columns, key) of every audited table."""
        return {
            name: Table(name, tuple(item["columns"]), tuple(item["key"]), "")
            for name, item in self._audit["tables"].items()
        }

    @cached_property
    def diff(self) -> StateDiff:
        """The end-state diff."""
        diff: StateDiff = self._part("diff.json")
        return diff

    @cached_property
    def task(self) -> dict[str, Any] | None:
        """The task (an ``EvalCase`` in dict form), or ``None``."""
        case: dict[str, Any] | None = self._part("task.json")
        return case

    @property
    def case(self) -> EvalCase | None:
        """The task as an ``EvalCase`` (re-verified)."""
        return None if self.task is None else EvalCase.from_dict(self.task)

    @cached_property
    def database(self) -> Path | None:
        """The end-state database file, or ``None`` when the episode has none."""
        return self.path / "final.sqlite" if self.manifest.get("database", True) else None

    def _database_file(self) -> Path:
        if self.database is None:
            raise SchemaError(
                f"episode {self.path} was saved with database=False (or built from "
                "parts without one), so its end state cannot be opened; save with "
                "database=True for checks that read the end state"
            )
        return self.database

    def connect(self) -> sqlite3.Connection:
        """A read-only connection to the end-state database."""
        uri = readonly_uri(self._database_file())
        if self.__dict__.get("_pinned"):
            # A saved episode's file is pinned by its manifest, and may come from anyone:
            # a header saying WAL (a setting stored in the file; save_episode never
            # writes one) made even a read-only open create final.sqlite-shm and -wal
            # beside it, and the episode then failed verification ("added after
            # saving"). Immutable, SQLite writes and locks nothing. Not for a live
            # world's file (from_parts): that may hold un-checkpointed WAL content.
            uri += "&immutable=1"
        return sqlite3.connect(uri, uri=True)

    def end_state_digest(self) -> str:
        """Recompute the end-state digest from the saved database."""
        conn = self.connect()
        try:
            return state_digest(conn)
        finally:
            conn.close()

    def copy_database(self, path: str | os.PathLike[str]) -> Path:
        """Copy the end-state database somewhere writable (e.g. to resume from it)."""
        return Path(shutil.copyfile(self._database_file(), path))


def _expected_files(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    if manifest.get("database", True):
        return EPISODE_FILES
    return tuple(name for name in EPISODE_FILES if name != "final.sqlite")


def _entries(directory: Path) -> list[str]:
    return [entry.name for entry in directory.iterdir()]


def _check_manifest(manifest: Mapping[str, Any], path: Path) -> None:
    """Refuse a manifest whose fields have the wrong shape (a hand-made one whose digest
    was recomputed) with a message naming the field, instead of failing later."""
    for name, kind in _MANIFEST_TYPES.items():
        value = manifest.get(name)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise SchemaError(
                f"{path}: field {name!r} must be of type {getattr(kind, '__name__', kind)}, "
                f"got {value!r}; the manifest was not written by save_episode"
            )
    files = manifest["files"]
    if not all(isinstance(v, str) for v in files.values()):
        raise SchemaError(f"{path}: field 'files' must map file names to sha256 hex strings")
    snapshot = manifest["snapshot"]
    if not isinstance(snapshot.get("name"), str) or not isinstance(snapshot.get("digest"), str):
        raise SchemaError(f"{path}: field 'snapshot' must hold a 'name' and a 'digest'")
