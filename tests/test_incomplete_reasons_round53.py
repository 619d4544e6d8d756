"""An incomplete run says why, and a resume that cannot import the agent refuses.

1. A run whose every episode timed out was decided indeterminate "no check in the report
   matches 'expected_changes': the report holds no trial" (headlined "undecided:
   expected_changes"): a policy mistake to a CI reader, when nothing had been recorded.
   ``run``, ``show RUN`` and ``gate`` now lead with the run being incomplete, how many
   episodes and what stopped them ("2 timed out"), as for a partly timed-out run.
2. ``onrecord run --resume RUN`` without the PYTHONPATH the run was started with recorded
   "cannot import 'agent53'" once per remaining episode, kept in the run's errors.jsonl;
   it now refuses before anything runs, naming the module and the fix.

Real runs of the remittance environment with an agent module of the user's own, which
sleeps (until the episode time limit stops it) while a file ``slow`` is beside it.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli_process import onrecord
from tests.sleeping_agent import write_sleeping_agent


def _agent(folder: Path, slow: tuple[int, ...]) -> Path:
    return write_sleeping_agent(folder, "agent53", seeds=slow)


def _policy(tmp_path: Path) -> Path:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "expected_changes"\n')
    return policy


def _run(tmp_path: Path, slow: tuple[int, ...]) -> tuple[Path, Path, str]:
    """A run of 2 episodes (seeds 0, 1) whose ``slow`` seeds time out."""
    agents = _agent(tmp_path / "mine", slow)
    run = tmp_path / "run"
    done = onrecord(
        *("run", "remittance", "--agent", "agent53:make", "--tasks", "full-01"),
        *("--seeds", "0-1", "--episode-timeout", "0.5", "--no-progress"),
        *("--policy", _policy(tmp_path), "--out", run),
        pythonpath=agents,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr  # incomplete: never accepted
    return run, agents, done.stdout


def _headline(out: str) -> str:
    """The line under ``decision: …``: what decided it."""
    lines = out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("decision:"))
    assert "indeterminate" in lines[verdict], out
    return lines[verdict + 1].strip()


ALL_TIMED_OUT = "the run is incomplete: 2 planned episodes have no trial: 2 timed out"


def test_a_run_whose_every_episode_timed_out_says_so_in_run_show_and_gate(
    tmp_path: Path,
) -> None:
    run, _, out = _run(tmp_path, slow=(0, 1))
    assert _headline(out) == f"{ALL_TIMED_OUT}; undecided: expected_changes", out
    shown = onrecord("show", run)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert _headline(shown.stdout) == f"{ALL_TIMED_OUT}; undecided: expected_changes"
    gate = onrecord("gate", run, "--policy", tmp_path / "policy.toml")
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert _headline(gate.stdout) == f"{ALL_TIMED_OUT}; undecided: expected_changes"
    # gate's reason names the episodes too.
    assert "2 timed out (full-01#0, full-01#1)" in " ".join(gate.stdout.split())


def test_gates_saved_decision_on_such_a_run_verifies(tmp_path: Path) -> None:
    """The incomplete reason on an indeterminate (it was only ever added to an accept)
    is one `verify` recognises: it refused the saved decision as changed."""
    run, _, _ = _run(tmp_path, slow=(0, 1))
    saved = tmp_path / "gated.json"
    gate = onrecord("gate", run, "--policy", tmp_path / "policy.toml", "--output", saved)
    assert gate.returncode == 2, gate.stdout + gate.stderr
    verified = onrecord("verify", saved)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "policy decision (indeterminate" in verified.stdout, verified.stdout
    shown = onrecord("show", saved)
    assert _headline(shown.stdout) == f"{ALL_TIMED_OUT}; undecided: expected_changes"


def test_a_partly_timed_out_run_says_how_many_timed_out(tmp_path: Path) -> None:
    run, _, out = _run(tmp_path, slow=(1,))
    partly = "the run is incomplete: 1 planned episodes have no trial: 1 timed out"
    assert _headline(out) == partly, out
    shown = onrecord("show", run)
    assert _headline(shown.stdout) == partly, shown.stdout


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def test_a_resume_that_cannot_import_the_agent_refuses_before_recording(
    tmp_path: Path,
) -> None:
    run, agents, _ = _run(tmp_path, slow=(1,))
    before = _files(run)
    (agents / "slow").unlink()
    elsewhere = tmp_path / "elsewhere"  # a PYTHONPATH without the agent's folder
    elsewhere.mkdir()
    done = onrecord("run", "--resume", run, "--no-progress", pythonpath=elsewhere)
    assert done.returncode == 3, done.stdout + done.stderr
    error = " ".join(done.stderr.split())
    assert "its agent 'agent53:make' cannot be imported here" in error, error
    assert "No module named 'agent53'" in error
    assert "nothing was run or recorded" in error
    assert f"PYTHONPATH=FOLDER onrecord run --resume {run}" in error, error
    assert "not recorded" not in done.stdout
    assert _files(run) == before  # nothing recorded, no error line added
    # With the run's PYTHONPATH, the same resume finishes the run.
    done = onrecord("run", "--resume", run, "--no-progress", pythonpath=agents)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 episodes recorded" in done.stdout


def test_an_import_failing_only_inside_the_episode_is_still_recorded(tmp_path: Path) -> None:
    """The agent's module imports, so the resume runs; the import its factory makes
    fails in the episode, which is recorded as the agent failing, as before."""
    run, agents, _ = _run(tmp_path, slow=(1,))
    (agents / "slow").unlink()
    (agents / "inner").write_text("")
    done = onrecord("run", "--resume", run, "--no-progress", pythonpath=agents)
    assert done.returncode == 1, done.stdout + done.stderr  # recorded, and failed
    assert "2/2 episodes recorded" in done.stdout, done.stdout
    shown = onrecord("show", run, "--episode", "full-01#1")
    assert "no_such_module_of_the_tests" in shown.stdout, shown.stdout
