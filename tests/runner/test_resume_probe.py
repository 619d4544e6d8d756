"""Resume and start edge cases: settings named on the command line are compared with
the run (and only those), changed check versions and zero counts are refused before
anything runs, a locked directory gets no run.json, torn error lines are cut."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
import pytest

from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.errors import InputError
from onrecord.runner import Executor, JobResult, RunStore, plan_run, start_run
from onrecord.runner._job import EpisodeJob, run_chunk
from tests.runner.conftest import onrecord


def _always(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(True, "always", {})


VERSIONED = [OutcomeCheck("probe", os.environ.get("ONRECORD_PROBE_CHECK_VERSION", "v1"), _always)]
"""A check whose version a resuming process can change through the environment."""


class _FirstOnly(Executor):
    """Runs the first job only: a run interrupted after one episode."""

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        yield from run_chunk(list(jobs[:1]))


def _lake(run_dir: Path, *, checks: tuple[str, ...] = ("default",)) -> None:
    protocol = plan_run("frozenlake", "walks_to_goal", seeds=[0, 1], repeats=2, checks=checks)
    start_run(run_dir, protocol, executor=_FirstOnly())


def test_resume_compares_only_the_settings_the_command_line_names(run_dir: Path) -> None:
    _lake(run_dir)
    # Before: without an environment the flags were ignored and the run resumed.
    for args in (["--resume", str(run_dir)], ["--resume", "--out", str(run_dir)]):
        done = onrecord("run", *args, "--repeats", "5", "--seeds", "0,1", "--no-progress")
        assert done.returncode == 3, done.stdout + done.stderr
        assert "repeats: the run has 2, the new settings say 5" in done.stderr
        assert "seeds" not in done.stderr  # named, but equal to the run's
    assert len(RunStore.open(run_dir).committed()) == 1
    # Before: settings left out were compared as their defaults (repeats 1, seeds [0]).
    same = ["frozenlake", "--agent", "walks_to_goal", "--resume", "--out", str(run_dir)]
    done = onrecord("run", *same, "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(RunStore.open(run_dir).committed()) == 4


def test_resume_refuses_a_changed_check_version_before_running(run_dir: Path) -> None:
    _lake(run_dir, checks=("tests.runner.test_resume_probe:VERSIONED",))
    before = (run_dir / "episodes.jsonl").read_bytes()
    done = onrecord("run", "--resume", str(run_dir), env={"ONRECORD_PROBE_CHECK_VERSION": "v2"})
    # Before: every remaining episode failed in its worker, one error each, exit 2.
    assert done.returncode == 3, done.stdout + done.stderr
    assert "probe: the run has v1, the code now has v2" in done.stderr
    assert (run_dir / "episodes.jsonl").read_bytes() == before
    assert not (run_dir / "errors.jsonl").read_bytes()
    assert onrecord("run", "--resume", str(run_dir)).returncode == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--repeats", "0"], "repeats must be a positive integer, got 0"),
        (["--workers", "0"], "workers must be a positive integer, got 0"),
        (["--executor", "process", "--workers", "0"], "workers must be a positive integer"),
    ],
)
def test_zero_repeats_or_workers_are_refused(run_dir: Path, flags: list[str], message: str) -> None:
    done = onrecord("run", "frozenlake", "--agent", "walks_to_goal", *flags, "--out", str(run_dir))
    # Before: 0 silently became 1 repeat / the CPU count, and the run was accepted.
    assert done.returncode == 3, done.stdout + done.stderr
    assert message in done.stderr
    assert not (run_dir / "run.json").exists()


def test_a_start_into_a_locked_directory_writes_no_run_json(run_dir: Path) -> None:
    run_dir.mkdir()
    protocol = plan_run("frozenlake", "walks_to_goal")
    with open(run_dir / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another run is starting here
        with pytest.raises(InputError, match="another onrecord process"):
            start_run(run_dir, protocol)
    # Before: run.json was written first, then the lock refused: a second start could
    # replace the first one's run.json under its records.
    assert not (run_dir / "run.json").exists()
    start_run(run_dir, protocol)
    assert len(RunStore.open(run_dir).committed()) == 1


def test_a_torn_line_in_errors_jsonl_is_cut_on_resume(run_dir: Path) -> None:
    protocol = plan_run("tests.runner.helpers:unportable", "noop", seeds=[0, 1])
    start_run(run_dir, protocol)
    errors = run_dir / "errors.jsonl"
    with open(errors, "ab") as handle:
        handle.write(b'{"case_id":"tests.runner')  # killed mid-write
    onrecord("run", "--resume", str(run_dir))
    lines = errors.read_bytes().splitlines()
    # Before: the next error line was glued to the torn one.
    assert len(lines) == 4
    assert all(orjson.loads(line)["error"] for line in lines)


def test_a_refused_out_directory_is_left_as_it_was_found(tmp_path: Path) -> None:
    """--out into a user's own non-empty folder is refused and leaves no .lock behind."""
    folder = tmp_path / "my-notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("buy milk\n")
    done = onrecord("run", "frozenlake", "--agent", "walks_to_goal", "--out", str(folder))
    assert done.returncode == 3
    assert "already exists and is not empty" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["todo.txt"]
