"""A scratch directory whose marker is a FIFO (no onrecord makes one) is left alone by
the sweeps, which must not block opening it: the sweep runs as every run, resume and
regrade starts, and a process pool's shutdown runs the workers' one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord._scratch import MARKER

_SWEEPS = (
    "from onrecord._scratch import remove_abandoned_scratch as sweep\n"
    "from onrecord.runner._worker_scratch import remove_scratch_of\n"
    "import sys\n"
    "print(sweep(sys.argv[1]), remove_scratch_of({int(sys.argv[2])}, sys.argv[1]))\n"
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo (POSIX)")
def test_a_fifo_marker_neither_blocks_the_sweeps_nor_is_removed(tmp_path: Path) -> None:
    folder = tmp_path / "onrecord-world-abcdefgh"
    folder.mkdir()
    os.mkfifo(folder / MARKER)
    done = subprocess.run(
        [sys.executable, "-c", _SWEEPS, str(tmp_path), str(os.getpid())],
        capture_output=True,
        text=True,
        timeout=60,  # blocked in open() before: no writer ever comes
        check=True,
    )
    assert done.stdout.split() == ["[]", "0"]
    assert (folder / MARKER).exists()
