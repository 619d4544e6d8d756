"""Reading the files of a received record without trusting the directory they came in.

A record is often verified on a machine that received it from someone else (an archive,
a shared folder), so the directory itself is hostile input, not only the bytes in it:

* a FIFO or a device in place of a file made ``verify`` block forever (a FIFO waits for
  a writer; ``/dev/zero`` never ends, and a line read from it exhausts memory);
* a symbolic link inside a run directory made commands read, and a resume truncate,
  a file outside it (``errors.jsonl -> ~/notes.txt`` lost its last line), and a
  ``regrades`` link made ``regrade`` write its directory elsewhere.

So every file inside a record directory is opened without following a link and without
blocking, and refused unless it is a regular file. Only the path a user names may be a
link (``onrecord verify evidence.json`` where that is a symlink): the user chose it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from io import BufferedReader
from pathlib import Path

from onrecord.errors import SchemaError

__all__ = [
    "MAX_LINE",
    "bounded_lines",
    "check_entry",
    "count_lines",
    "open_regular",
    "read_regular",
    "regular_sha256",
    "regular_size",
]

MAX_LINE = 1 << 30
"""The longest line (newline included) of a JSON Lines file a run keeps: 1 GiB. A real
record line is far shorter (large arrays go to side files; a 500-step CartPole episode
is about 120 KB), and a run refuses to write a longer one; a received file with a
multi-GB line (or none at all) is refused rather than read into memory whole."""

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
)
_WHY = (
    "onrecord records are regular files and directories, and onrecord never follows a "
    "link or reads a special file inside a record (it could point outside it, or block "
    "forever)"
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: Path, mode: int, want: str = "a regular file") -> SchemaError:
    return SchemaError(
        f"{path} is {_kind(mode)}, not {want}: {_WHY}; refused: put {want} there (copy "
        "the record again from where it came from, without links or special files)"
    )


def check_entry(path: Path, *, directory: bool = False) -> bool:
    """Whether ``path`` exists, refusing it when it is a link or not a regular file (a
    real directory when ``directory``). Nothing is opened."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: "file/run.json"
        return False
    if directory and not stat.S_ISDIR(mode):
        raise _refuse(path, mode, "a directory")
    if not directory and not stat.S_ISREG(mode):
        raise _refuse(path, mode)
    return True


def _open(path: Path, follow: bool) -> int:
    """A descriptor of the regular file ``path``. The kind is checked before opening
    (opening a device can itself act) and again on the open file (it may have been
    swapped in between); ``O_NONBLOCK`` keeps a FIFO swapped in from blocking the open."""
    mode = (os.stat(path) if follow else os.lstat(path)).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(path, mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, stat.S_IFLNK) from exc
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refuse(path, mode)
    os.set_blocking(fd, True)
    return fd


def regular_size(path: Path) -> int:
    """The size of the regular file ``path`` (never a link), read before its bytes so a
    file far larger than its record says is refused without reading it."""
    info = os.lstat(path)  # a missing file raises FileNotFoundError
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, info.st_mode)
    return info.st_size


def open_regular(path: Path, *, follow: bool = False) -> BufferedReader:
    """The regular file ``path`` opened for reading; a link is followed only when
    ``follow`` (the path a user named)."""
    return open(_open(path, follow), "rb", closefd=True)


def read_regular(path: Path, *, follow: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (see ``open_regular``)."""
    with open_regular(path, follow=follow) as handle:
        return handle.read()


def regular_sha256(path: Path, *, follow: bool = False) -> str:
    """Hex sha256 of the regular file ``path``, read in blocks (in C, never whole)."""
    with open_regular(path, follow=follow) as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def bounded_lines(
    handle: BufferedReader, path: Path, limit: int = MAX_LINE
) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the JSON Lines file open as ``handle``. A line is measured
    before it is read, so one longer than ``limit`` bytes is refused holding only a
    block of it in memory."""
    number = 0
    while True:
        start = handle.tell()
        # readline stops at the newline: a short line costs its own bytes, not a block.
        first = handle.readline(_BLOCK)
        if not first:
            return
        number += 1
        if first.endswith(b"\n"):  # the usual case: the whole line within one block
            yield number, first
            continue
        length = len(first) + _rest_of_line(handle, limit)
        if length > limit:
            raise _too_long(path, number, limit)
        handle.seek(start)
        yield number, handle.read(length)


def count_lines(handle: BufferedReader, path: Path, limit: int = MAX_LINE) -> int:
    """The lines of the JSON Lines file open as ``handle`` (a last one without its
    newline is not counted), read in blocks; a line longer than ``limit`` (at least a
    block, as for ``bounded_lines``) is refused as ``bounded_lines`` refuses it, as soon as
    it is measured, not at the end of the file."""
    count = since = 0  # lines so far; bytes since the last newline
    while block := handle.read(_BLOCK):
        first = block.find(b"\n")
        if first < 0:
            since += len(block)
        else:  # lines within one block are shorter than the limit: a block is smaller
            if since + first + 1 > limit:
                raise _too_long(path, count + 1, limit)
            count += block.count(b"\n")
            since = len(block) - block.rfind(b"\n") - 1
        if since > limit:
            raise _too_long(path, count + 1, limit)
    return count


def _too_long(path: Path, number: int, limit: int) -> SchemaError:
    return SchemaError(
        f"{path}: line {number} is longer than {limit} bytes, the most a line of a "
        "run's JSON Lines file may hold (onrecord never writes a longer one): the "
        "file was damaged or forged; restore it from a copy of the run"
    )


_BLOCK = 1 << 20


def _rest_of_line(handle: BufferedReader, limit: int) -> int:
    """Bytes from here to the end of the line (its newline included, or the end of the
    file), counting no further than just past ``limit``; nothing is kept."""
    length = 0
    while length <= limit and (block := handle.read(_BLOCK)):
        end = block.find(b"\n") + 1
        if end:
            return length + end
        length += len(block)
    return length
