"""The scratch directories of pool workers this process ended (or saw die).

A worker stopped by Ctrl-C or SIGTERM (``_stop_workers``), or ended by the episode
timeout's watchdog (``os._exit``), runs no cleanup: the tool worlds of its episodes in
flight, a SQLite database each, stayed in ``TMPDIR`` (6-8 of them, ~1.5 MB, per
interrupted run) until the next run's sweep. Each directory's marker names the process
that made it (``onrecord._scratch``), so once the pool has shut down the parent removes
those of its own workers. The marker's lock decides as in the sweep: a pid reused by a
live process holding its own directories keeps them. Only a parent killed outright
(``kill -9``, the out-of-memory killer) leaves them, for the next sweep.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection

from onrecord._scratch import _NAME, _sweep, named_pid, open_marker

__all__ = ["remove_scratch_of"]


def remove_scratch_of(pids: Collection[int], root: str | None = None) -> int:
    """Remove the scratch directories in ``root`` (the temporary directory) made by the
    ended processes ``pids``; how many were removed."""
    if not pids:
        return 0
    try:
        entries = list(os.scandir(tempfile.gettempdir() if root is None else root))
    except OSError:  # not ours to list: the next sweep finds nothing either
        return 0
    return sum(
        1
        for entry in entries
        if _NAME.fullmatch(entry.name) and _owner(entry.path) in pids and _sweep(entry)
    )


def _owner(directory: str) -> int | None:
    """The pid a scratch directory's name gives, or (made by an onrecord before
    2026-12-03) its marker (None: neither)."""
    named = named_pid(os.path.basename(directory))
    if named is not None:
        return named
    fd = open_marker(directory)
    if fd is None:
        return None
    try:
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return int(text) if text.isdigit() else None
