"""SIGTERM (a cancelled CI job, ``timeout``, ``docker stop``) stops a run as Ctrl-C
does: finished episodes saved, exit 130 with the resume command, and the resume ends
with exactly the planned episodes, the earlier records unchanged."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.runner._held import CHILD, held_env, wait_until_held
from tests.runner.conftest import ROOT, onrecord

AGENT = ["tests.runner.helpers:lake", "--agent", "tests.runner.helpers:slow_walker"]


def _terminate_after(args: list[str], run_dir: Path, episodes: int) -> tuple[int, str]:
    """Start the real ``onrecord run ARGS --out run_dir``, SIGTERM it once ``episodes``
    are committed, the run still going; its exit code and stderr. Whatever is left is
    killed.

    The run is held (``tests.runner._held``, ``episodes:N``) before it queues the next
    finished episode, until the signal lands: exactly ``episodes`` are committed then,
    and the run cannot have ended first (before, the test polled ``episodes.jsonl`` and
    signalled without checking the run was still going, racing its natural end)."""
    ready = run_dir.parent / f"{run_dir.name}.held"
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, "run", *args, "--out", str(run_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **held_env(ready, f"episodes:{episodes}")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, so cleanup can kill stray workers
    )
    try:
        held = wait_until_held(process, ready)
        assert held["lines"] == episodes, held
        process.send_signal(signal.SIGTERM)  # to the run only, as `timeout` and docker do
        _, stderr = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing left: all exited
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, stderr


@pytest.mark.parametrize("executor", [["--executor", "inprocess"], ["--workers", "2"]])
def test_sigterm_saves_and_exits_130_then_resume_completes(
    run_dir: Path, executor: list[str]
) -> None:
    code, stderr = _terminate_after([*AGENT, "--seeds", "0-299", *executor], run_dir, 5)
    assert code == 130, stderr
    assert "interrupted; finished episodes are saved" in stderr
    # On one line, as typed: stderr is no terminal, and rich wrapped it at 80 columns,
    # inside the command a CI log shows for copy and paste.
    assert f"`onrecord run --resume --out {run_dir}` continues" in stderr
    before = (run_dir / "episodes.jsonl").read_bytes()
    assert before.endswith(b"\n")
    assert before.count(b"\n") == 5  # exactly those committed when SIGTERM landed

    resumed = onrecord("run", "--resume", str(run_dir), *executor, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    after = (run_dir / "episodes.jsonl").read_bytes()
    assert after.startswith(before)  # finished episodes byte for byte
    keys = [(r["case_id"], r["repeat"]) for r in map(orjson.loads, after.splitlines())]
    assert len(keys) == len(set(keys)) == 300
    assert onrecord("verify", str(run_dir)).returncode == 0
