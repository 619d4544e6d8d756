"""A CI machine killed mid-write: real ``onrecord regrade`` and ``onrecord run``
processes killed with SIGKILL while they write a regrade or the run's grading, and a
run directory copied while being written. Afterwards ``verify``, ``show``, a second
regrade and ``run --resume`` must behave: nothing half-written is trusted, every
leftover is named or removed, and the resumed grading equals an uninterrupted run's.

A process is held at the exact moment by a wrapper (``_held``) that touches a marker
file and waits there; the test waits for the marker, never for a duration."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_process import onrecord
from tests.runner.test_executor_equivalence13 import grading as _grading

RUN_ARGS = ["remittance", "-a", "double_poster", "-s", "0", "-r", "1"]
RUN_ARGS += ["--executor", "inprocess", "--no-progress"]

# Runs ``onrecord ARGV`` with one function replaced by one that touches $HOLD_MARK and
# waits for ever when called for the file $HOLD_FILE: the process is then killed there.
_HELD = """
import os, sys, time, importlib
from pathlib import Path
module_name, attribute = os.environ["HOLD_AT"].rsplit(":", 1)
module = importlib.import_module(module_name)
original = getattr(module, attribute)
def held(*args, **kwargs):
    if os.fspath(args[0]).endswith(os.environ["HOLD_FILE"]):
        Path(os.environ["HOLD_MARK"]).touch()
        while True:
            time.sleep(1)
    return original(*args, **kwargs)
setattr(module, attribute, held)
from onrecord.cli._app import main
sys.exit(main(sys.argv[1:]))
"""


def _killed_while_held(tmp_path: Path, at: str, file: str, *args: str) -> None:
    """Run ``onrecord ARGS`` until it calls ``at`` for ``file``; SIGKILL it there."""
    mark = tmp_path / f"held-{len(list(tmp_path.glob('held-*')))}"
    env = {**os.environ, "HOLD_AT": at, "HOLD_FILE": file, "HOLD_MARK": str(mark)}
    process = subprocess.Popen(
        [sys.executable, "-c", _HELD, *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        while not mark.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run never interrupted (double_poster: 3 of 33 episodes fail, reject)."""
    run = tmp_path_factory.mktemp("reference") / "run"
    done = onrecord("run", *RUN_ARGS, "-o", run)
    assert done.returncode == 1, done.stderr
    return run


