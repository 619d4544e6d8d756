"""Reading a received run directory bounds what it reads: a FIFO, a device or a
directory where a record's index file belongs is named as such, and a multi-GB line in
``episodes.jsonl`` is refused (naming the file and line) without being read into memory,
while the longest lines a real run writes still verify and resume."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord.episode._verify_files import MAX_LINE, bounded_lines, open_regular
from onrecord.errors import SchemaError
from onrecord.runner import plan_run, resume_run, start_run
from tests.cli_process import onrecord

HANG = 120  # seconds: only to turn a hang into a failure, never a timing assertion


class _Long(gym.Env[Any, Any]):
    """3,000 steps of 60 float32 (240 bytes, kept inline, under the blob threshold):
    record lines of several MB, longer than one read block."""

    observation_space = gym.spaces.Box(-1, 1, (60,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps = 0
        return np.linspace(-1, 1, 60, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        observation = np.sin(np.arange(60, dtype=np.float32) * self.steps).astype(np.float32)
        return observation, 0.0, self.steps >= 3000, False, {}


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("longlines")
    protocol = plan_run(
        "tests.runner.test_untrusted_run_reads:_Long", "random", seeds=[0, 1], max_steps=5000
    )
    start_run(root / "run", protocol)
    return root / "run"


def _copy(run: Path, tmp_path: Path) -> Path:
    shutil.copytree(run, tmp_path / "run")
    return tmp_path / "run"


def test_long_real_lines_verify_show_and_resume(long_run: Path, tmp_path: Path) -> None:
    lines = (long_run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    assert min(map(len, lines)) > 2 << 20  # past one read block
    for command in ("verify", "show", "report"):
        done = onrecord(command, long_run, timeout=HANG)
        assert done.returncode == 0, (command, done.stderr)
    # A resume of a run killed after its first record reads that line and goes on.
    run = _copy(long_run, tmp_path)
    with (run / "episodes.jsonl").open("r+b") as handle:
        handle.truncate(len(lines[0]) + 1000)  # the second record torn mid-write
    for name in ("report.json", "decision.json"):
        (run / name).unlink()
    result = resume_run(run)
    assert result.recorded_now == 1
    assert not result.errors
    assert (run / "episodes.jsonl").read_bytes().startswith(lines[0])


def test_multi_gb_line_is_refused_without_reading_it(long_run: Path, tmp_path: Path) -> None:
    run = _copy(long_run, tmp_path)
    episodes = run / "episodes.jsonl"
    with episodes.open("r+b") as handle:  # sparse: a 3 GiB line with no newline
        handle.truncate(episodes.stat().st_size + (3 << 30))
    for args in (("verify",), ("show",), ("report",)):
        done = onrecord(*args, run, timeout=HANG)
        assert done.returncode == 3, (args, done.stderr)
        assert f"{episodes}: line 3 is longer than {MAX_LINE} bytes" in done.stderr
        assert "restore it from a copy of the run" in done.stderr
        assert "Traceback" not in done.stderr
    with pytest.raises(SchemaError, match="line 3 is longer than"):
        resume_run(run)
    assert episodes.stat().st_size > 3 << 30  # a refused resume cut nothing off


def test_bounded_lines_reads_lines_around_the_block_size(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    lines = [b"a" * 10 + b"\n", b"b" * (3 << 20) + b"\n", b"\n", b"c" * ((1 << 20) - 1) + b"\n"]
    path.write_bytes(b"".join(lines) + b"torn")
    with open_regular(path) as handle:
        assert list(bounded_lines(handle, path)) == [
            *enumerate(lines, start=1),
            (5, b"torn"),
        ]
    with open_regular(path) as handle, pytest.raises(SchemaError, match="line 2 is longer"):
        list(bounded_lines(handle, path, limit=2 << 20))


@pytest.mark.parametrize("kind", ["fifo", "directory", "device link"])
def test_index_file_of_another_kind_is_named(tmp_path: Path, kind: str) -> None:
    for name in ("manifest.json", "run.json", "changes.json"):
        folder = tmp_path / f"{kind}-{name}"
        folder.mkdir()
        target = folder / name
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "directory":
            target.mkdir()
        else:
            target.symlink_to("/dev/zero")
        what = {
            "fifo": "a FIFO (named pipe)",
            "directory": "a directory",
            "device link": "a symbolic link",
        }
        commands = [("verify",), ("show",)]
        if name == "run.json":
            commands += [("report",), ("gate", "--policy", "p.json"), ("run", "--resume")]
        for args in commands:
            done = onrecord(*args, folder, timeout=HANG)
            assert done.returncode == 3, (args, done.stderr)
            assert f"{target} is {what[kind]}, not a regular file" in done.stderr, done.stderr
            assert "put a regular file there" in done.stderr
