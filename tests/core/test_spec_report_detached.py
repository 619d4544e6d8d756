"""Issue 2, item 6: a report's ``save_json`` always writes what its digest covers, so
``load`` verifies it. ``to_dict`` used to hand out the report's own lock: editing that
dict (as a tamper test does) silently changed the report, whose next save then failed
to load."""

from __future__ import annotations

from pathlib import Path

from onrecord.report import CheckResult, EvaluationReport, Trial


def _report() -> EvaluationReport:
    return EvaluationReport.from_trials(
        [
            Trial(
                {"case_id": "c", "content_digest": "d" * 64},
                0,
                {"kind": "test"},
                (CheckResult("a", "v1", "pass", "", {"rows": [1, 2]}),),
                settings={"options": {"level": 1}},
            )
        ],
        lock_extra={"policy": {"name": "p", "digest": "e" * 64}},
    )


def test_editing_to_dict_changes_nothing_in_the_report(tmp_path: Path) -> None:
    report = _report()
    before = report.to_bytes()
    data = report.to_dict()
    data["lock"]["checks"]["a"] = "v2"
    data["lock"]["policy"]["name"] = "other"
    data["trials"][0]["settings"]["options"]["level"] = 2
    data["trials"][0]["results"][0]["evidence"]["rows"].append(3)
    assert report.to_bytes() == before
    assert report.lock["checks"] == {"a": "v1"}
    report.save_json(tmp_path / "report.json")
    assert EvaluationReport.load(tmp_path / "report.json").digest == report.digest


def test_the_dict_a_report_was_read_from_cannot_change_it() -> None:
    data = _report().to_dict()
    report = EvaluationReport.from_dict(data)
    data["lock"]["policy"]["name"] = "other"
    assert report.lock["policy"]["name"] == "p"
    assert EvaluationReport.from_dict(report.to_dict()).digest == report.digest


def test_to_bytes_is_the_canonical_record_with_its_digest() -> None:
    report = _report()
    assert report.to_bytes().startswith(b'{"digest":"' + report.digest.encode() + b'",')
    assert EvaluationReport.from_dict(report.to_dict()).digest == report.digest
