"""A partial run is never accepted, and its output says so where the verdict is printed.

``onrecord run`` exited 2 for a run missing planned episodes, but printed the policy's
verdict on the recorded ones, ``decision: accept`` (and "every requirement met"), above
the line saying the run was incomplete; ``onrecord show RUN`` printed ``decision:
accept  (3 of 4 episodes)``. A CI log grepped for the verdict read an accept the exit
code denied. Real runs: FrozenLake, an agent that walks to the goal and sleeps on seed 1
until the episode time limit stops it.
"""

from __future__ import annotations

from pathlib import Path

from tests.runner.conftest import onrecord

AGENT = "tests.runner.test_episode_timeout:sleeps"
STOPPED = "the run is incomplete: 1 planned episodes have no trial"


def _run(run: Path) -> str:
    done = onrecord(
        *("run", "frozenlake", "--agent", AGENT, "--seeds", "0-3", "--executor", "inprocess"),
        *("--episode-timeout", "0.5", "--no-progress", "--out", str(run)),
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr  # incomplete: never accepted
    return done.stdout


def test_run_prints_a_partial_runs_verdict_as_indeterminate(tmp_path: Path) -> None:
    out = _run(tmp_path / "run")
    assert "decision: accept" not in out, out
    assert "decision: indeterminate" in out, out
    assert STOPPED in " ".join(out.split()), out
    assert "incomplete: 1 episodes are missing" in " ".join(out.split())


def test_show_prints_a_partial_runs_verdict_as_indeterminate(tmp_path: Path) -> None:
    _run(tmp_path / "run")
    shown = onrecord("show", str(tmp_path / "run"))
    assert shown.returncode == 0, shown.stderr
    assert "decision: accept" not in shown.stdout, shown.stdout
    assert "decision: indeterminate  (3 of 4 episodes)" in shown.stdout, shown.stdout
    assert STOPPED in " ".join(shown.stdout.split()), shown.stdout
    # The saved decision is untouched: verify re-makes it from the run's policy.
    assert onrecord("verify", str(tmp_path / "run")).returncode == 0
