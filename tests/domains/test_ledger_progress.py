"""The invoice ledger experiment from Python shows its steps as ``onrecord ledger run``
does when asked (``run_ledger_experiment(dir, progress=True)``); silent by default, and a
callback of the caller's still hears the lines it always did."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.domains.ledger import CLASSIC_RUNS, run_ledger_experiment
from onrecord.domains.ledger._experiment import LEDGER_STEPS


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stderr is pytest's capture, not a terminal (as a CI log), whatever the
    environment running the tests says."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


def test_progress_true_shows_the_steps_as_the_command_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_ledger_experiment(tmp_path / "ledger", progress=True)
    assert result.ok
    out, text = capsys.readouterr()
    assert not {c for c in text if ord(c) < 32 and c != "\n"}, repr(text)  # no bar codes
    lines = text.splitlines()
    # After the first step, at most one every 10 seconds, and after the last; the
    # episode's name without "ledger " before it, as `onrecord ledger run` shows it.
    assert lines[0].startswith(
        f"ledger steps 1/{LEDGER_STEPS} · correct-seed7-attempt1: accept done · "
    ), lines
    last = result.classic[-1]
    assert lines[-1].startswith(
        f"ledger steps {LEDGER_STEPS}/{LEDGER_STEPS} · classic {last['name']}: "
        f"{last['decision'].decision} done · "
    ), lines
    assert all(line.startswith("ledger steps ") for line in lines), lines
    assert out == ""  # the caller's stdout is left alone


@pytest.mark.parametrize("progress", [None, False])
def test_silent_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], progress: bool | None
) -> None:
    result = run_ledger_experiment(tmp_path / "ledger", progress=progress)
    assert len(result.episodes) + len(result.classic) == LEDGER_STEPS
    assert capsys.readouterr() == ("", "")


def test_a_callback_hears_every_step_and_nothing_is_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    heard: list[str] = []
    run_ledger_experiment(tmp_path / "ledger", progress=heard.append)
    assert len(heard) == LEDGER_STEPS
    assert heard[0] == "ledger correct-seed7-attempt1: accept"
    assert heard[-1].startswith(f"classic {CLASSIC_RUNS[-1].name}: ")
    assert capsys.readouterr() == ("", "")
