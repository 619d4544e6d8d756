"""The run directory: an append-only, digest-verified record of every episode.

Layout::

    RUN/run.json         manifest: run id, library version, protocol (written once)
    RUN/episodes.jsonl   one record per (task, repeat), appended as episodes finish
    RUN/actions.jsonl    the tool-call action log of every episode, in record order
    RUN/files/<sha256>   side files (audit history, row diff, end-state database)
    RUN/errors.jsonl     episodes that could not be recorded (retried on resume)
    RUN/report.json      the graded report; RUN/decision.json the policy decision

An episode is committed by its record line, written only after its action-log block and
side files were fsynced (``_commit.py``: batches of finished episodes). A process killed
(or a machine losing power) mid-batch leaves at most a partial last line (no newline),
an action-log tail no record accounts for and unreferenced side files; ``RunWriter``
cuts the line and the tail off before appending. Any other mismatch is tampering: it is
reported and nothing is changed.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from onrecord._canonical import (
    atomic_write_bytes,
    content_digest,
    fsync_directory,
    load_record_bytes,
    record_bytes,
)
from onrecord._record_fields import is_digest
from onrecord._scratch import remove_abandoned_scratch
from onrecord.episode._verify_files import (
    MAX_LINE,
    check_entry,
    count_lines,
    open_regular,
    read_regular,
    regular_sha256,
)
from onrecord.errors import ConsistencyError, DigestMismatch, InputError, SchemaError
from onrecord.runner._actionlog import read_events
from onrecord.runner._commit import GroupCommit, naming_file
from onrecord.runner._executor_settings import check_settings
from onrecord.runner._job import JobResult
from onrecord.runner._leftovers import remove_leftovers
from onrecord.runner._lock import LOCK_NAME, lock_directory, unlock
from onrecord.runner._protocol import RunProtocol
from onrecord.runner._protocol_fields import check_manifest
from onrecord.runner._provider import SavedEpisode
from onrecord.runner._repair import (
    DECISION_SCHEMA,
    cut_actions,
    cut_torn_line,
    refuse_links,
    refuse_lost_records,
)
from onrecord.runner._store_lines import EpisodeRecord, check_fingerprint, iterate_records
from onrecord.runner._timeout import check_timeout

__all__ = ["DECISION_SCHEMA", "RUN_SCHEMA", "EpisodeRecord", "RunStore", "RunWriter"]

RUN_SCHEMA = "onrecord.run/v1"


_MANIFEST_TEMPS = ".run.json.*.tmp"
"""What a start killed while writing ``run.json`` leaves (``atomic_write_bytes``)."""


def startable_entry(entry: Path) -> bool:
    """An entry a new run may find in its directory: the lock, or a ``run.json`` never
    finished by a start that was killed. Refused, that left a directory no command took:
    not a run (no ``run.json``) for ``--resume``, not empty for a new run."""
    return entry.name == LOCK_NAME or (entry.match(_MANIFEST_TEMPS) and entry.is_file())


class RunStore:
    """A run directory, opened for reading (verification happens while iterating)."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest
        self.protocol = RunProtocol.from_dict(manifest["protocol"])
        self._lock: BinaryIO | None = None  # held from create() until a RunWriter takes it

    # -- opening -------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        run_id: str,
        protocol: RunProtocol,
        *,
        episode_timeout: float | None = None,
        executor: dict[str, Any] | None = None,
    ) -> RunStore:
        """Start a new run directory; refuses one that already holds anything. Locked
        first, and for the ``RunWriter``: two runs must not both write ``run.json``.
        ``episode_timeout`` and the ``executor``'s settings are kept beside the protocol
        for resumes to use."""
        target = Path(path)
        if target.exists() and not target.is_dir():
            raise InputError(
                f"{target} exists and is not a directory; choose another --out directory"
            )
        target.mkdir(parents=True, exist_ok=True)
        fsync_directory(target.parent)  # the run directory's own name survives power loss
        had_lock = (target / LOCK_NAME).exists()
        lock = lock_directory(target, resuming=False)
        try:
            if any(not startable_entry(entry) for entry in target.iterdir()):
                raise InputError(
                    f"{target} already exists and is not empty; pass --resume to "
                    "continue the run in it, or choose another --out directory"
                )
            for entry in target.glob(_MANIFEST_TEMPS):
                entry.unlink(missing_ok=True)
            store = cls._write_manifest(target, run_id, protocol, episode_timeout, executor)
        except BaseException:
            if not had_lock:  # a refused directory is left as it was found; removed while
                (target / LOCK_NAME).unlink(missing_ok=True)  # still held (see _lock.py)
            unlock(lock)
            raise
        store._lock = lock
        return store

    @classmethod
    def _write_manifest(
        cls,
        target: Path,
        run_id: str,
        protocol: RunProtocol,
        episode_timeout: float | None,
        executor: dict[str, Any] | None,
    ) -> RunStore:
        # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
        # which commands that only read records need not load.
        from onrecord import __version__

        manifest: dict[str, Any] = {
            "schema": RUN_SCHEMA,
            "run_id": run_id,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "library": {"name": "onrecord", "version": __version__},
            "protocol": protocol.to_dict(),
        }
        if episode_timeout is not None:  # outside the protocol: resumes may change it
            manifest["episode_timeout"] = check_timeout(episode_timeout)
        if executor is not None:  # outside the protocol too (_executor_settings.py)
            manifest["executor"] = check_settings(executor, "executor")
        manifest["digest"] = content_digest(manifest)
        with naming_file(target / "run.json"):  # a full disk named no file
            atomic_write_bytes(target / "run.json", record_bytes(manifest))
        return cls(target, manifest)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunStore:
        """Open and verify ``run.json`` of an existing run directory."""
        target = Path(path)
        manifest_path = target / "run.json"
        if not check_entry(manifest_path):  # a FIFO or a device there is named, not "no run.json"
            raise InputError(
                f"{target} is not a run directory (it has no run.json); start "
                "a run with `onrecord run ... --out DIR`"
            )
        refuse_links(target)  # before anything in it is read (or, resuming, written)
        manifest = load_record_bytes(read_regular(manifest_path), str(manifest_path))
        if manifest.get("schema") != RUN_SCHEMA:
            from onrecord import __version__

            raise SchemaError(
                f"{manifest_path}: schema is {manifest.get('schema')!r}; this "
                f"onrecord ({__version__}) reads {RUN_SCHEMA!r} run directories: "
                "open it with the onrecord version that wrote it"
            )
        if manifest.get("digest") != content_digest(manifest):
            raise DigestMismatch(
                f"{manifest_path} does not match its digest: the run's "
                "protocol was edited after the run started"
            )
        try:  # digest-consistent, yet re-sealed after an edit: each field is checked
            check_manifest(manifest)
            return cls(target, manifest)
        except SchemaError as exc:
            raise SchemaError(
                f"{manifest_path}: {exc}; it was edited and its digest made again (or "
                "written by another tool): restore the run.json the run wrote"
            ) from exc

    @property
    def run_id(self) -> str:
        """The run's identifier."""
        return str(self.manifest["run_id"])

    @property
    def episode_timeout(self) -> float | None:
        """The time limit per episode the run was started with (None: no limit)."""
        return check_timeout(
            self.manifest.get("episode_timeout"), f"{self.file('run.json')}: episode_timeout"
        )

    @property
    def executor_settings(self) -> dict[str, Any] | None:
        """The executor the run was started with (None: not kept, an older run)."""
        where = f"{self.file('run.json')}: executor"
        return check_settings(self.manifest.get("executor"), where)

    @property
    def library_version(self) -> str:
        """The onrecord version that started the run."""
        return str(self.manifest["library"]["version"])

    def file(self, name: str) -> Path:
        """Path of a file in the run directory."""
        return self.path / name

    def lines_recorded(self) -> int:
        """The lines of ``episodes.jsonl``, counted, not verified (0 without the file; a
        link or a FIFO there is refused, not followed), in blocks: it may be gigabytes. A
        line longer than any onrecord writes is refused once measured, not read on."""
        episodes = self.file("episodes.jsonl")
        if not check_entry(episodes):
            return 0
        with open_regular(episodes) as handle:
            return count_lines(handle, episodes)

    # -- reading -------------------------------------------------------------------
    def records(self) -> Iterator[EpisodeRecord]:
        """Every committed record, verified, in the order they were appended."""
        yield from iterate_records(self, self.file("episodes.jsonl"))

    def committed(self) -> dict[tuple[str, int], int]:
        """Key → line number of every committed episode (verifies the whole store)."""
        return {record.key: index for index, record in enumerate(self.records())}

    def saved_episode(self, record: EpisodeRecord) -> SavedEpisode:
        """The evidence, action-log events and side files of one record, verified."""
        meta = record.data["action_log"]
        events: list[dict[str, Any]] = []
        if meta["bytes"]:
            events = read_events(self.file("actions.jsonl"), record.actions_offset, meta["bytes"])
        files = {name: self._blob(digest) for name, digest in record.data["files"].items()}
        return SavedEpisode(record.data["evidence"], events, files)

    def check_saved(self, record: EpisodeRecord) -> None:
        """Verify what ``saved_episode`` would load (its events parse, its side files
        match their sha256), reading each side file in blocks, never whole: a forged
        record can name a file of any size by its hash."""
        meta = record.data["action_log"]
        events: list[dict[str, Any]] = []
        if meta["bytes"]:
            events = read_events(self.file("actions.jsonl"), record.actions_offset, meta["bytes"])
        check_fingerprint(self.file("episodes.jsonl"), record, events)
        for digest in record.data["files"].values():
            path = self._side_path(digest)
            if self._side(path, regular_sha256) != digest:
                raise _changed(path)

    def _blob(self, digest: str) -> bytes:
        path = self._side_path(digest)
        data: bytes = self._side(path, read_regular)  # never a link, a FIFO or a device
        if hashlib.sha256(data).hexdigest() != digest:
            raise _changed(path)
        return data

    def _side_path(self, digest: str) -> Path:
        if not is_digest(digest):
            # A forged record naming "../../elsewhere" or "/dev/zero" made `verify`
            # read a file outside the run directory: only a sha256 names a side file.
            raise SchemaError(
                f"{self.file('episodes.jsonl')}: a record names the side file {digest!r}, "
                "not a sha256 (64 hex digits) under files/: the record was forged; "
                "nothing outside the run directory is read"
            )
        return self.path / "files" / digest

    @staticmethod
    def _side(path: Path, read: Callable[[Path], Any]) -> Any:
        try:
            return read(path)
        except FileNotFoundError:
            raise ConsistencyError(
                f"{path} is missing: a side file of a recorded episode "
                "was deleted; restore it from a copy of the run"
            ) from None


