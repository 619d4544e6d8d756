"""The exclusive lock a run directory is written under (one writer at a time)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import BinaryIO

from onrecord.errors import InputError

__all__ = ["LOCK_NAME", "lock_directory", "unlock"]

LOCK_NAME = ".lock"


def lock_directory(path: Path, *, resuming: bool = True) -> BinaryIO:
    """An exclusive lock on a run directory (released when the process dies).
    ``resuming`` picks the advice for a refusal: a new run can go elsewhere instead."""
    while True:
        lock = open(path / LOCK_NAME, "a+b")  # noqa: SIM115
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            lock.close()
            advice = (
                "wait for it to finish (or stop it) before resuming"
                if resuming
                else "choose another --out directory for a new run"
            )
            raise InputError(f"another onrecord process is writing to {path}; {advice}") from exc
        # A refused RunStore.create removes the lock file it made: a lock taken on that
        # file meanwhile locks nothing another process can see, so take the new one.
        if _same_file(lock, path / LOCK_NAME):
            return lock
        unlock(lock)


def _same_file(lock: BinaryIO, path: Path) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(lock.fileno())
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def unlock(lock: BinaryIO) -> None:
    """Release a lock taken by ``lock_directory``."""
    if not lock.closed:
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        lock.close()
