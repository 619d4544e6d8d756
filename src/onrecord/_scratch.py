"""Scratch directories in the temporary directory, and the removal of a dead owner's.

onrecord makes directories outside any run directory (a tool world's database, a
regrade's rebuilt episodes, a process pool's timeout notes, a ledger per episode, the
remittance suite's episodes). A process killed outright (``kill -9``, the out-of-memory
killer, a cancelled CI job) runs no cleanup, so they would stay in ``TMPDIR`` for ever,
whole SQLite databases each.

Each one therefore holds a marker file (``.onrecord-scratch``) that its owner keeps
``flock``-ed for as long as the directory is in use. The kernel drops that lock when the
process ends however it ends, so "nobody holds it" means "its owner is gone", with no
pid that another process may have reused. The lock is taken on a temporary name before
the marker is renamed into place: a marker that can be seen is one that was held.
``remove_abandoned_scratch`` (called when a run, a resume or a regrade starts) removes
only directories named as onrecord names them, owned by this user, carrying the marker,
and unheld; it removes each while holding its lock, so two sweeps at once never both
remove one, and never a live one.

A process killed outright can also be caught between making the directory and placing
its marker, or while removing it. So the name carries the maker's pid
(``onrecord-KIND-PID-XXXXXXXX``), and the marker is removed last, after everything else:
a directory without a marker is one of those two moments, and is removed once its
maker is gone (not just unlocked: a pid may be reused, and then it is kept).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
import weakref
from pathlib import Path

__all__ = [
    "KINDS",
    "MARKER",
    "ScratchDirectory",
    "open_marker",
    "remove_abandoned_scratch",
    "same_file",
]

KINDS = ("world", "toolworld", "ledger", "timeouts", "remittance")
"""What the directories are for; each is named ``onrecord-KIND-PID-XXXXXXXX``."""
MARKER = ".onrecord-scratch"
"""The file whose ``flock`` says the directory's owner is alive."""
_NAME = re.compile(rf"onrecord-(?:{'|'.join(KINDS)})-(?:(?P<pid>[0-9]+)-)?[a-z0-9_]{{8}}")
"""``tempfile.mkdtemp(prefix="onrecord-KIND-PID-")``: eight characters after the prefix
(directories of onrecord versions before 2026-12-03 have no ``PID-``)."""
_NAMED = 5
# O_NONBLOCK: a FIFO by the marker's name must not hang the sweep in open().
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class ScratchDirectory:
    """A new ``onrecord-KIND-XXXXXXXX`` in the temporary directory, marked as in use
    until :meth:`cleanup` (or until this object is collected, or the process ends)."""

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:  # a new kind must be added to KINDS, or no sweep finds it
            raise ValueError(f"unknown scratch directory kind {kind!r}; one of {KINDS}")
        self.name = tempfile.mkdtemp(prefix=f"onrecord-{kind}-{os.getpid()}-")
        try:
            fd = _held_marker(self.name)
        except BaseException:
            shutil.rmtree(self.name, ignore_errors=True)
            raise
        self._finalizer = weakref.finalize(self, _remove, self.name, fd, os.getpid())

    def cleanup(self) -> None:
        """Remove the directory and everything in it (once; later calls do nothing)."""
        self._finalizer()

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def _held_marker(directory: str) -> int:
    """The marker's descriptor, locked before the marker gets its name."""
    pending = os.path.join(directory, f"{MARKER}.new")
    fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())  # for a person looking: whose it is
        os.rename(pending, os.path.join(directory, MARKER))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _remove(directory: str, fd: int, owner: int) -> None:
    # A forked child that exits normally runs finalizers too: the directory is its
    # parent's, still in use there (the child shares the lock; it is not the owner).
    if os.getpid() == owner:
        remove_marker_last(directory)
    os.close(fd)


def remove_marker_last(directory: str) -> None:
    """Remove ``directory``: everything in it but the marker, then the marker, then the
    directory itself, so a process killed midway leaves a directory that still says
    whose it is (or an empty one named with its pid)."""
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name == MARKER:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
    except OSError:  # already gone, or not a directory: rmtree below says nothing either
        pass
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(directory, MARKER))
    shutil.rmtree(directory, ignore_errors=True)


def remove_abandoned_scratch(root: str | os.PathLike[str] | None = None) -> list[str]:
    """Remove the scratch directories in ``root`` (the temporary directory) whose owner
    is gone; one notice naming them, or none."""
    where = Path(tempfile.gettempdir() if root is None else root)
    try:
        entries = sorted(os.scandir(where), key=lambda entry: entry.name)
    except OSError:  # no such directory, or not ours to list: nothing to sweep
        return []
    removed = [entry.name for entry in entries if _NAME.fullmatch(entry.name) and _sweep(entry)]
    if not removed:
        return []
    # Named up to a few: after many cancelled CI jobs there may be hundreds.
    names = ", ".join(removed[:_NAMED]) + (
        f" and {len(removed) - _NAMED} more" if len(removed) > _NAMED else ""
    )
    return [
        f"removed {len(removed)} scratch director{'y' if len(removed) == 1 else 'ies'} a "
        f"killed onrecord left in {where}: {names}"
    ]


def _sweep(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` was an abandoned scratch directory (then it is removed)."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    # A real directory of this user's only: a link, or another user's, is not ours.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False
    marker = os.path.join(entry.path, MARKER)
    fd = open_marker(entry.path)
    if fd is None:  # made or removed by a process killed midway, or not ours at all
        return _sweep_unmarked(entry)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its owner is alive (or another sweep is removing it)
            return False
        if not same_file(fd, marker):  # removed by another sweep before we locked it
            return False
        remove_marker_last(entry.path)
        return not os.path.lexists(entry.path)
    finally:
        os.close(fd)


def _sweep_unmarked(entry: os.DirEntry[str]) -> bool:
    """A directory without a marker is removed only when its name gives the pid of its
    maker and no process has that pid: its maker was killed between making it and
    marking it, or while removing it. Without a pid in its name it is not onrecord's
    (or an older onrecord's, killed that way: left alone, as it always was)."""
    pid = named_pid(entry.name)
    if pid is None or _alive(pid):
        return False
    shutil.rmtree(entry.path, ignore_errors=True)
    return not os.path.lexists(entry.path)


def named_pid(name: str) -> int | None:
    """The pid in a scratch directory's name, if it is one of onrecord's and has one."""
    match = _NAME.fullmatch(name)
    return int(match["pid"]) if match and match["pid"] else None


def _alive(pid: int) -> bool:
    """Whether a process has ``pid`` (another user's counts: it may be making one)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def open_marker(directory: str) -> int | None:
    """A descriptor of the directory's marker when it is a regular file (no link), or
    None; the caller closes it."""
    try:
        fd = os.open(os.path.join(directory, MARKER), _OPEN)
    except OSError:
        return None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        regular = False
    if not regular:
        os.close(fd)
        return None
    return fd


def same_file(fd: int, path: str | os.PathLike[str]) -> bool:
    """Whether the open ``fd`` is still the file named ``path`` (not removed or
    replaced since it was opened)."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
