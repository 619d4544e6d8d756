"""`onrecord report` pointed at the wrong thing says what to give it instead: a regrade
name that does not exist, a world-model run directory (its reports are files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.errors import InputError
from onrecord.html import report_data
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.runner.conftest import onrecord


def test_an_unknown_regrade_is_named_as_such(remittance_run: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no regrade of that name"):
        report_data(remittance_run, grading="nope")
    with pytest.raises(InputError, match="no regrade of that name"):
        report_data(remittance_run, grading="../../elsewhere")
    done = onrecord("report", str(remittance_run), "--grading", "nope", "-o", str(tmp_path / "x"))
    # Before: "report.json does not exist; a run writes it when it finishes
    # (`onrecord run --resume` completes an interrupted run)", for a finished run.
    assert done.returncode == 3
    assert "no regrade of that name" in done.stderr
    assert "--resume" not in done.stderr


def test_a_world_model_directory_points_to_its_report_files(tmp_path: Path) -> None:
    identity = {"case_id": "c", "source_id": None, "content_digest": "0" * 64}
    trial = Trial(
        identity,
        0,
        {"kind": "forecast", "digest": "0"},
        (CheckResult("dynamics/x/h1", "v1", "pass", ""),),
    )
    (tmp_path / "reports").mkdir()
    EvaluationReport.from_trials([trial]).save_json(tmp_path / "reports" / "m.report.json")
    with pytest.raises(InputError, match=r"give one of them, e.g. `onrecord report .*m\.report"):
        report_data(tmp_path)
    done = onrecord("report", str(tmp_path))
    # Before: "is not a run directory (it has no run.json); start a run with
    # `onrecord run ... --out DIR`", for the directory `onrecord worldmodel run` made.
    assert done.returncode == 3
    assert "m.report.json" in done.stderr
    assert report_data(tmp_path / "reports" / "m.report.json")["horizons"]["x"][0][:2] == [1, 1.0]


def test_a_negative_number_of_episodes_is_refused(remittance_run: Path) -> None:
    for mode in ("-5", "x", "1.5"):
        with pytest.raises(InputError, match="--episodes must be auto, all, failing or a number"):
            report_data(remittance_run, episodes=mode)
    assert len(report_data(remittance_run, episodes="3")["episodes"]) == 3
