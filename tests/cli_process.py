"""The installed ``onrecord`` command, run as a real process (exit codes and output as a
CI job sees them; forked warm, ``tests/warm_client.py``, where that is the same)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.warm_client import run_onrecord


def onrecord(
    *args: str | Path,
    timeout: float = 300,
    cwd: Path | None = None,
    columns: int = 200,
    pythonpath: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``onrecord ARGS`` from this virtualenv (in ``cwd``), in a terminal ``columns``
    wide (wide by default, for tables); ``pythonpath`` is where the user's own modules
    are, set as a user sets it (``PYTHONPATH=. onrecord ...``)."""
    env = {**os.environ, "COLUMNS": str(columns)}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return run_onrecord([str(arg) for arg in args], env=env, cwd=cwd, timeout=timeout)


def line_after(marker: str, text: str) -> str:
    """What follows ``marker`` on the one line of ``text`` that holds it (a printed hint
    must be whole on one line to be pasted)."""
    lines = [line for line in text.splitlines() if marker in line]
    assert len(lines) == 1, text
    return lines[0].split(marker, 1)[1]
