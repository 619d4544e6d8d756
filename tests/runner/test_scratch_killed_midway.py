"""A scratch directory whose maker is killed while making or removing it is still found.

A process pool stopped by SIGTERM (a cancelled CI job) ends its workers wherever they
are. One caught inside ``shutil.rmtree`` of its tool world had sometimes removed the
marker before the rest: the directory, databases and all, was then "not onrecord's" to
every sweep, for ever (``test_a_pool_stopped_by_sigterm_leaves_no_scratch_directories``
failed that way now and then). Here a real process is killed (SIGKILL) at every step of
the removal and of the making, and what it leaves must be removed by the pool's cleanup
of its ended workers and by the next run's sweep.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from onrecord._scratch import MARKER, remove_abandoned_scratch
from onrecord.runner._worker_scratch import remove_scratch_of

ROOT = Path(__file__).resolve().parents[2]

# Kills itself (SIGKILL: no cleanup of any kind) at the STEP-th call of the functions in
# PATCHED whose path argument ends with one of SUFFIXES (any path when empty).
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from onrecord._scratch import ScratchDirectory

    step, phase = int(sys.argv[1]), sys.argv[2]
    calls = iter(range(10**6))

    def killing(function, suffixes=()):
        def wrapper(path, *args, **kwargs):
            if (not suffixes or str(path).endswith(suffixes)) and next(calls) == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(path, *args, **kwargs)
        return wrapper

    if phase == "make":
        os.open = killing(os.open, (".onrecord-scratch.new",))
        os.rename = killing(os.rename)
    directory = ScratchDirectory("toolworld")
    for name in ("world.sqlite", "world.sqlite-wal", "notes.txt"):
        with open(os.path.join(directory.name, name), "w") as file:
            file.write("x" * 1000)
    os.mkdir(os.path.join(directory.name, "blobs"))
    with open(os.path.join(directory.name, "blobs", "a"), "w") as file:
        file.write("y")
    if phase == "remove":
        os.unlink = killing(os.unlink)
        os.rmdir = killing(os.rmdir)
    directory.cleanup()
    """
)


def _killed_at(step: int, phase: str, scratch: Path) -> tuple[int, int, str]:
    """The child's exit code, pid and stderr."""
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(step), phase],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = child.communicate(timeout=60)
    return child.returncode, child.pid, stderr


def _left(scratch: Path) -> list[Path]:
    return sorted(scratch.iterdir())


def _every_step(phase: str, scratch: Path) -> list[tuple[int, list[str], int]]:
    """Kill the child at each step in turn, until one runs to its end: what each left
    (the names in its directory), and the pid to clean up after."""
    seen = []
    for step in itertools.count():
        assert step < 40, "the child was killed at every step of 40: it never ended"
        returncode, pid, stderr = _killed_at(step, phase, scratch)
        if returncode == 0:
            assert _left(scratch) == [], "a cleanup that ran to its end left its directory"
            return seen
        assert returncode == -9, stderr
        [directory] = _left(scratch)
        seen.append((step, sorted(p.name for p in directory.iterdir()), pid))
        sweep = remove_scratch_of({pid}, str(scratch)) if step % 2 else None
        if sweep is None:
            assert remove_abandoned_scratch(scratch), f"step {step}: the sweep saw nothing"
        else:
            assert sweep == 1, f"step {step}: the pool's cleanup removed nothing"
        assert _left(scratch) == [], f"step {step}: left {seen[-1][1]}"
        # The name says whose it is: the pool's parent needs no marker to find its own.
        assert f"-{pid}-" in directory.name, (directory.name, pid)
    raise AssertionError("unreachable")


def test_killed_at_any_step_of_its_removal_the_directory_is_still_swept(tmp_path: Path) -> None:
    seen = _every_step("remove", tmp_path)
    # Every file and the marker went one by one, the marker after the rest.
    assert len(seen) >= 7, seen
    assert all(MARKER in names for _, names, _ in seen[:-1]), seen
    assert seen[-1][1] == [], seen  # killed before its last rmdir: empty, no marker


def test_killed_while_making_it_the_directory_is_still_swept(tmp_path: Path) -> None:
    seen = _every_step("make", tmp_path)
    # Killed before the marker was opened (an empty directory), then before it was
    # renamed into place (only the pending marker, locked by a process now gone).
    assert [names for _, names, _ in seen] == [[], [f"{MARKER}.new"]], seen


def test_an_unmarked_directory_of_a_live_process_or_without_a_pid_is_kept(
    tmp_path: Path,
) -> None:
    ours = tmp_path / f"onrecord-toolworld-{os.getpid()}-abcdefgh"  # alive: being made
    older = tmp_path / "onrecord-toolworld-abcdefgh"  # no pid: an older onrecord's, or not ours
    for directory in (ours, older):
        directory.mkdir()
        (directory / "world.sqlite").write_text("x")
    assert remove_abandoned_scratch(tmp_path) == []
    assert remove_scratch_of({os.getpid()}, str(tmp_path)) == 0
    assert _left(tmp_path) == sorted([older, ours])
