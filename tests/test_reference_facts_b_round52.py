"""Facts of the reference pages (world-models-reference.md, cli.md's Details,
reports-and-policies.md) checked against the real command: round 52."""

from __future__ import annotations

from pathlib import Path

from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord


def _report(path: Path) -> Path:
    trials = [
        Trial(
            {"case_id": f"task-{case}", "content_digest": "sha256:" + "0" * 64},
            0,
            {"kind": "test"},
            (CheckResult("posted_once", "v1", "pass", "posted once"),),
            settings={"environment_id": "env"},
        )
        for case in range(3)
    ]
    EvaluationReport.from_trials(trials).save_json(path)
    return path


def test_gate_with_a_toml_policy_as_report_says_the_two_are_swapped(tmp_path: Path) -> None:
    """cli.md, gate Details: the report and the policy given the wrong way round says
    which is which. A TOML policy as REPORT was "not valid JSON …; the file is damaged or
    was edited: restore it", sending the user to restore a policy that was fine."""
    report = _report(tmp_path / "report.json")
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "posted_once"\n', encoding="utf-8")
    assert onrecord("gate", report, "--policy", policy).returncode == 0
    swapped = onrecord("gate", policy, "--policy", report)
    assert swapped.returncode == 3, swapped.stderr
    message = " ".join(swapped.stderr.split())
    assert "damaged" not in message, message
    assert f"REPORT {policy} is a TOML file, not a report" in message, message
    assert f"onrecord gate REPORT --policy {policy}" in message, message
    assert policy.read_text(encoding="utf-8").startswith("[[requirements]]")