@pytest.fixture
def run(reference: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(reference, copy)
    return copy


def _staged(run: Path) -> list[str]:
    return sorted(p.name for p in run.iterdir() if p.name.startswith(".regrade-"))


# -- a regrade killed while it saves ------------------------------------------------


@pytest.mark.parametrize(
    ("at", "file"),
    [
        ("onrecord.runner._run:atomic_write_bytes", "decision.json"),  # report.json saved
        ("onrecord.runner._regrade:atomic_write_bytes", "changes.json"),  # the last file
    ],
)
def test_a_regrade_killed_while_saving_is_named_then_removed_never_listed(
    run: Path, tmp_path: Path, at: str, file: str
) -> None:
    _killed_while_held(tmp_path, at, file, "regrade", str(run), "--name", "N", "--no-progress")
    [leftover] = _staged(run)  # killed inside its staging directory
    assert not (run / "regrades" / "N").exists()
    verified = onrecord("verify", run, "--no-progress")
    assert verified.returncode == 0, verified.stderr
    # Before: "ok … 0 regrades", the leftover kept for ever without a word.
    assert f"{leftover}: an unfinished regrade a killed `onrecord regrade` left" in (
        verified.stdout
    )
    shown = onrecord("show", run)
    assert shown.returncode == 0, shown.stderr
    assert "it was re-graded" not in shown.stdout  # no table of regrades
    assert leftover in shown.stdout  # named in the summary line
    again = onrecord("regrade", run, "--name", "N", "--no-progress")
    assert again.returncode == 1, again.stdout + again.stderr  # double_poster: reject
    assert "removed 1 unfinished regrade(s)" in again.stdout
    assert leftover in again.stdout
    assert _staged(run) == []
    shown = onrecord("show", run)
    assert shown.returncode == 0, shown.stderr
    assert "show one: onrecord show" in shown.stdout
    assert "regrades/N" in shown.stdout
    assert onrecord("verify", run, "--no-progress").returncode == 0


def test_a_resume_removes_a_killed_regrades_leftover(run: Path, tmp_path: Path) -> None:
    _killed_while_held(
        tmp_path,
        "onrecord.runner._regrade:atomic_write_bytes",
        "changes.json",
        "regrade", str(run), "--name", "N", "--no-progress",
    )  # fmt: skip
    [leftover] = _staged(run)
    (run / "decision.json").unlink()  # so that the resume has something to do
    (run / "report.json").unlink()
    resumed = onrecord("run", "--resume", run, "--no-progress")
    assert resumed.returncode == 1, resumed.stderr
    assert leftover in resumed.stdout + resumed.stderr
    assert _staged(run) == []


def test_a_live_regrades_staging_is_neither_named_nor_removed(run: Path, tmp_path: Path) -> None:
    """The lock tells a killed regrade's directory from one still being written."""
    mark = tmp_path / "held-live"
    env = {
        **os.environ,
        "HOLD_AT": "onrecord.runner._regrade:atomic_write_bytes",
        "HOLD_FILE": "changes.json",
        "HOLD_MARK": str(mark),
    }
    args = ["regrade", str(run), "--name", "first", "--no-progress"]
    live = subprocess.Popen([sys.executable, "-c", _HELD, *args], env=env)
    try:
        while not mark.exists():
            assert live.poll() is None
            with contextlib.suppress(subprocess.TimeoutExpired):
                live.wait(timeout=0.02)
        [staging] = _staged(run)
        verified = onrecord("verify", run, "--no-progress")
        assert verified.returncode == 0, verified.stderr
        assert staging not in verified.stdout
        second = onrecord("regrade", run, "--name", "second", "--no-progress")
        assert second.returncode == 1, second.stdout + second.stderr
        assert "unfinished regrade" not in second.stdout
        assert staging in _staged(run)  # still there: the held regrade owns it
    finally:
        live.kill()
        live.wait()


# -- a run killed while grading -------------------------------------------------------


def _assert_ungraded_then_resumes(run: Path, reference: Path) -> None:
    verified = onrecord("verify", run, "--no-progress")
    # Before: "no such file: decision.json", or with a resume's old decision beside the
    # new report "decides a report other than the report.json beside it" (exit 3).
    assert verified.returncode == 0, verified.stderr
    # Round 39: the new report.json is the whole grading (verified), only undecided;
    # before, "its grading was interrupted" and `show` said "not graded yet".
    assert (
        "graded (report.json verified: all 33 recorded episodes) but not decided: "
        "decision.json is missing"
    ) in verified.stdout
    shown = onrecord("show", run)
    assert shown.returncode == 0, shown.stderr
    assert "not decided: the report above (report.json, verified)" in shown.stdout
    assert f"decide it: onrecord run --resume {run}" in shown.stdout
    assert "not graded yet" not in shown.stdout
    assert "incomplete run" not in shown.stdout  # every episode is recorded
    assert "duplicate-01#0" in shown.stdout  # recorded episodes not passed, listed
    assert not {"accept", "reject"} & set(shown.stdout.split())
    resumed = onrecord("run", "--resume", run, "--no-progress")
    assert resumed.returncode == 1, resumed.stderr
    assert _grading(run) == _grading(reference)
    assert onrecord("verify", run, "--no-progress").returncode == 0


def test_a_run_killed_between_report_and_decision_shows_ungraded_and_resumes(
    reference: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    _killed_while_held(
        tmp_path, "onrecord.runner._run:atomic_write_bytes", "decision.json",
        "run", *RUN_ARGS, "-o", str(run),
    )  # fmt: skip
    assert (run / "report.json").is_file()
    assert not (run / "decision.json").exists()
    _assert_ungraded_then_resumes(run, reference)


def test_a_resume_killed_while_regrading_never_leaves_an_old_decision_beside(
    reference: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    # An earlier grading of 20 episodes (the run was interrupted once, exit 130).
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (run / "episodes.jsonl").write_bytes(b"".join(lines[:20]))
    (run / "report.json").unlink()
    (run / "decision.json").unlink()
    from onrecord.runner import RunStore
    from onrecord.runner._run import grade_store

    grade_store(RunStore.open(run))
    old = (run / "decision.json").read_bytes()
    _killed_while_held(
        tmp_path, "onrecord.runner._run:atomic_write_bytes", "decision.json",
        "run", "--resume", str(run), "--no-progress",
    )  # fmt: skip
    # The old decision went before the new report: never one beside a report it did not
    # decide (before: kept, and the run read as edited).
    assert (run / "report.json").is_file()
    assert not (run / "decision.json").exists()
    assert old
    _assert_ungraded_then_resumes(run, reference)


# -- a run directory copied while being written -------------------------------------


def test_a_copy_with_a_torn_last_line_is_shown_verified_and_resumed(
    reference: Path, tmp_path: Path
) -> None:
    run = tmp_path / "copy"
    shutil.copytree(reference, run)
    (run / "report.json").unlink()  # copied before the run graded itself
    (run / "decision.json").unlink()
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (run / "episodes.jsonl").write_bytes(b"".join(lines[:20]) + lines[20][:1000])
    verified = onrecord("verify", run, "--no-progress")
    assert verified.returncode == 0, verified.stderr
    assert "20 of 33 episodes" in verified.stdout
    assert "a partial line (1000 B) at the end of episodes.jsonl" in verified.stdout
    shown = onrecord("show", run)
    assert shown.returncode == 0, shown.stderr
    assert "incomplete run: 20 of 33 planned episodes recorded" in shown.stdout
    assert "not graded yet (no report.json, so no decision)" in shown.stdout
    resumed = onrecord("run", "--resume", run, "--no-progress")
    assert resumed.returncode == 1, resumed.stderr
    assert _grading(run) == _grading(reference)
