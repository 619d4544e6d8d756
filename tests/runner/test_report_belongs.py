"""A run directory's report.json must grade the episodes that run recorded: a report and
its decision copied in from another run verify on their own digests, and were compared,
verified and rendered under the wrong run's name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from onrecord.compare import load_source
from onrecord.errors import ConsistencyError
from onrecord.html import write_report
from onrecord.runner import plan_run, regrade_run, start_run
from tests.runner.conftest import onrecord
from tests.runner.test_regrade import _lake_run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    _lake_run(root / "a")
    _lake_run(root / "b")  # same plan: only the recorded evidence (wall times) differs
    return root / "a", root / "b"


def _swapped(two_runs: tuple[Path, Path], tmp_path: Path) -> Path:
    a, b = two_runs
    target = tmp_path / "a"
    shutil.copytree(a, target)
    for name in ("report.json", "decision.json"):
        shutil.copy(b / name, target / name)
    return target


def test_a_run_s_own_report_is_accepted(two_runs: tuple[Path, Path]) -> None:
    a, b = two_runs
    assert load_source(a).report.digest != load_source(b).report.digest
    assert onrecord("verify", str(a)).returncode == 0


def test_a_report_copied_from_another_run_is_refused(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    swapped = _swapped(two_runs, tmp_path)
    with pytest.raises(ConsistencyError, match="copied from another run"):
        load_source(swapped)
    with pytest.raises(ConsistencyError, match="copied from another run"):
        write_report(swapped, tmp_path / "page.html")
    for command in (("verify", str(swapped)), ("compare", str(swapped), str(two_runs[1]))):
        done = onrecord(*command)
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "copied from another run" in done.stdout + done.stderr


def test_a_report_grading_episodes_the_run_never_recorded_is_refused(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    bigger = tmp_path / "bigger"
    start_run(
        bigger,
        plan_run(
            "frozenlake",
            "tests.runner.helpers:walker",
            seeds=[0, 1, 2],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )
    target = tmp_path / "a"
    shutil.copytree(two_runs[0], target)
    for name in ("report.json", "decision.json"):
        shutil.copy(bigger / name, target / name)
    with pytest.raises(ConsistencyError, match="did not record"):
        load_source(target)


def test_regrades_grade_the_run_s_own_evidence(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a = tmp_path / "a"
    shutil.copytree(two_runs[0], a)
    regrade_run(a, checks=["tests.runner.helpers:SHORT_V2"], name="stricter")
    regrade = a / "regrades" / "stricter"
    assert load_source(regrade).report.trials  # a real regrade belongs to its run
    assert onrecord("verify", str(a)).returncode == 0
    b = tmp_path / "b"
    shutil.copytree(two_runs[1], b)
    regrade_run(b, checks=["tests.runner.helpers:SHORT_V2"], name="stricter")
    for name in ("report.json", "decision.json"):
        shutil.copy(b / "regrades" / "stricter" / name, regrade / name)
    with pytest.raises(ConsistencyError, match="copied from another run"):
        load_source(regrade)
    assert onrecord("verify", str(a)).returncode == 3
