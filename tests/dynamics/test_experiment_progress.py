"""The world-model experiment from Python shows its steps as ``onrecord worldmodel``
does when asked (``progress=True``): ``run_experiment`` takes about 10 s on ``--smoke``,
``replay`` seconds on a full run. Silent by default; a ``step`` callback still hears
every step either way."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from onrecord.dynamics.experiment import replay, run_experiment
from onrecord.dynamics.experiment._analyze import REPLAY_STEPS


def _stderr(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """A stderr with no descriptor (as a notebook's), not a terminal. Replaced in the
    test itself: pytest puts its own capture back after the fixtures are set up."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    return err


def _plain(text: str) -> list[str]:
    assert not {c for c in text if ord(c) < 32 and c != "\n"}, repr(text)
    return text.splitlines()


@pytest.mark.slow
def test_run_experiment_with_progress_shows_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stderr = _stderr(monkeypatch)
    heard: list[str] = []
    run_experiment(tmp_path / "wm", smoke=True, step=heard.append, progress=True)
    lines = _plain(stderr.getvalue())
    assert lines[0].startswith("world-model steps 1/17 · protocol done · "), lines
    assert lines[-1].startswith("world-model steps 17/17 · plots done · "), lines
    assert len(heard) == 17  # the caller's own callback still hears each step


def test_replay_with_progress_shows_every_step(
    smoke_world_model_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stderr = _stderr(monkeypatch)
    heard: list[str] = []
    replay(smoke_world_model_run, step=heard.append, progress=True)
    lines = _plain(stderr.getvalue())
    assert lines[-1].startswith(f"world-model replay {REPLAY_STEPS}/{REPLAY_STEPS} · "), lines
    assert "reports done" in lines[-1]
    assert len(heard) == REPLAY_STEPS


def test_replay_is_silent_by_default(
    smoke_world_model_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stderr = _stderr(monkeypatch)
    replay(smoke_world_model_run)
    replay(smoke_world_model_run, progress=False)
    assert stderr.getvalue() == ""
