"""SIGTERM (a cancelled CI job, ``timeout``, ``docker stop``) stops a run as Ctrl-C
does: finished episodes saved, exit 130 with the resume command, and the resume ends
with exactly the planned episodes, the earlier records unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from tests.runner.conftest import ROOT, onrecord

AGENT = ["tests.runner.helpers:lake", "--agent", "tests.runner.helpers:slow_walker"]


def _terminate_after(args: list[str], run_dir: Path, episodes: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "onrecord"), "run", *args, "--out", str(run_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log, deadline = run_dir / "episodes.jsonl", time.monotonic() + 120
    while time.monotonic() < deadline and (
        not log.exists() or log.read_bytes().count(b"\n") < episodes
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)  # to the run only, as `timeout` and docker do
    return process


@pytest.mark.parametrize("executor", [["--executor", "inprocess"], ["--workers", "2"]])
def test_sigterm_saves_and_exits_130_then_resume_completes(
    run_dir: Path, executor: list[str]
) -> None:
    process = _terminate_after([*AGENT, "--seeds", "0-299", *executor], run_dir, 5)
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted; finished episodes are saved" in stderr
    # On one line, as typed: stderr is no terminal, and rich wrapped it at 80 columns,
    # inside the command a CI log shows for copy and paste.
    assert f"`onrecord run --resume --out {run_dir}` continues" in stderr
    before = (run_dir / "episodes.jsonl").read_bytes()
    assert before.endswith(b"\n")
    assert before.count(b"\n") >= 5

    resumed = onrecord("run", "--resume", str(run_dir), *executor, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    after = (run_dir / "episodes.jsonl").read_bytes()
    assert after.startswith(before)  # finished episodes byte for byte
    keys = [(r["case_id"], r["repeat"]) for r in map(orjson.loads, after.splitlines())]
    assert len(keys) == len(set(keys)) == 300
    assert onrecord("verify", str(run_dir)).returncode == 0
