"""Group commit: finished episodes become durable in an order that survives power loss.

An episode's record line in ``episodes.jsonl`` is its commit point, and it refers to its
action-log block in ``actions.jsonl`` and to side files in ``files/``. The operating
system may write un-synced data to the disk in any order, so after a power loss a record
written before its references were fsynced could survive them, and the run could never
be verified or resumed again. So a record line is only written once everything it refers
to is on the disk. Finished episodes wait in memory; a background thread commits them in
batches (every ``COMMIT_SECONDS``; ``commit()`` and ``close()`` do so at once):

1. each new side file is written to a temporary file, fsynced and renamed into
   ``files/``; then ``files/`` is fsynced (their names), and the run directory when
   ``files/`` was just created;
2. the batch's action-log blocks are appended to ``actions.jsonl``, which is fsynced;
3. the batch's record lines are appended to ``episodes.jsonl`` in one ``write``, which
   is fsynced: from then on the batch is durable;
4. lines of episodes that could not be recorded go to ``errors.jsonl``, fsynced.

A process that dies before step 3 ends (killed, or the machine losing power) leaves
action-log bytes and side files no record refers to and perhaps a partial last line:
resuming cuts the bytes and the line off and runs those episodes again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from onrecord._canonical import fsync_directory

__all__ = ["COMMIT_SECONDS", "GroupCommit", "naming_file"]

COMMIT_SECONDS = 0.2
"""Most time a finished episode waits in memory before its batch is committed."""

_Entry = tuple[bytes, bytes, Mapping[str, bytes]]  # record line, action-log block, side files


@contextlib.contextmanager
def naming_file(path: Path | str) -> Iterator[None]:
    """Give an ``OSError`` raised in the block the file it happened on. ``os.write`` and
    ``os.fsync`` on a full disk raise a bare ``No space left on device``: the user was
    told neither which file nor which run."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from exc


class GroupCommit:
    """The append-only files of a run directory, written in durable batches."""

    def __init__(self, run: Path, *, period: float | None = None) -> None:
        self._run = run
        period = COMMIT_SECONDS if period is None else period
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        fds: list[int] = []
        try:
            for name in ("episodes.jsonl", "actions.jsonl", "errors.jsonl"):
                fds.append(os.open(run / name, flags, 0o644))
            # The files' names (and run.json's) are durable before any byte is committed:
            # a record can never survive a power loss that its files' names do not.
            fsync_directory(run)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        self._episodes, self._actions, self._errors = fds
        self._pending: list[_Entry] = []  # appended to whole: a Ctrl-C never splits one
        self._failed: list[bytes] = []
        self._durable: set[str] = set()  # side files known to be on the disk
        self._lock = threading.Lock()  # guards the two lists
        self._committing = threading.Lock()  # one batch at a time, in order
        self._failure: BaseException | None = None
        self._reported = False
        self._closed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, args=(period,), name="onrecord-run-commit", daemon=True
        )
        self._thread.start()

    def add(self, line: bytes, actions: bytes, files: Mapping[str, bytes]) -> None:
        """Queue a finished episode: its record line, action-log block and side files."""
        self._raise_failure()
        entry = (line, actions, files)
        with self._lock:
            self._pending.append(entry)

    def add_error(self, line: bytes) -> None:
        """Queue a line of ``errors.jsonl``."""
        self._raise_failure()
        with self._lock:
            self._failed.append(line)

    def commit(self) -> None:
        """Make every queued episode durable now (see the module docstring)."""
        self._raise_failure()
        with self._committing:
            if self._failure is not None:  # the thread failed while this one waited
                self._raise_failure()
            try:
                self._commit()
            except BaseException as exc:
                # Nothing more may be appended after a batch that failed part-way.
                self._failure, self._reported = exc, True
                raise

    def close(self) -> None:
        """Commit what is queued (unless a commit failed), then close the files."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        try:
            self._thread.join()
            if self._failure is None:
                self.commit()
            elif not self._reported:  # the thread failed after the last call
                self._raise_failure()
        finally:
            # Never close a file the thread may still be writing: after a Ctrl-C in the
            # join above, its number could be reused by the next file opened, and the
            # batch written there.
            self._wait_for_thread()
            for fd in (self._episodes, self._actions, self._errors):
                os.close(fd)

    def _wait_for_thread(self) -> None:
        while self._thread.is_alive():
            # Only reached when an interrupt is already on its way out of close(): a
            # further one must not stop the wait (a batch takes a few fsyncs).
            with contextlib.suppress(KeyboardInterrupt):
                self._thread.join()

    def _loop(self, period: float) -> None:
        while not self._stop.wait(period):
            try:
                with self._committing:
                    if self._failure is not None:
                        return
                    self._commit()
            except BaseException as exc:  # reported to the writer's next call
                self._failure = exc
                return

    def _raise_failure(self) -> None:
        if self._failure is not None and not self._reported:
            self._reported = True
            raise self._failure
        if self._failure is not None:
            raise OSError(
                f"saving to {self._run} failed earlier ({self._failure}); nothing more is "
                "written: resume the run once the cause is fixed"
            )

    def _commit(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            failed, self._failed = self._failed, []
        if batch:
            with naming_file(self._run / "files"):
                self._write_files(batch)
            actions = b"".join(entry[1] for entry in batch)
            if actions:
                _write_synced(self._actions, actions, self._run / "actions.jsonl")
            # The commit point.
            _write_synced(
                self._episodes, b"".join(entry[0] for entry in batch), self._run / "episodes.jsonl"
            )
        if failed:
            _write_synced(self._errors, b"".join(failed), self._run / "errors.jsonl")

    def _write_files(self, batch: list[_Entry]) -> None:
        wanted = {
            digest: data
            for _, _, files in batch
            for digest, data in files.items()
            if digest not in self._durable
        }
        if not wanted:
            return
        directory = self._run / "files"
        created = not directory.is_dir()
        directory.mkdir(exist_ok=True)
        for digest, data in wanted.items():
            target = directory / digest
            if not _holds(target, digest):  # else left by an earlier process: synced below
                _write_file(directory, digest, data)
            else:
                _fsync_file(target)
            self._durable.add(digest)
        fsync_directory(directory)
        if created:
            fsync_directory(self._run)


def _holds(path: Path, digest: str) -> bool:
    """Whether ``path`` exists with the content ``digest`` names (a side file an earlier,
    interrupted process wrote may be incomplete after a power loss)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    return hashlib.sha256(data).hexdigest() == digest


def _write_file(directory: Path, digest: str, data: bytes) -> None:
    temporary = directory / f".{digest}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, directory / digest)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_synced(fd: int, data: bytes, path: Path) -> None:
    with naming_file(path):
        _write_all(fd, data)
        os.fsync(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
