"""The CI walkthrough of docs/ci.md with a partial run: the hints it prints work pasted.

1. ``onrecord compare BASELINE CANDIDATE`` refused a candidate missing an episode with
   "(or compare the report.json files to compare only the recorded pairs)"; pasted, that
   comparison was refused too ("repeats or seeds differ"), as it is whenever only one
   run misses episodes: the usual CI case, a complete baseline. It is offered only when
   the report files compare (both runs miss the same episodes), and then it works.
2. ``onrecord gate RUN`` on a partial run said "`onrecord run --resume` retries them",
   which refuses for want of a directory; its log and ``--markdown`` summary now give
   the command with the run's path, quoted for the shell.

Real runs of the remittance environment with an agent module of the user's own that
sleeps (until the episode time limit stops it) on one episode while a file ``slow`` is
beside it.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.cli_process import line_after, onrecord
from tests.sleeping_agent import write_sleeping_agent


def _agents(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    if not folder.exists():
        write_sleeping_agent(folder, "ciagent53", repeats=(1,))
    return folder


def _run(tmp_path: Path, out: Path, agent: str, code: int) -> None:
    done = onrecord(
        *("run", "remittance", "--agent", agent, "--tasks", "full-01", "--repeats", "2"),
        *("--episode-timeout", "0.5", "--no-progress", "--out", out),
        pythonpath=_agents(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == code, done.stdout + done.stderr


def test_compare_offers_the_report_files_only_when_they_compare(tmp_path: Path) -> None:
    _run(tmp_path, Path("baseline"), "careful", 0)
    _run(tmp_path, Path("candidate"), "ciagent53:make", 2)  # full-01#1 timed out
    refused = onrecord("compare", "baseline", "candidate", cwd=tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "onrecord run --resume candidate` retries them" in refused.stderr
    # Pasted, it was refused as well: the baseline holds full-01#1, the candidate not.
    assert "report.json" not in refused.stderr, refused.stderr
    files = onrecord("compare", "baseline/report.json", "candidate/report.json", cwd=tmp_path)
    assert files.returncode == 3, files.stdout + files.stderr

    _run(tmp_path, Path("other"), "ciagent53:make", 2)  # misses the same episode
    both = onrecord("compare", "other", "candidate", cwd=tmp_path)
    assert both.returncode == 3, both.stdout + both.stderr
    assert "(or compare the report.json files to compare only the recorded pairs)" in both.stderr
    pasted = onrecord("compare", "other/report.json", "candidate/report.json", cwd=tmp_path)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert "comparison 1 paired trial " in pasted.stdout


def test_gate_on_a_partial_run_names_the_resume_command_that_works(tmp_path: Path) -> None:
    run = Path("runs/cand idate")  # a space: the command must be quoted to be pasted
    _run(tmp_path, run, "ciagent53:make", 2)
    (tmp_path / "policy.toml").write_text('[[requirements]]\ncheck = "expected_changes"\n')
    gate = ("gate", run, "--policy", "policy.toml")
    summary = tmp_path / "summary.md"
    first = onrecord(*gate, "--markdown", summary, cwd=tmp_path, columns=80)
    assert first.returncode == 2, first.stdout + first.stderr
    command = line_after("planned episodes have no trial; `", first.stdout).split("`")[0]
    assert shlex.split(command) == ["onrecord", "run", "--resume", str(run)], first.stdout
    assert "onrecord run --resume 'runs/cand idate'\\` retries them" in summary.read_text()

    (tmp_path / "mine" / "slow").unlink()  # what the user fixed before resuming
    resumed = onrecord(*shlex.split(command)[1:], cwd=tmp_path, pythonpath=tmp_path / "mine")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    again = onrecord(*gate, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "incomplete" not in again.stdout
