"""A pool worker that dies in the middle of writing its results (the out-of-memory killer,
``kill -9``, the run's own stop on Ctrl-C) leaves half a message in the pool's result
pipe, and ``concurrent.futures``' manager thread waits for the rest forever: the run
hung for good, and Ctrl-C hung in the pool's shutdown (one time in five with two
workers). The agents here write that half message themselves, from the worker, so the
moment is exact: the run must go on (the lost episodes run again) and Ctrl-C must end it.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
HERE = "tests.runner.test_pool_half_message"
GOAL = (1, 1, 2, 2, 1, 2)
MARKS = "ONRECORD_TEST_HALF_MESSAGE"  # the folder where the agents leave their marks


def _write_half_a_result() -> None:
    """Start a result message of 1 MiB in the pool's result pipe and write 64 bytes of
    it: the pipe the worker's ``_process_worker`` frame holds as ``result_queue``."""
    frame = sys._getframe()
    while frame.f_code.co_name != "_process_worker":
        assert frame.f_back is not None, "not running in a process pool worker"
        frame = frame.f_back
    writer = frame.f_locals["result_queue"]._writer
    os.write(writer.fileno(), struct.pack("!i", 1 << 20) + bytes(64))


def _to_goal(env: Any) -> str:
    for action in GOAL:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return "done"


def half_then_exit(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """The first episode's worker dies mid-write; every later episode goes to the goal."""
    first = Path(os.environ[MARKS]) / "died"
    if not first.exists():
        first.touch()
        _write_half_a_result()
        os._exit(1)
    return _to_goal(env)


def half_then_wait(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Write half a result, say so, and wait for the run's Ctrl-C to end this worker."""
    _write_half_a_result()
    (Path(os.environ[MARKS]) / "ready").touch()
    time.sleep(600)
    return "never"


def _start(agent: str, run: Path, marks: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "onrecord",
            "run",
            "frozenlake",
            "--agent",
            f"{HERE}:{agent}",
            "--seeds",
            "0-3",
            "--executor",
            "process",
            "--workers",
            "1",
            "--no-progress",
            "--out",
            str(run),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), MARKS: str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the run hung on the half-written result\n{out}\n{err}") from None


def test_a_worker_dying_mid_result_costs_a_retry_not_the_run(tmp_path: Path) -> None:
    process = _start("half_then_exit", tmp_path / "run", tmp_path)
    out, err = _finish(process)
    assert (tmp_path / "died").exists()  # the half message was written
    assert process.returncode == 0, out + err  # every episode reached the goal: accepted
    lines = (tmp_path / "run" / "episodes.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert sorted(record["seed"] for record in records) == [0, 1, 2, 3]  # each once
    statuses = {result["status"] for record in records for result in record["trial"]["results"]}
    assert statuses == {"pass"}
    assert not (tmp_path / "run" / "errors.jsonl").read_bytes().strip()


def test_ctrl_c_ends_a_run_whose_worker_left_half_a_result(tmp_path: Path) -> None:
    process = _start("half_then_wait", tmp_path / "run", tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "ready").exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        out, err = _finish(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, out + err
    assert "interrupted" in err
    assert "Traceback" not in err
