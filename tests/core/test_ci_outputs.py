"""``gate --junit-xml`` / ``--markdown`` and ``compare --markdown``, run as a CI job runs
them (a real process): the JUnit file says what the exit code says, the Markdown summary
is appended, ``-`` is stdout, and a bad destination writes nothing."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord

DIGEST = "d" * 64


def make_report(
    statuses: dict[str, list[str]], *, case: str = "case-{i}", reason: str = "because {i}"
) -> EvaluationReport:
    """One trial per index; ``statuses`` maps a check to its status in each trial."""
    count = len(next(iter(statuses.values())))
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": case.format(i=i), "content_digest": DIGEST},
            0,
            {"kind": "test"},
            tuple(
                CheckResult(name, "v1", column[i], reason.format(i=i))
                for name, column in statuses.items()
            ),
            measures={"return": float(i)},
            settings={"environment_id": "env"},
        )
        for i in range(count)
    )


def save(
    tmp_path: Path, report: EvaluationReport, *requirements: CheckRequirement
) -> tuple[Path, Path]:
    report_path = report.save_json(tmp_path / "report.json")
    policy_path = AcceptancePolicy(requirements, name="release").save_json(tmp_path / "policy.json")
    return report_path, policy_path


def suite(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (testsuite,) = root.findall("testsuite")
    return testsuite


def outcomes(testsuite: ET.Element) -> dict[str, str]:
    """Each test case's name and JUnit outcome (passed, failure, error, skipped)."""
    found = {}
    for case in testsuite.findall("testcase"):
        tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        assert len(tags) <= 1
        found[f"{case.get('classname')}:{case.get('name')}"] = tags[0] if tags else "passed"
    return found


def counts_agree(testsuite: ET.Element) -> None:
    """The suite's counters are those of its test cases (CI tools trust either)."""
    seen = list(outcomes(testsuite).values())
    assert int(testsuite.get("tests", -1)) == len(seen)
    for attribute, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        assert int(testsuite.get(attribute, -1)) == seen.count(tag), attribute


def properties(testsuite: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in testsuite.iter("property")}


@pytest.mark.parametrize(
    ("statuses", "code", "decision", "requirement", "verdict"),
    [
        (["pass", "pass", "pass"], 0, "accept", "passed", "passed"),
        (["pass", "fail", "fail"], 1, "reject", "failure", "failure"),
        (["pass", "not_measured", "evaluator_error"], 2, "indeterminate", "error", "error"),
    ],
)
def test_the_junit_file_says_what_the_exit_code_says(
    tmp_path: Path, statuses: list[str], code: int, decision: str, requirement: str, verdict: str
) -> None:
    report, policy = save(tmp_path, make_report({"posted": statuses}), CheckRequirement("posted"))
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = onrecord("gate", report, "--policy", policy, "--junit-xml", junit, "--markdown", summary)
    assert done.returncode == code, done.stderr
    assert f"decision: {decision}" in done.stdout  # the table is still printed
    testsuite = suite(junit)
    counts_agree(testsuite)
    assert outcomes(testsuite) == {
        "onrecord.gate.requirement:posted": requirement,
        "onrecord.gate:decision": verdict,
    }
    found = properties(testsuite)
    assert found["onrecord.decision"] == decision
    assert found["onrecord.exit_code"] == str(code)
    assert found["onrecord.policy"] == "release"
    assert found["onrecord.report_digest"] == EvaluationReport.load(report).digest
    assert found["onrecord.policy_digest"] == AcceptancePolicy.load(policy).digest
    icon = {"accept": "✅", "reject": "❌", "indeterminate": "⚠️"}[decision]
    assert summary.read_text().startswith(f"### {icon} onrecord gate: {decision} (exit {code})\n")


