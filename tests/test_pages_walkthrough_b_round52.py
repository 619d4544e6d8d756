"""Round 52 walk of evidence.md, checks.md, writing-a-task.md, domain-remittance.md and
domain-ledger.md as a new user: what the walk found wrong, pinned."""

from __future__ import annotations

from pathlib import Path

from tests.cli_process import onrecord


def _two_runs(tmp_path: Path) -> None:
    for name in ("a", "b"):
        done = onrecord(
            "run",
            "frozenlake",
            "--agent",
            "walks_to_goal",
            "--out",
            f"runs/{name}",
            "--no-progress",
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr


def test_resume_of_one_run_with_out_of_another_names_both_directories(tmp_path: Path) -> None:
    # writing-a-task.md step 8: a user who ran with --config (out = runs/careful) resumes
    # runs/sloppy with the same config. The run directory was taken for an environment:
    # "unknown environment 'runs/sloppy'", which says nothing of the two directories.
    _two_runs(tmp_path)
    done = onrecord("run", "--resume", "runs/a", "--out", "runs/b", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "unknown environment" not in done.stderr
    assert "--resume runs/a and --out runs/b" in done.stderr
    assert "two different run directories" in done.stderr
    (tmp_path / "b.toml").write_text('out = "runs/b"\n')
    done = onrecord("run", "--config", "b.toml", "--resume", "runs/a", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "two different run directories" in done.stderr, done.stderr


def test_resume_of_a_run_with_its_own_out_still_resumes(tmp_path: Path) -> None:
    _two_runs(tmp_path)
    done = onrecord("run", "--resume", "runs/a", "--out", "./runs/a/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "runs/a" in done.stdout
