"""``onrecord worldmodel run`` reports its progress where no bar is drawn (a CI log, a
file): plain lines on stderr, a few of them, no control characters; ``--no-progress``
turns them off, and the results on stdout are the same either way."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from onrecord import _progress
from onrecord.cli._progress import StepProgress
from tests.conftest import SMOKE_COMMAND, SmokeRun

ONRECORD = str(Path(sys.executable).parent / "onrecord")  # the installed command


def _console(*, terminal: bool = False) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=100), out


def _controls(text: str) -> set[str]:
    return {c for c in text if ord(c) < 32 and c != "\n"}


def test_a_worldmodel_run_in_a_ci_log_prints_progress_lines(
    smoke_world_model_output: SmokeRun,
) -> None:
    # The shared run is made as CI makes one: output captured, not a terminal.
    assert SMOKE_COMMAND == ("worldmodel", "run", "--smoke", "--output-dir")
    out, err = smoke_world_model_output.stdout, smoke_world_model_output.stderr
    # Before: stderr was empty until the end, the bar being drawn only on a terminal.
    lines = err.splitlines()
    assert lines[0].startswith("world-model steps 1/17 · protocol done · ")
    assert lines[-1].startswith("world-model steps 17/17 · plots done · ")
    assert all(line.startswith("world-model steps ") for line in lines)
    assert len(lines) <= 17  # at most one a step, and one every 10 seconds: no flood
    assert not _controls(err)  # no ANSI colours or cursor moves in a log
    # The results on stdout hold none of it.
    assert "world-model steps" not in out
    assert "closed loop (same planner, paired seeds)" in out


def test_no_progress_turns_the_lines_off_and_changes_no_result(smoke_world_model_run: Path) -> None:
    """``--no-progress`` prints nothing on stderr, and the results on stdout are the same
    either way (a replay goes through the same progress as a run, ten times faster)."""
    loud, quiet = (
        subprocess.run(
            [ONRECORD, "worldmodel", "analyze", "--replay", str(smoke_world_model_run), *flag],
            capture_output=True,  # not a terminal, as in CI
            text=True,
            env={**os.environ, "PYTHONIOENCODING": "utf-8", "TERM": "xterm-256color"},
            timeout=600,
        )
        for flag in ([], ["--no-progress"])
    )
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    assert loud.stderr.splitlines()[-1].startswith("world-model replay ")
    assert quiet.stderr == ""
    assert loud.stdout == quiet.stdout
    assert "world-model" not in loud.stdout


def test_lines_at_most_every_interval_and_always_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    console, out = _console()
    monkeypatch.setattr(_progress, "LINE_INTERVAL", 3600.0)
    with StepProgress(console, "steps", 5) as progress:
        for label in ("a", "b", "c", "d", "e"):
            progress.step(label)
    lines = out.getvalue().splitlines()
    # The first step and the last; the others came sooner than the interval.
    assert [line.rsplit(" · ", 1)[0] for line in lines] == [
        "steps 1/5 · a done",
        "steps 5/5 · e done",
    ]

    console, out = _console()
    monkeypatch.setattr(_progress, "LINE_INTERVAL", 0.0)
    with StepProgress(console, "steps", 3) as progress:
        for label in ("a", "b", "c"):
            progress.step(label)
    assert len(out.getvalue().splitlines()) == 3  # one a step once the interval passed


def test_a_stopped_run_says_where_it_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    console, out = _console()
    monkeypatch.setattr(_progress, "LINE_INTERVAL", 3600.0)

    def interrupted() -> None:
        with StepProgress(console, "steps", 17) as progress:
            for label in ("protocol", "training data", "models"):
                progress.step(label)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("steps 3/17 · models done · ")
    assert len(lines) == 2

    # Stopped before any step (a refused directory): nothing is printed.
    console, out = _console()
    with StepProgress(console, "steps", 17):
        pass
    assert out.getvalue() == ""


def test_more_steps_than_planned_never_read_past_the_total() -> None:
    console, out = _console()
    with StepProgress(console, "steps", 1) as progress:
        progress.step("a")
        progress.step("b")
    assert out.getvalue().splitlines()[-1].startswith("steps 2/2 · b done")


def test_no_lines_on_a_terminal_or_when_disabled() -> None:
    console, out = _console(terminal=True)
    with StepProgress(console, "steps", 2) as progress:
        progress.step("a")
        progress.step("b")
    assert "a done" not in out.getvalue()  # the bar, transient, is all a terminal gets

    console, out = _console()
    with StepProgress(console, "steps", 2, enabled=False) as progress:
        progress.step("a")
        progress.step("b")
    assert out.getvalue() == ""
