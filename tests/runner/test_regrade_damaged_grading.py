"""``onrecord regrade`` grades a run's verified episode records and never reads the run's
own ``report.json`` or ``decision.json`` (missing after an interruption, or copied from
elsewhere: regrading is the remedy), but says when they do not verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_process import onrecord


@pytest.fixture
def run(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    done = onrecord("run", "frozenlake", "-a", "walks_to_goal", "-s", "0-1", "-o", out)
    assert done.returncode == 0, done.stderr
    return out


def test_a_clean_run_regrades_without_a_warning(run: Path) -> None:
    done = onrecord("regrade", run, "--name", "again")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stdout


@pytest.mark.parametrize("name", ["report.json", "decision.json"])
def test_an_edited_grading_file_is_named_and_the_records_still_graded(run: Path, name: str) -> None:
    path = run / name
    edit = {"report.json": (b'"pass"', b'"fail"'), "decision.json": (b'"accept"', b'"reject"')}
    before, after = edit[name]
    assert before in path.read_bytes()
    path.write_bytes(path.read_bytes().replace(before, after, 1))
    assert onrecord("verify", run).returncode == 3
    done = onrecord("regrade", run, "--name", "again")
    assert done.returncode == 0, done.stderr  # the verified records' decision
    text = " ".join(done.stdout.split())
    assert f"warning: {name} of the run does not verify" in text
    assert "this regrade graded the run's verified episode records" in text
    assert (run / "regrades" / "again" / "report.json").is_file()


def test_a_regrade_directory_has_the_modes_of_the_rest_of_the_run(run: Path) -> None:
    # Before: mkdtemp's owner-only 0700 survived the rename into RUN/regrades/NAME.
    assert onrecord("regrade", run, "--name", "again").returncode == 0
    regrades = run / "regrades"
    assert (regrades / "again").stat().st_mode & 0o777 == regrades.stat().st_mode & 0o777