def _changed(path: Path) -> DigestMismatch:
    return DigestMismatch(
        f"{path} does not match its sha256: it was changed after the episode was recorded"
    )


class RunWriter:
    """Appends finished episodes to a run directory; one writer per directory at a time.
    Episodes are committed in durable batches (``_commit.py``): a record reaches
    ``episodes.jsonl`` only after its action log and side files were fsynced."""

    def __init__(self, store: RunStore, *, period: float | None = None) -> None:
        self.store = store
        self._lock, store._lock = store._lock or lock_directory(store.path, resuming=True), None
        try:
            self.done: set[tuple[str, int]] = set()
            committed = 0
            for record in store.records():  # a torn last line is not counted
                self.done.add(record.key)
                committed += record.data["action_log"]["bytes"]
            refuse_lost_records(store.path, len(self.done))  # before anything is cut
            self.notices = remove_leftovers(store.path)  # under the lock: none in use
            self.notices += remove_abandoned_scratch()  # killed runs' databases in TMPDIR
            self.notices += cut_torn_line(store.path, "episodes.jsonl")
            self.notices += cut_torn_line(store.path, "errors.jsonl")
            self.notices += cut_actions(store.path, committed)
            self._files = GroupCommit(store.path, period=period)
        except BaseException:
            unlock(self._lock)
            raise

    def append(self, result: JobResult) -> None:
        """Queue one finished episode for the next commit (or note why it could not be
        recorded). Raises what made an earlier commit fail."""
        error = result.error
        if error is None and len(result.record) > MAX_LINE:  # readers refuse such a line
            error = (
                f"its record line is {len(result.record)} bytes, more than the {MAX_LINE} a "
                "run keeps in one line (the record holds every step; arrays of 1 KiB or "
                "more per step already go to side files): lower max_steps"
            )
        if error is not None:
            line = record_bytes(
                {
                    "case_id": result.case_id,
                    "repeat": result.repeat,
                    "error": error,
                    "time": time.time(),
                }
            )
            self._files.add_error(line)
            return
        if result.key in self.done:
            raise ConsistencyError(
                f"episode {result.case_id}#{result.repeat} is already "
                "recorded; a run never records an episode twice"
            )
        self._files.add(result.record, result.actions, result.files)
        self.done.add(result.key)

    def sync(self) -> None:
        """Commit every queued episode now: durable once this returns (a background
        thread does so every ``period`` seconds, by default ``COMMIT_SECONDS``)."""
        self._files.commit()

    def close(self) -> None:
        """Commit what is queued, close the files and release the directory lock."""
        try:
            if hasattr(self, "_files"):
                self._files.close()
        finally:
            unlock(self._lock)

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
