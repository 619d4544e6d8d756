"""The temporary files a killed writer of a run directory leaves, and their removal.

Every file onrecord writes into a run directory is written to a temporary name and
renamed into place (``atomic_write_bytes``, ``_commit._write_file``). A kill -9 between
the two leaves the temporary file: never read, never renamed, but kept for ever. Only a
process holding the directory lock may remove them (a writer without it might be about
to rename its own), and only names these writers make: anything else stays. One writer
does without the lock: ``onrecord report`` (``RUN/report.html``, and
``RUN/regrades/NAME/report.html``). ``atomic_write_bytes`` holds its temporary file
locked (``flock``) until renamed, so only a file nobody holds is removed.

A killed ``onrecord regrade`` leaves its staging directory (``RUN/.regrade-XXXXXXXX``,
written whole and then renamed to ``regrades/NAME``). Regrades do not take the run's
lock (they only read its records), so a staging directory is locked by the regrade
writing it instead (``flock`` on the directory): one nobody holds is a dead regrade's,
named by ``verify`` and removed by the next regrade or resume.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from onrecord._scratch import same_file

__all__ = ["remove_leftovers", "remove_unfinished_regrades", "staging", "unfinished_regrades"]

_TOP = re.compile(r"\.(?:(?:run|report|decision)\.json|report\.html)\.[a-z0-9_]{8}\.tmp")
"""``tempfile.mkstemp(prefix=".NAME.", suffix=".tmp")``: eight characters between."""
_REGRADED = re.compile(r"\.report\.html\.[a-z0-9_]{8}\.tmp")
"""``onrecord report RUN --grading NAME``'s, in ``RUN/regrades/NAME/`` (a regrade's own
files are written in its staging directory, renamed there whole)."""
_SIDE = re.compile(r"\.[0-9a-f]{64}\.[0-9]+\.tmp")
"""``files/.<sha256>.<pid>.tmp`` (``_commit._write_file``)."""
_STAGING = re.compile(r"\.regrade-[a-z0-9_]{8}")
"""``tempfile.mkdtemp(prefix=".regrade-")``: a regrade's staging directory."""


def remove_leftovers(run: Path) -> list[str]:
    """Remove the temporary files of writes that never finished; one notice for them."""
    removed = _remove(run, _TOP) + _remove(run / "files", _SIDE)
    for regrade in _directories(run / "regrades", re.compile(".*", re.DOTALL)):
        removed += _remove(regrade, _REGRADED)
    notices = remove_unfinished_regrades(run)
    if not removed:
        return notices
    names = ", ".join(os.path.relpath(path, run) for path in removed)
    return [
        f"removed {len(removed)} unfinished temporary file(s) a killed onrecord left "
        f"in {run}: {names}",
        *notices,
    ]


def _remove(directory: Path, pattern: re.Pattern[str]) -> list[Path]:
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for entry in entries:
        # A regular file only: a link or a directory of that name is not ours to remove.
        if (
            pattern.fullmatch(entry.name)
            and stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode)
            and _unlink_unheld(Path(entry.path))
        ):
            removed.append(Path(entry.path))
    return removed


def _unlink_unheld(path: Path) -> bool:
    """Unlink the temporary file ``path`` unless a live writer holds it (about to rename
    it: ``atomic_write_bytes``); whether it was. It is unlinked under the lock, so its
    writer, locking it just after, finds it unlinked and writes another."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # renamed into place meanwhile, or no longer a file
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not same_file(fd, path):
            return False
        os.unlink(path)
        return True
    except BlockingIOError:  # being written
        return False
    finally:
        os.close(fd)


@contextlib.contextmanager
def staging(run: Path) -> Iterator[Path]:
    """A new staging directory in ``run``, locked for as long as the block runs (and
    removed after it, unless renamed away). Locked only after ``mkdtemp`` made it, so
    a cleaner may take and remove it in between: then it is made again."""
    while True:
        path = Path(tempfile.mkdtemp(prefix=".regrade-", dir=run))
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a cleaner holds it only while removing
            if same_file(fd, path):
                try:
                    yield path
                finally:
                    shutil.rmtree(path, ignore_errors=True)
                return
        finally:
            os.close(fd)


def unfinished_regrades(run: Path) -> list[str]:
    """The staging directories of regrades killed before they finished (read only)."""
    return [path.name for path in _staged(run) if _unheld(path, fcntl.LOCK_SH, remove=False)]


def remove_unfinished_regrades(run: Path) -> list[str]:
    """Remove what ``unfinished_regrades`` names; one notice for them."""
    removed = [path.name for path in _staged(run) if _unheld(path, fcntl.LOCK_EX, remove=True)]
    if not removed:
        return []
    return [
        f"removed {len(removed)} unfinished regrade(s) a killed `onrecord regrade` left in "
        f"{run}: {', '.join(removed)}"
    ]


def _staged(run: Path) -> list[Path]:
    return _directories(run, _STAGING)


def _directories(parent: Path, pattern: re.Pattern[str]) -> list[Path]:
    try:
        entries = sorted(os.scandir(parent), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    # A real directory only: a link of that name is not ours to follow or remove.
    return [
        Path(entry.path)
        for entry in entries
        if pattern.fullmatch(entry.name) and stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
    ]


def _unheld(path: Path, mode: int, *, remove: bool) -> bool:
    """Whether no live regrade holds ``path`` (then removed, under the lock, if asked)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:  # gone meanwhile (its regrade finished), or not a directory now
        return False
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:  # a regrade is writing it
            return False
        if remove:  # a leftover that cannot be removed stays, and is named by `verify`
            shutil.rmtree(path, ignore_errors=True)
            return not path.exists()
        return True
    finally:
        os.close(fd)
