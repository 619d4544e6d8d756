"""Ctrl-C and the process pool: the terminal sends SIGINT to the whole process group, so a
worker that could take it printed its own traceback (one still importing, at startup)
under the run's "interrupted" line. Workers are started with SIGINT held; the parent
stops them itself."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from onrecord.runner import ProcessPoolExecutor, plan_run, start_run

HERE = "tests.runner.test_pool_interrupts"
GOAL, HOLE = (1, 1, 2, 2, 1, 2), (2, 1)


def sigint_held(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """To the goal when this process holds SIGINT back, into a hole when it would take it."""
    held = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    for action in GOAL if held else HOLE:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    return "held" if held else "would be interrupted"


def test_pool_workers_never_take_the_terminals_ctrl_c(tmp_path: Path) -> None:
    protocol = plan_run("frozenlake", f"{HERE}:sigint_held", seeds=list(range(6)))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with ProcessPoolExecutor(2, chunk_size=1) as pool:
        result = start_run(tmp_path / "run", protocol, executor=pool)
    assert len(result.report.trials) == 6
    assert all(trial.outcome == "pass" for trial in result.report.trials), [
        trial.outcome for trial in result.report.trials
    ]
    # ... while this process takes Ctrl-C as before: the mask is put back after submit.
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    assert signal.SIGINT not in before


def test_a_ctrl_c_taken_by_another_thread_waits_until_the_workers_are_started() -> None:
    # The held mask covers the submitting thread only. A Ctrl-C taken by another thread
    # (the pool's manager, a progress display) still raised KeyboardInterrupt in the
    # main thread mid-submit, between starting a worker and sending it its start-up
    # data: the worker printed "EOFError: Ran out of input" under "interrupted".
    from onrecord.runner._interrupts import interrupts_held

    ready, sent = threading.Event(), threading.Event()

    def other_thread() -> None:  # started before: SIGINT is not held here
        ready.wait()
        # To this thread itself: taken before pthread_kill returns. (Sent to the process,
        # the kernel may pick a third, sleeping thread and deliver it later.)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        sent.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    finished_inside = False

    def submit_like() -> None:
        nonlocal finished_inside
        with interrupts_held():
            ready.set()
            assert sent.wait(10)
            worker.join()
            for _ in range(100_000):  # bytecode boundaries, where a handler would run
                pass
            finished_inside = True

    with pytest.raises(KeyboardInterrupt):
        submit_like()
    assert finished_inside
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
