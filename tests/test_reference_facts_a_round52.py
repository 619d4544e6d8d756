"""Facts of docs/runs-reference.md and docs/envkit-reference.md, checked against the real
command: where walking the reference pages found the code saying otherwise."""

from __future__ import annotations

from pathlib import Path

from tests.cli_process import onrecord

# A FrozenLake agent that walks to the goal, except on seed 1, where it calls sys.exit():
# that episode cannot be recorded, so the run stays incomplete while every recorded
# episode passes (the policy alone would accept it).
_AGENT = """
import sys

from onrecord.runner import AgentContext, agent_factory


@agent_factory
def make(ctx: AgentContext):
    def interact(env, observation, info):
        if ctx.seed == 1:
            sys.exit("this agent stops on seed 1")
        for action in (1, 1, 2, 2, 1, 2):
            env.step(action)

    return interact
"""


def _incomplete_passing_run(tmp_path: Path) -> Path:
    (tmp_path / "stops_on_one.py").write_text(_AGENT, encoding="utf-8")
    run = tmp_path / "run"
    started = onrecord(
        "run",
        "frozenlake",
        "--agent",
        "stops_on_one:make",
        "--seeds",
        "0-1",
        "--out",
        run,
        "--no-progress",
        cwd=tmp_path,
        pythonpath=tmp_path,
    )
    assert started.returncode == 2, started.stdout + started.stderr
    assert "1/2 episodes recorded" in started.stdout, started.stdout
    return run


def test_regrade_of_an_incomplete_run_never_prints_accept(tmp_path: Path) -> None:
    """runs-reference.md, "Interrupted runs and unversioned checks": an interrupted run
    is re-graded with "a decision that is never accept (exit 2)". `onrecord regrade`
    exited 2 but printed `decision: accept` / `every requirement met` (the policy's
    verdict on the recorded episodes) above its "incomplete run" line, where `run` and
    `show` print `decision: indeterminate` with the reason: a CI log grepped for the
    verdict read an accept the exit code denied."""
    run = _incomplete_passing_run(tmp_path)
    regraded = onrecord("regrade", run, "--no-progress", cwd=tmp_path, pythonpath=tmp_path)
    assert regraded.returncode == 2, regraded.stdout + regraded.stderr
    out = regraded.stdout
    assert "decision: accept" not in out, out
    assert "every requirement met" not in out, out
    assert "decision: indeterminate" in out, out
    assert "the run is incomplete: 1 planned episodes have no trial" in out, out
    assert "incomplete run: 1 of 2 episodes recorded" in out, out
    # As `show` prints the same regrade.
    saved = next((run / "regrades").iterdir())
    shown = onrecord("show", saved, "--no-progress", cwd=tmp_path)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "decision: indeterminate" in shown.stdout, shown.stdout


def test_checks_named_like_one_of_the_environments_lists_them(tmp_path: Path) -> None:
    """``--checks reachd_goal`` said only "is not an import path": a user typing one of the
    environment's check names learns what --checks takes and what the checks are."""
    done = onrecord(
        "run", "frozenlake", "--agent", "walks_to_goal", "--checks", "reachd_goal",
        "--out", tmp_path / "run", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "--checks 'reachd_goal' is neither 'default'" in message, message
    assert "the environment's checks: reached_goal, no_hole_visited" in message
    assert not (tmp_path / "run").exists()
