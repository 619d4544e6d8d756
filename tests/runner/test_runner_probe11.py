"""Probe 11 of the runner: what a kill -9 during the final writes leaves behind, the
lock refusal's advice per command, and where a task of a tasks file is named."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

from tests.runner.conftest import onrecord
from tests.runner.test_toolworld_provider import ENV

WALK = ["frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0-1"]


def _leftover(directory: Path, name: str) -> Path:
    """A temporary file exactly as ``atomic_write_bytes`` names it, as a kill -9 between
    its write and its rename leaves it."""
    fd, path = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.write(fd, b'{"half": ')
    os.close(fd)
    return Path(path)


def test_resume_removes_only_the_temporary_files_onrecord_itself_left(
    run_dir: Path, tmp_path: Path
) -> None:
    assert onrecord("run", *WALK, "--out", str(run_dir)).returncode == 0
    ours = [_leftover(run_dir, "report.json"), _leftover(run_dir, "decision.json")]
    side = run_dir / "files"
    side.mkdir(exist_ok=True)
    ours.append(side / f".{'ab' * 32}.4242.tmp")  # a side file cut off (_commit.py)
    ours[-1].write_bytes(b"partial")
    target = tmp_path / "keep.txt"
    target.write_text("not onrecord's")
    foreign = [run_dir / ".report.json.notes.tmp", run_dir / "report.json.bak"]
    for path in foreign:
        path.write_text("the user's")
    link = run_dir / ".decision.json.abcd1234.tmp"
    link.symlink_to(target)  # onrecord's name, but a link: not a file onrecord wrote
    # Until a resume, the run still verifies: the leftovers are no part of it.
    assert onrecord("verify", str(run_dir)).returncode == 0

    resumed = onrecord("run", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert "removed 3 unfinished temporary file(s)" in resumed.stdout + resumed.stderr
    assert not any(path.exists() for path in ours)
    assert all(path.read_text() == "the user's" for path in foreign)
    assert link.is_symlink()
    assert target.read_text() == "not onrecord's"
    assert onrecord("verify", str(run_dir)).returncode == 0


def _held(run_dir: Path) -> int:
    """The run directory's lock, held by this process as another onrecord would."""
    fd = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_a_locked_directory_refusal_gives_the_advice_of_the_refused_command(
    run_dir: Path,
) -> None:
    # Two `run --out DIR` started at once: the second finds only the first one's lock.
    run_dir.mkdir()
    fd = _held(run_dir)
    try:
        again = onrecord("run", *WALK, "--out", str(run_dir))
    finally:
        os.close(fd)
    assert onrecord("run", *WALK, "--out", str(run_dir)).returncode == 0
    fd = _held(run_dir)
    try:
        resume = onrecord("run", "--resume", str(run_dir))
    finally:
        os.close(fd)
    assert again.returncode == resume.returncode == 3
    assert f"another onrecord process is writing to {run_dir}" in again.stderr
    assert "choose another --out directory" in again.stderr
    assert "resuming" not in again.stderr
    assert "before resuming" in resume.stderr


_TASKS = """
[[tasks]]
case_id = "order-1"
input = { order_id = 1 }

[[tasks.expected_output.rules]]
rule = "changed"
table = "orders"
where = { id = 1, status = "new" }
to = { status = "dispensed" }
count = 1

[[tasks]]
case_id = "order-2"
input = { order_id = 1 }

[[tasks.expected_output.rules]]
rule = "changed"
table = "drugs"
where = { sku = "AMOX" }
to = { stock = "38" }
count = 1
"""


def test_a_task_of_a_tasks_file_is_refused_naming_the_file_and_its_place(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(_TASKS)
    out = str(tmp_path / "run")
    planned = onrecord("run", ENV, "-a", "careful", "--tasks-file", str(tasks), "--out", out)
    assert planned.returncode == 3
    assert (
        f"{tasks}: task 2: task ('order-2') expected_output['rules'][0] (changed drugs): "
        'to.stock = "38" can never match' in planned.stderr
    )
    # Narrowed by --tasks, the task keeps its place in the file.
    narrowed = onrecord(
        "run", ENV, "-a", "careful", "--tasks-file", str(tasks), "--tasks", "order-2", "--out", out
    )
    assert f"{tasks}: task 2: task ('order-2')" in narrowed.stderr