def test_each_status_takes_the_junit_outcome_that_shares_its_meaning(tmp_path: Path) -> None:
    """An advisory failure warns (skipped, as pytest's xfail), an undecided requirement
    could not conclude (error), a critical failure fails."""
    data = make_report({"a": ["pass", "fail"], "b": ["pass", "fail"], "c": ["pass", "pass"]})
    report, policy = save(
        tmp_path,
        data,
        CheckRequirement("a"),
        CheckRequirement("b", critical=False),
        CheckRequirement("missing", critical=False),
        CheckRequirement("c"),
        CheckRequirement("c", min_cases=5),  # the same pattern twice: numbered
    )
    junit = tmp_path / "junit.xml"
    assert onrecord("gate", report, "--policy", policy, "--junit-xml", junit).returncode == 1
    testsuite = suite(junit)
    counts_agree(testsuite)
    assert outcomes(testsuite) == {
        "onrecord.gate.requirement:a": "failure",
        "onrecord.gate.requirement:b": "skipped",
        "onrecord.gate.requirement:missing": "error",
        "onrecord.gate.requirement:c (requirement 4)": "passed",
        "onrecord.gate.requirement:c (requirement 5)": "error",
        "onrecord.gate:decision": "failure",
    }
    skipped = testsuite.find("testcase[@name='b']/skipped")
    assert skipped is not None
    assert skipped.get("type") == "advisory-failed"


def test_an_advisory_failure_alone_accepts_and_the_decision_case_passes(tmp_path: Path) -> None:
    data = make_report({"a": ["pass", "pass"], "b": ["pass", "fail"]})
    report, policy = save(
        tmp_path, data, CheckRequirement("a"), CheckRequirement("b", critical=False)
    )
    junit = tmp_path / "junit.xml"
    assert onrecord("gate", report, "--policy", policy, "--junit-xml", junit).returncode == 0
    found = outcomes(suite(junit))
    assert found["onrecord.gate:decision"] == "passed"
    assert found["onrecord.gate.requirement:b"] == "skipped"


def test_a_failure_gives_rate_interval_threshold_and_the_first_failing_episodes(
    tmp_path: Path,
) -> None:
    statuses = ["fail"] * 12 + ["evaluator_error"] + ["pass"] * 7
    data = make_report({"posted": statuses}, reason="row {i} was posted twice")
    report, policy = save(tmp_path, data, CheckRequirement("posted", min_pass_rate=0.9))
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = onrecord("gate", report, "--policy", policy, "--junit-xml", junit, "--markdown", summary)
    assert done.returncode == 1
    failure = suite(junit).find("testcase[@name='posted']/failure")
    assert failure is not None
    assert failure.get("message", "").startswith("'posted' (critical) failed: 7 passed, 12 failed")
    text = failure.text or ""
    assert (
        "measured pass rate: 36.8% (7 of 19), 95% interval 19.1% – 59.0%, clustered by case" in text
    )
    assert "threshold: ≥ 90.0% (critical)" in text
    assert "results that did not pass (first 10 of 13):" in text
    assert "  case-0#0  posted  fail: row 0 was posted twice" in text
    assert "case-9#0" in text
    assert "case-10#0" not in text
    markdown = summary.read_text()
    assert (
        "| posted | yes | ❌ failed | 36.8% (7 of 19) | 19.1% – 59.0% | ≥ 90.0% | 19 | 1 |"
        in markdown
    )
    assert "| posted | case-0\\#0 | posted | fail | row 0 was posted twice |" in markdown
    assert "… and 3 more" in markdown


def test_markdown_is_appended_and_junit_replaced(tmp_path: Path) -> None:
    report, policy = save(tmp_path, make_report({"posted": ["pass"]}), CheckRequirement("posted"))
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    summary.write_text("# Earlier step\nkept")  # no final newline: a blank line is added
    for _ in range(2):
        done = onrecord(
            "gate", report, "--policy", policy, "--markdown", summary, "--junit-xml", junit
        )
        assert done.returncode == 0, done.stderr
    text = summary.read_text()
    assert text.startswith("# Earlier step\nkept\n\n### ✅ onrecord gate: accept (exit 0)\n")
    assert text.count("### ✅ onrecord gate: accept") == 2
    assert text.count("\n\n### ✅") == 2
    assert suite(junit).get("tests") == "2"  # replaced, not appended: still one document


