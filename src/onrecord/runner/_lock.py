"""The exclusive lock a run directory is written under (one writer at a time)."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import BinaryIO

from onrecord.errors import InputError

__all__ = ["LOCK_NAME", "lock_directory", "unlock"]

LOCK_NAME = ".lock"


def lock_directory(path: Path) -> BinaryIO:
    """An exclusive lock on a run directory (released when the process dies)."""
    lock = open(path / LOCK_NAME, "a+b")  # noqa: SIM115
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        lock.close()
        raise InputError(
            f"another onrecord process is writing to {path}; wait for it to "
            "finish (or stop it) before resuming"
        ) from exc
    return lock


def unlock(lock: BinaryIO) -> None:
    """Release a lock taken by ``lock_directory``."""
    if not lock.closed:
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        lock.close()
