"""Shared fixtures of the runner tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def onrecord(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (the tests' modules importable)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [str(Path(sys.executable).parent / "onrecord"), *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh path for a run directory."""
    return tmp_path / "run"


def interrupt_run(
    *args: str, run_dir: Path, env: dict[str, str], after: int = 5, timeout: float = 20
) -> tuple[int, str]:
    """Start the real ``onrecord run ... --out run_dir`` and press Ctrl-C once ``after``
    episodes are recorded; its exit code and stderr. Whatever is left is killed."""
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "onrecord"), "run", *args, "--out", str(run_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Python ignores Ctrl-C if its parent ignored SIGINT (a CI shell's background job).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=True,  # its own group, so cleanup can kill stray workers
    )
    episodes = run_dir / "episodes.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        not episodes.exists() or episodes.read_bytes().count(b"\n") < after
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing left: all exited
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, stderr