def test_dash_writes_the_document_to_stdout_instead_of_the_table(tmp_path: Path) -> None:
    report, policy = save(
        tmp_path, make_report({"posted": ["pass", "fail"]}), CheckRequirement("posted")
    )
    done = onrecord("gate", report, "--policy", policy, "--markdown", "-")
    assert done.returncode == 1
    assert done.stdout.startswith("### ❌ onrecord gate: reject (exit 1)\n")
    assert "decision:" not in done.stdout
    assert "┃" not in done.stdout
    done = onrecord(
        "gate", report, "--policy", policy, "--junit-xml", "-", "--markdown", tmp_path / "s.md"
    )
    assert done.returncode == 1
    (printed,) = ET.fromstring(done.stdout).findall("testsuite")
    assert outcomes(printed)["onrecord.gate:decision"] == "failure"
    assert (tmp_path / "s.md").is_file()
    both = onrecord("gate", report, "--policy", policy, "--junit-xml", "-", "--markdown", "-")
    assert both.returncode == 3
    assert "--junit-xml and --markdown both name stdout (-)" in both.stderr


@pytest.mark.parametrize("option", ["--junit-xml", "--markdown"])
def test_a_missing_directory_is_made_as_pytest_junitxml_does(tmp_path: Path, option: str) -> None:
    report, policy = save(tmp_path, make_report({"posted": ["pass"]}), CheckRequirement("posted"))
    target = tmp_path / "reports" / "gate" / "out.file"
    done = onrecord("gate", report, "--policy", policy, option, target)
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert text.startswith("<?xml") if option == "--junit-xml" else "onrecord gate" in text


@pytest.mark.parametrize("option", ["--junit-xml", "--markdown"])
def test_a_path_through_a_file_is_bad_input_before_anything_is_written(
    tmp_path: Path, option: str
) -> None:
    report, policy = save(tmp_path, make_report({"posted": ["pass"]}), CheckRequirement("posted"))
    (tmp_path / "notes").write_text("a file, not a folder")
    target = tmp_path / "notes" / "ci" / "out.file"
    decision = tmp_path / "decision.json"
    done = onrecord("gate", report, "--policy", policy, "--output", decision, option, target)
    assert done.returncode == 3
    assert f"{option} {target}: {tmp_path / 'notes'} is a file, not a directory" in done.stderr
    assert not decision.exists()
    assert (tmp_path / "notes").read_text() == "a file, not a folder"
    assert done.stdout == ""


def test_bad_input_is_said_in_the_ci_files_and_a_bad_destination_writes_nothing(
    tmp_path: Path,
) -> None:
    report, _ = save(tmp_path, make_report({"posted": ["pass"]}), CheckRequirement("posted"))
    policy = tmp_path / "bad.toml"
    policy.write_text('[[requirements]]\ncheck = "posted"\ncritcal = false\n')
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    summary.write_text("earlier\n")
    done = onrecord("gate", report, "--policy", policy, "--junit-xml", junit, "--markdown", summary)
    assert done.returncode == 3
    # A CI reader sees why in the job's summary and test report, not only in the log.
    assert summary.read_text().startswith("earlier\n\n### ⛔ onrecord gate: refused (exit 3)\n")
    assert 'type="refused"' in junit.read_text()
    junit.unlink()
    same = onrecord("gate", report, "--policy", policy, "--junit-xml", junit, "--output", junit)
    assert same.returncode == 3
    assert "--output and --junit-xml both name the same file" in same.stderr
    record = onrecord("gate", report, "--policy", policy, "--markdown", report)
    assert record.returncode == 3
    assert "would overwrite a saved record" in record.stderr


def test_compare_markdown_gives_mcnemar_pairs_and_intervals(tmp_path: Path) -> None:
    a = make_report({"posted": ["pass"] * 6}).save_json(tmp_path / "a.json")
    b_report = make_report(
        {"posted": ["fail", "fail", "fail", "pass", "pass", "pass"]}, case="case-{i}"
    )
    b = b_report.save_json(tmp_path / "b.json")
    summary = tmp_path / "summary.md"
    done = onrecord("compare", a, b, "--markdown", summary)
    assert done.returncode == 0, done.stderr
    text = summary.read_text()
    assert text.startswith("### onrecord compare: 6 paired trials\n")
    assert "| posted | 3 | 3 | 0 | 0 | 0 | 0.25 |" in text
    assert "| posted | case-0\\#0 | pass | fail |" in text
    assert "| return | 6 | 2.5 | 2.5 | +0 | [+0, +0] |" in text
    stdout = onrecord("compare", a, b, "--markdown", "-")
    assert stdout.returncode == 0
    assert stdout.stdout.startswith("### onrecord compare")
    assert "McNemar p |" in stdout.stdout
    assert "┃" not in stdout.stdout


