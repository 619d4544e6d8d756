"""Which report `onrecord report` renders, with which decision, and where the page goes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import orjson
import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._canonical import canonical_bytes, content_digest, record_bytes
from onrecord.errors import DigestMismatch, InputError
from onrecord.html import report_data, write_report
from onrecord.report import EvaluationReport


def _bare_report(lake_run: Path, folder: Path) -> tuple[Path, EvaluationReport]:
    folder.mkdir()
    path = Path(shutil.copy(lake_run / "report.json", folder / "report.json"))
    return path, EvaluationReport.load(path)


def _decision_dict(report: EvaluationReport) -> dict[str, object]:
    names = sorted(report.check_names)
    return AcceptancePolicy(tuple(CheckRequirement(n) for n in names)).evaluate(report).to_dict()


def test_a_ledger_style_decision_beside_a_report_is_shown(lake_run: Path, tmp_path: Path) -> None:
    # Before: ValueError traceback (exit 1, "reject") on the ledger's decision layout.
    path, report = _bare_report(lake_run, tmp_path / "ledger")
    body = {"schema": "onrecord.ledger-decision/v1", **_decision_dict(report)}
    (path.parent / "decision.json").write_bytes(
        record_bytes({**body, "digest": content_digest(body)})
    )
    decision = report_data(path)["decision"]
    assert decision["verdict"] == body["decision"]
    assert decision["complete"]


def test_a_gate_output_beside_a_report_is_shown_not_called_edited(
    lake_run: Path, tmp_path: Path
) -> None:
    # Before: "decision.json does not match its digest: it was edited after saving".
    path, report = _bare_report(lake_run, tmp_path / "gated")
    gate_output = _decision_dict(report)
    (path.parent / "decision.json").write_bytes(canonical_bytes(gate_output) + b"\n")
    assert report_data(path)["decision"]["decision"] == gate_output["decision"]


def test_decisions_beside_a_report_that_are_not_about_it(lake_run: Path, tmp_path: Path) -> None:
    path, report = _bare_report(lake_run, tmp_path / "other")
    other = _decision_dict(report) | {"report_digest": "0" * 64}
    (path.parent / "decision.json").write_bytes(canonical_bytes(other) + b"\n")
    assert report_data(path)["decision"] is None  # another report's: not shown as this one's
    body = {"schema": "onrecord.ledger-decision/v1", **_decision_dict(report)}
    edited = {**body, "digest": content_digest(body), "decision": "accept", "reasons": []}
    if edited["digest"] == content_digest({k: v for k, v in edited.items() if k != "digest"}):
        edited["reasons"] = ["forged"]
    (path.parent / "decision.json").write_bytes(canonical_bytes(edited) + b"\n")
    # The forged verdict is refused for its digest, naming the file it is in.
    beside = re.escape(str(path.parent / "decision.json"))
    with pytest.raises(DigestMismatch, match=f"^{beside} does not match its digest"):
        report_data(path)


def test_a_run_s_own_report_file_renders_the_run(lake_run: Path, tmp_path: Path) -> None:
    # Before: a page without episodes, written over the run's report.html.
    run = tmp_path / "run"
    shutil.copytree(lake_run, run)
    data = report_data(run / "report.json")
    assert data["run"] is not None
    assert data["episodes"]
    assert write_report(run / "report.json") == run / "report.html"


def test_no_page_is_written_into_a_directory_its_manifest_lists(
    lake_run: Path, tmp_path: Path
) -> None:
    # Before: `onrecord report wm/reports/X.report.json` wrote X.report.html beside it,
    # and `onrecord verify wm` / `worldmodel analyze --replay wm` refused the directory.
    output = tmp_path / "wm"
    (output / "reports").mkdir(parents=True)
    (output / "manifest.json").write_bytes(
        orjson.dumps({"schema": "onrecord.manifest/v1", "files": {}})
    )
    report = Path(shutil.copy(lake_run / "report.json", output / "reports" / "m.report.json"))
    for out in (None, output / "page.html"):
        with pytest.raises(InputError, match=r"manifest\.json lists every file"):
            write_report(report, out)
    assert sorted(p.name for p in output.rglob("*")) == [
        "m.report.json",
        "manifest.json",
        "reports",
    ]
    assert write_report(report, tmp_path / "elsewhere.html").is_file()


def test_show_prints_one_episode_of_a_run(remittance_run: Path, lake_run: Path) -> None:
    from tests.runner.conftest import onrecord

    record = orjson.loads((remittance_run / "episodes.jsonl").read_bytes().splitlines()[0])
    key = f"{record['case_id']}#{record['repeat']}"
    done = onrecord("show", str(remittance_run), "--episode", key)
    assert done.returncode == 0, done.stderr
    for result in record["trial"]["results"]:  # the verdicts it was graded with
        assert result["name"] in done.stdout
    assert "read_remittance" in done.stdout  # and its tool calls
    lake = orjson.loads((lake_run / "episodes.jsonl").read_bytes().splitlines()[0])
    done = onrecord("show", str(lake_run), "--episode", f"{lake['case_id']}#{lake['repeat']}")
    assert done.returncode == 0, done.stderr
    assert "step" in done.stdout
    assert "state" in done.stdout  # a Gymnasium episode's recorded steps
    done = onrecord("show", str(lake_run), "--episode", "nope#0")
    assert done.returncode == 3
    assert f"{lake['case_id']}#" in done.stderr  # names episodes that exist
    done = onrecord("show", str(lake_run / "report.json"), "--episode", "x#0")
    assert done.returncode == 3
    assert "needs a run directory" in done.stderr


def test_a_comparison_of_nothing_says_so(tmp_path: Path) -> None:
    from onrecord.html import write_comparison

    empty = EvaluationReport.from_trials([])
    for name in ("a.json", "b.json"):
        empty.save_json(tmp_path / name)
    page, data = write_comparison(tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.html")
    assert data["comparison"]["pairs"] == 0
    assert "Nothing was compared" in page.read_text()
