"""A run killed outright (SIGKILL, or the SIGTERM of a cancelled CI job) leaves no
process-pool worker behind, and a resume still ends with exactly the planned episodes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.runner.conftest import ROOT, onrecord
from tests.runner.helpers import walker

HANG = "ONRECORD_TEST_HANG_DIR"
"""When set, the agent notes its worker's pid in this directory and hangs."""


def hanging_walker(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """``walker``; with ``HANG`` set, hangs (a stuck agent) after noting its pid."""
    directory = os.environ.get(HANG)
    if directory:
        Path(directory, str(os.getpid())).touch()
        time.sleep(600)
    return walker(env, observation, info)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_run_leaves_no_worker_behind(tmp_path: Path, sig: signal.Signals) -> None:
    hang, run_dir = tmp_path / "pids", tmp_path / "run"
    hang.mkdir()
    args = ["tests.runner.helpers:lake", "--agent", f"{__name__}:hanging_walker"]
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "onrecord"),
            "run",
            *args,
            "--seeds",
            "0-5",
            "--executor",
            "process",
            "--workers",
            "2",
            "--out",
            str(run_dir),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), HANG: str(hang)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pids: list[int] = []
    try:
        assert _wait_for(lambda: len(list(hang.iterdir())) == 2, 120), "workers never started"
        pids = [int(path.name) for path in hang.iterdir()]
        process.send_signal(sig)
        process.wait(timeout=60)
        # Each worker is stuck in its agent: only the worker itself can notice.
        assert _wait_for(lambda: not any(map(_alive, pids)), 30), "workers outlived the run"
    finally:
        process.kill()
        process.wait(timeout=60)
        for pid in filter(_alive, pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    resumed = onrecord("run", "--resume", str(run_dir), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    keys = [
        (record["case_id"], record["repeat"])
        for record in map(orjson.loads, (run_dir / "episodes.jsonl").read_bytes().splitlines())
    ]
    assert len(keys) == len(set(keys)) == 6  # each planned episode, once
    assert onrecord("verify", str(run_dir)).returncode == 0
