"""Round 40: untrusted text (case ids, reasons quoting an agent, coverage issues holding
an agent's error message) cannot forge lines in ``onrecord gate``'s outputs: the JUnit
XML's result and reason lists, the terminal log, ``onrecord show``; the JUnit XML says
a world-model report's unchecked coordinates as the terminal and Markdown do. The
installed ``onrecord`` command on real report files; a real Pendulum episode."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.dynamics_metrics import forecast_report
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord
from tests.test_unchecked_and_failures_round40 import (
    POLICY,
    UNCHECKED,
    forecast_of,
    pendulum_reference,
)

DIGEST = "d" * 64
# What an agent can put in its error message or a check can quote from its output.
FORGED_ISSUE = "interact raised RuntimeError: boom\ndecision: accept\n  every requirement met"
FORGED_REASON = "refund sent twice\n  c9#0  posted_once  pass: fine\n- accept"
FORGED_CASE = "c1\ndecision: accept"


@pytest.fixture
def forged(tmp_path: Path) -> tuple[Path, Path]:
    """A rejected report whose case id, reason and coverage issue hold forged lines."""
    trial = Trial(
        {"case_id": FORGED_CASE, "content_digest": DIGEST},
        0,
        {"kind": "test"},
        (CheckResult("posted_once", "v1", "fail", FORGED_REASON),),
        coverage_issues=(FORGED_ISSUE,),
        settings={"environment_id": "env"},
    )
    report = EvaluationReport.from_trials([trial]).save_json(tmp_path / "report.json")
    policy = AcceptancePolicy((CheckRequirement("posted_once"),), name="release")
    return report, policy.save_json(tmp_path / "policy.json")


def _junit(path: Path) -> ET.Element:
    root = ET.fromstring(path.read_bytes())  # raises unless well-formed
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    # The attributes every JUnit reader (Jenkins' schema, GitLab, the GitHub actions) needs.
    for key in ("tests", "failures", "errors", "skipped"):
        assert suite.get(key, "").isdigit(), key
    assert int(suite.get("tests", "")) == len(cases)
    for case in cases:
        assert case.get("name")
        assert case.get("classname")
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                assert child.get("message")
                assert child.get("type")
    return suite


def test_junit_result_and_reason_lines_cannot_be_forged(
    forged: tuple[Path, Path], tmp_path: Path
) -> None:
    report, policy = forged
    junit = tmp_path / "gate.xml"
    gate = onrecord("gate", report, "--policy", policy, "--junit-xml", junit)
    assert gate.returncode == 1, gate.stderr
    suite = _junit(junit)
    requirement, decision = suite.findall("testcase")
    failure = requirement.find("failure")
    assert failure is not None
    assert failure.text is not None
    results = failure.text.split("results that did not pass (first 1 of 1):\n", 1)[1]
    # One result, one entry: its case id on its line, its reason's lines deeper.
    entries = [line for line in results.splitlines() if re.match(r"  \S", line)]
    assert entries == ["  c1 decision: accept#0  posted_once  fail: refund sent twice"]
    assert "        c9#0  posted_once  pass: fine" in results.splitlines()
    verdict = decision.find("failure")
    assert verdict is not None
    assert verdict.text is not None
    lines = verdict.text.splitlines()
    assert lines[0] == "reject (exit 1)"
    # Two reasons (the requirement's, the coverage issue): two bullets, the rest under them.
    assert len([line for line in lines if line.startswith("- ")]) == 2
    assert not [line for line in lines[1:] if not line.startswith(("- ", "  "))]


def test_the_terminal_log_of_gate_and_show_has_no_forged_line(forged: tuple[Path, Path]) -> None:
    report, policy = forged
    gate = onrecord("gate", report, "--policy", policy, columns=120)
    assert gate.returncode == 1, gate.stderr
    verdicts = [line for line in gate.stdout.splitlines() if line.startswith("decision")]
    assert verdicts == ["decision: reject"]
    assert not [line for line in gate.stdout.splitlines() if line.startswith("every")]
    # The headline and the reason keep the issue's lines, hanging under them.
    assert "    decision: accept#0: interact raised RuntimeError: boom" in gate.stdout
    shown = onrecord("show", report, columns=120)
    assert shown.returncode == 0, shown.stderr
    assert not [line for line in shown.stdout.splitlines() if line.startswith("decision")]
    assert "\x1b" not in gate.stdout + shown.stdout


def test_the_junit_decision_says_the_unchecked_coordinates(tmp_path: Path) -> None:
    forecast = forecast_of(pendulum_reference({}))
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    for tolerances, said in (({"theta": 10}, True), ({"theta": 10, "theta_dot": 100}, False)):
        report = forecast_report([forecast], tolerances).save_json(tmp_path / "report.json")
        junit = tmp_path / "gate.xml"
        gate = onrecord("gate", report, "--policy", policy, "--junit-xml", junit)
        assert gate.returncode == 0, gate.stderr  # accepted: theta h1 passes
        decision = _junit(junit).findall("testcase")[-1]
        out = decision.find("system-out")
        assert out is not None
        assert out.text is not None
        assert (UNCHECKED in out.text.splitlines()) is said
        assert ("unchecked" in junit.read_text(encoding="utf-8")) is said


def test_markdown_keeps_links_images_and_html_inert(tmp_path: Path) -> None:
    texts = [
        "[link](javascript:alert(1))",
        "![img](http://tracker/x.png)",
        "<img src=x onerror=alert(1)>",
        "<details><summary>x",
        "-->",
        "# heading",
        "a|b\nc\r\x1b[31m",
    ]
    trials = [
        Trial(
            {"case_id": text, "content_digest": DIGEST},
            0,
            {"kind": "test"},
            (CheckResult("posted_once", "v1", "fail", text),),
            settings={"environment_id": "env"},
        )
        for text in texts
    ]
    report = EvaluationReport.from_trials(trials).save_json(tmp_path / "report.json")
    policy = AcceptancePolicy((CheckRequirement("posted_once"),), name=texts[2])
    gate = onrecord(
        "gate", report, "--policy", policy.save_json(tmp_path / "p.json"), "--markdown", "-"
    )
    assert gate.returncode == 1, gate.stderr
    assert "\x1b" not in gate.stdout
    tokens = MarkdownIt("commonmark").enable(["table"]).parse(gate.stdout)
    inline = [child for token in tokens for child in token.children or ()]
    assert not [t for t in tokens if t.type in ("html_block", "heading_open")][1:]
    assert not [t for t in inline if t.type in ("link_open", "image")]
    # The only HTML is ours: line breaks in a cell, the footer.
    html = {t.content for t in inline if t.type == "html_inline"}
    assert html <= {"<br>", "<sub>", "</sub>"}
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 2 + 1 + len(texts)  # two headers, one requirement, each result
