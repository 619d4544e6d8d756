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

from tests.runner._held import CHILD, held_env, wait_until_held
from tests.warm_client import run_onrecord

ROOT = Path(__file__).resolve().parents[2]


def onrecord(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (the tests' modules importable; forked warm,
    ``tests/warm_client.py``, where that is the same)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return run_onrecord(list(args), env=environment, cwd=ROOT, timeout=timeout)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh path for a run directory."""
    return tmp_path / "run"


def interrupt_run(
    *args: str,
    run_dir: Path,
    env: dict[str, str],
    after: int = 5,
    hangs: bool = False,
    timeout: float = 20,
) -> tuple[int, str]:
    """Start the real ``onrecord run ... --out run_dir`` and press Ctrl-C once ``after``
    episodes are committed, the run still going; its exit code and stderr. Whatever is
    left is killed.

    The run is held (``tests.runner._held``, ``episodes:after``) before it queues the
    next finished episode, until the signal lands: exactly ``after`` episodes are
    committed then, and the run cannot have ended first (before, the test polled
    ``episodes.jsonl`` and raced the run's end: 2.8-3.8 s to spare).

    ``hangs``: the run's other episodes never finish (its agent hangs), and Ctrl-C must
    land while the run waits for them. Such a run is not held (the hold is where a
    finished episode is appended, and no other one comes; holding there would take
    the signal away from the wait it tests): the signal comes once ``after`` episodes
    are committed, when the run, waiting for the hung ones, cannot end by itself."""
    if hangs:
        command, hold = [str(Path(sys.executable).parent / "onrecord")], {}
    else:
        ready = run_dir.parent / f"{run_dir.name}.held"
        ready.parent.mkdir(parents=True, exist_ok=True)
        command, hold = [sys.executable, "-c", CHILD], held_env(ready, f"episodes:{after}")
    process = subprocess.Popen(
        [*command, "run", *args, "--out", str(run_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env, **hold},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Python ignores Ctrl-C if its parent ignored SIGINT (a CI shell's background job).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=True,  # its own group, so cleanup can kill stray workers
    )
    try:
        if hangs:
            _wait_until_committed(process, run_dir / "episodes.jsonl", after)
        else:
            held = wait_until_held(process, ready)
            assert held["lines"] == after, held
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing left: all exited
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, stderr


def _wait_until_committed(process: subprocess.Popen[str], episodes: Path, count: int) -> None:
    """Wait until ``episodes`` holds ``count`` committed episodes; fail (killing the
    run) if it ended first or never got there."""
    deadline = time.monotonic() + 120

    def committed() -> int:
        return episodes.read_bytes().count(b"\n") if episodes.exists() else 0

    while committed() < count and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if committed() < count or process.poll() is not None:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"the run never committed {count} episodes: {process.communicate()}")