def test_a_refused_comparison_appends_its_reasons_and_unreadable_input_its_error(
    tmp_path: Path,
) -> None:
    a = make_report({"posted": ["pass"] * 2}).save_json(tmp_path / "a.json")
    b = make_report({"other": ["pass"] * 3}).save_json(tmp_path / "b.json")
    summary = tmp_path / "summary.md"
    done = onrecord("compare", a, b, "--markdown", summary)
    assert done.returncode == 3
    text = summary.read_text()
    assert text.startswith("### ⛔ onrecord compare: refused (exit 3)\n")
    assert "- check 'posted' is only in A (version 'v1')" in text
    before = summary.read_bytes()
    missing = onrecord("compare", a, tmp_path / "absent.json", "--markdown", summary)
    assert missing.returncode == 3
    # Appended after the earlier summary, as gate's refusal is (it appended nothing).
    added = summary.read_bytes().removeprefix(before + b"\n").decode()
    assert added.startswith("### ⛔ onrecord compare: refused (exit 3)\n")
    assert "no such file:" in added
    made = onrecord("compare", a, b, "--markdown", tmp_path / "nodir" / "s.md")
    assert made.returncode == 3  # refused: the locks differ, and the summary says so
    assert (tmp_path / "nodir" / "s.md").read_text().startswith("### ⛔ onrecord compare")


def test_a_run_directory_names_the_suite_and_stays_verifiable(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = onrecord("run", "frozenlake", "-a", "walks_into_hole", "-r", "2", "--out", run)
    assert done.returncode == 1, done.stderr
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "reached_goal"\n')
    for _ in range(2):  # files the options write in a run directory may be replaced
        gated = onrecord(
            "gate",
            run,
            "--policy",
            policy,
            "--junit-xml",
            run / "junit.xml",
            "--markdown",
            run / "summary.md",
        )
        assert gated.returncode == 1, gated.stderr
    testsuite = suite(run / "junit.xml")
    assert testsuite.get("name") == "walks_into_hole on frozenlake (run)"
    assert (run / "summary.md").read_text().count("walks\\_into\\_hole on frozenlake (run)") == 2
    assert onrecord("verify", run).returncode == 0


def test_compare_markdown_tells_two_report_files_of_one_name_apart(tmp_path: Path) -> None:
    # Before: runs/v1/report.json against runs/v2/report.json read "A: report.json ·
    # B: report.json", which side was the candidate left to the digests.
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    a = make_report({"posted": ["pass"] * 2}).save_json(tmp_path / "v1" / "report.json")
    b = make_report({"posted": ["pass", "fail"]}).save_json(tmp_path / "v2" / "report.json")
    done = onrecord("compare", a, b, "--markdown", "-")
    assert done.returncode == 0, done.stderr
    assert "A: report.json in v1/ (sha256:" in done.stdout
    assert "B: report.json in v2/ (sha256:" in done.stdout


def test_dash_prints_the_decision_and_comparison_json_instead_of_the_tables(
    tmp_path: Path,
) -> None:
    # `gate --output -` wrote a file named "-" while `--junit-xml -` meant stdout.
    run = tmp_path / "run"
    done = onrecord("run", "frozenlake", "-a", "walks_into_hole", "-r", "2", "--out", run)
    assert done.returncode == 1, done.stderr
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "reached_goal"\n')
    gated = onrecord("gate", run, "--policy", policy, "--output", "-", cwd=tmp_path)
    assert gated.returncode == 1, gated.stderr
    decision = orjson.loads(gated.stdout)
    assert decision["schema"] == "onrecord.decision/v1"
    assert decision["decision"] == "reject"
    assert not (tmp_path / "-").exists()
    both = onrecord(
        "gate", run, "--policy", policy, "--output", "-", "--markdown", "-", cwd=tmp_path
    )
    assert both.returncode == 3
    assert "both name stdout" in both.stderr
    compared = onrecord("compare", run, run, "--json", "-", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert orjson.loads(compared.stdout)["schema"] == "onrecord.comparison/v1"
    assert not (tmp_path / "-").exists()
