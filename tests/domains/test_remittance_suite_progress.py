"""``run_demo_suite`` (eight agents × 33 tasks × 3 repeats in process: about half a
minute) shows its tasks on stderr when asked (``progress=True``), as the other long
Python entry points do; silent by default, and a callback of the caller's still hears
``"remittance TASK"`` after each task. Real episodes of the real environment."""

from __future__ import annotations

import pytest

from onrecord.domains.remittance import load_tasks, run_demo_suite

TASKS = load_tasks()[:2]


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stderr is pytest's capture, not a terminal (as a CI log), whatever the
    environment running the tests says."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


def test_progress_true_shows_each_task(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_demo_suite(agents=["careful"], tasks=TASKS, repeats=1, progress=True)
    assert not result.mismatches
    out, err = capsys.readouterr()
    assert not {c for c in err if ord(c) < 32 and c != "\n"}, repr(err)  # no bar codes
    lines = err.splitlines()
    # After the first task, at most one every 10 seconds, and after the last.
    assert lines[0].startswith(f"remittance tasks 1/2 · {TASKS[0].task_id} done · "), lines
    assert lines[-1].startswith(f"remittance tasks 2/2 · {TASKS[1].task_id} done · "), lines
    assert out == ""


@pytest.mark.parametrize("progress", [None, False])
def test_silent_by_default(capsys: pytest.CaptureFixture[str], progress: bool | None) -> None:
    run_demo_suite(agents=["careful"], tasks=TASKS, repeats=1, progress=progress)
    assert capsys.readouterr() == ("", "")


def test_a_callback_hears_each_task_and_nothing_is_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    heard: list[str] = []
    run_demo_suite(agents=["careful"], tasks=TASKS, repeats=1, progress=heard.append)
    assert heard == [f"remittance {task.task_id}" for task in TASKS]
    assert capsys.readouterr() == ("", "")
