"""A start killed while writing ``run.json`` leaves only the lock and the manifest's
temporary file: the next start must take that directory, or no command ever could (no
``run.json`` for ``--resume``, "not empty" for a new run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.errors import InputError
from onrecord.runner import plan_run, start_run
from tests.cli_process import onrecord


def test_a_start_killed_while_writing_run_json_can_be_started_again(run_dir: Path) -> None:
    run_dir.mkdir()
    (run_dir / ".lock").touch()
    (run_dir / ".run.json.k2j4x9.tmp").write_bytes(b'{"schema":"onrecord.run/v1","run_')
    result = start_run(run_dir, plan_run("frozenlake", "walks_to_goal", seeds=[0, 1]))
    assert result.exit_code == 0
    assert len(result.report.trials) == 2
    assert sorted(p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize("name", ["notes.txt", ".run.json.tmp", "episodes.jsonl"])
def test_anything_else_in_the_directory_is_still_refused(run_dir: Path, name: str) -> None:
    run_dir.mkdir()
    (run_dir / name).write_bytes(b"mine")
    with pytest.raises(InputError, match="not empty; pass --resume"):
        start_run(run_dir, plan_run("frozenlake", "walks_to_goal"))
    assert [p.name for p in run_dir.iterdir()] == [name]
    assert (run_dir / name).read_bytes() == b"mine"


def test_onrecord_run_starts_again_in_the_directory_of_a_killed_start(run_dir: Path) -> None:
    run_dir.mkdir()
    (run_dir / ".lock").touch()
    (run_dir / ".run.json.k2j4x9.tmp").write_bytes(b'{"schema":"onrecord.run/v1","run_')
    # Before: the command's own early check said "not empty; pass --resume", and
    # --resume said "not a run directory": no command took the directory.
    done = onrecord("run", "frozenlake", "-a", "walks_to_goal", "-s", "0", "-o", run_dir)
    assert done.returncode == 0, done.stderr
    assert (run_dir / "run.json").is_file()
    assert not list(run_dir.glob(".run.json.*.tmp"))
    (run_dir.parent / "other").mkdir()
    (run_dir.parent / "other" / "notes.txt").write_text("mine")
    refused = onrecord("run", "frozenlake", "-a", "walks_to_goal", "-o", run_dir.parent / "other")
    assert refused.returncode == 3
    assert "not empty; pass --resume" in refused.stderr
