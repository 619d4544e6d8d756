"""The temporary files a killed writer of a run directory leaves, and their removal.

Every file onrecord writes into a run directory is written to a temporary name and
renamed into place (``atomic_write_bytes``, ``_commit._write_file``). A kill -9 between
the two leaves the temporary file: never read, never renamed, but kept for ever. Only a
process holding the directory lock may remove them (a writer without it might be about
to rename its own), and only names these writers make: anything else stays.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

__all__ = ["remove_leftovers"]

_TOP = re.compile(r"\.(?:run|report|decision)\.json\.[a-z0-9_]{8}\.tmp")
"""``tempfile.mkstemp(prefix=".NAME.", suffix=".tmp")``: eight characters between."""
_SIDE = re.compile(r"\.[0-9a-f]{64}\.[0-9]+\.tmp")
"""``files/.<sha256>.<pid>.tmp`` (``_commit._write_file``)."""


def remove_leftovers(run: Path) -> list[str]:
    """Remove the temporary files of writes that never finished; one notice for them."""
    removed = _remove(run, _TOP) + _remove(run / "files", _SIDE)
    if not removed:
        return []
    names = ", ".join(os.path.relpath(path, run) for path in removed)
    return [
        f"removed {len(removed)} unfinished temporary file(s) a killed onrecord left "
        f"in {run}: {names}"
    ]


def _remove(directory: Path, pattern: re.Pattern[str]) -> list[Path]:
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for entry in entries:
        # A regular file only: a link or a directory of that name is not ours to remove.
        if pattern.fullmatch(entry.name) and stat.S_ISREG(
            entry.stat(follow_symlinks=False).st_mode
        ):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed
