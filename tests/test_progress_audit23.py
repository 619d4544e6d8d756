"""Commands silent for seconds on large inputs show progress on stderr like ``onrecord
run``: ``worldmodel analyze --replay`` (4–5 s on a full run), ``verify RUN`` (2–3.5 s on
2,970 episodes, growing with the run) and ``ledger run`` (a spinner on a terminal, nothing
in a CI log). With stderr a pipe, as in CI, they write plain lines, always one with the
total at the end; ``--no-progress`` turns them off, and stdout is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_process import onrecord


def _controls(text: str) -> set[str]:
    return {c for c in text if ord(c) < 32 and c != "\n"}


@pytest.fixture
def replay_dir(smoke_world_model_run: Path) -> Path:
    """A smoke world-model run (shared, read-only)."""
    return smoke_world_model_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete remittance run: 33 tasks, one seed, one repeat."""
    out = tmp_path_factory.mktemp("audit23") / "run"
    made = onrecord(
        "run", "remittance", "-a", "careful", "-s", "0", "-r", "1", "--executor", "inprocess",
        "--no-progress", "-o", out,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return out


@pytest.mark.slow
def test_worldmodel_analyze_reports_its_steps_in_a_ci_log(replay_dir: Path) -> None:
    loud = onrecord("worldmodel", "analyze", "--replay", replay_dir)
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    # Before: nothing on stderr until the tables. A line after the first step, one after
    # the last (between them, at most one every 10 seconds).
    assert lines[0].startswith("world-model replay 1/10 · manifest and hashes done · ")
    assert lines[-1].startswith("world-model replay 10/10 · reports done · ")
    assert all(line.startswith("world-model replay ") for line in lines)
    assert not _controls(loud.stderr)
    quiet = onrecord("worldmodel", "analyze", "--replay", replay_dir, "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert "every table and report recomputed" in loud.stdout
    assert loud.stdout == quiet.stdout


@pytest.mark.slow
def test_verify_counts_a_run_directorys_episodes_in_a_ci_log(run_dir: Path) -> None:
    loud = onrecord("verify", run_dir, run_dir / "report.json")
    assert loud.returncode == 0, loud.stderr
    # One line at the start and one at the end with the count reaching the total; the
    # single file after it verifies fast and writes none.
    lines = loud.stderr.splitlines()
    assert lines[0].startswith("episodes verified 0/33 · "), loud.stderr
    assert lines[-1].startswith("episodes verified 33/33 · "), loud.stderr
    assert all(line.startswith("episodes verified ") for line in lines)
    assert not _controls(loud.stderr)
    quiet = onrecord("verify", run_dir, run_dir / "report.json", "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert "run directory (33 of 33 episodes, 0 regrades)" in loud.stdout
    assert loud.stdout == quiet.stdout


def test_show_counts_the_episodes_it_verifies_in_a_ci_log(run_dir: Path) -> None:
    """show verifies a run directory whole before printing it, as verify does: the
    same count on stderr, and ``--no-progress`` for none (it was refused)."""
    loud = onrecord("show", run_dir)
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    assert lines[0].startswith("episodes verified 0/33 · "), loud.stderr
    assert lines[-1].startswith("episodes verified 33/33 · "), loud.stderr
    assert not _controls(loud.stderr)
    quiet = onrecord("show", run_dir, "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert loud.stdout == quiet.stdout
    single = onrecord("show", run_dir / "report.json")
    assert single.returncode == 0, single.stderr
    assert single.stderr == ""


def test_verify_of_a_single_file_writes_no_progress(run_dir: Path) -> None:
    done = onrecord("verify", run_dir / "report.json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.slow
def test_verify_and_show_say_how_far_they_got_before_a_failure(
    run_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "run"
    broken.mkdir()
    for entry in run_dir.iterdir():
        if entry.is_file():
            (broken / entry.name).write_bytes(entry.read_bytes())
    log = broken / "episodes.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:5]) + lines[5].replace(b'"', b"'", 1) + b"".join(lines[6:]))
    for command in ("verify", "show"):  # show verifies before it prints anything
        failed = onrecord(command, broken)
        assert failed.returncode == 3, failed.stderr
        # The last progress line gives the episodes verified before the damaged one.
        assert "episodes verified 5/33 · " in failed.stderr, failed.stderr
        assert "episodes verified 33/33" not in failed.stderr
        assert "episodes.jsonl" in failed.stderr, failed.stderr
    assert failed.stdout == ""  # no table printed from a record that did not verify


def test_ledger_run_reports_its_steps_in_a_ci_log(tmp_path: Path) -> None:
    loud = onrecord("ledger", "run", "--output-dir", tmp_path / "loud")
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    # Before: a spinner on a terminal and nothing at all in a CI log.
    assert lines[0].startswith("ledger steps 1/24 · correct-seed7-attempt1: accept done")
    assert lines[-1].startswith("ledger steps 24/24 · save done · "), loud.stderr
    assert all(line.startswith("ledger steps ") for line in lines)
    assert not _controls(loud.stderr)
    quiet = onrecord("ledger", "run", "--output-dir", tmp_path / "quiet", "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert "ledger experiment" in loud.stdout
    assert loud.stdout.replace("loud", "DIR") == quiet.stdout.replace("quiet", "DIR")
