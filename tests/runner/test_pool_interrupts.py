"""Ctrl-C and the process pool: the terminal sends SIGINT to the whole process group, so a
worker that could take it printed its own traceback (one still importing, at startup)
under the run's "interrupted" line. Workers are started with SIGINT held; the parent
stops them itself."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

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
