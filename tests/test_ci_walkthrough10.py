"""A CI user's walkthrough of gate and compare: what the outputs say must be honest.

- The decision's headline (the line the Markdown summary and the JUnit decision lead
  with) names an advisory failure as a warning, never as what decided.
- The gate's terminal table gives the 95 % Wilson interval beside each pass rate, as the
  Markdown summary and the JUnit file do.
- A comparison says when a McNemar p-value could never have been significant: fewer
  than 6 discordant pairs, or discordant repeats of fewer than 6 cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement, compare_reports
from onrecord.compare import discordant_cases, too_few_pairs_note
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord
from tests.core.test_ci_outputs import make_report, save

DIGEST = "d" * 64


def test_an_advisory_failure_is_headlined_as_a_warning_not_as_the_cause(
    tmp_path: Path,
) -> None:
    report = make_report({"posted": ["pass", "pass"], "style": ["pass", "fail"]})
    accepted = AcceptancePolicy(
        (CheckRequirement("posted"), CheckRequirement("style", critical=False))
    ).evaluate(report)
    assert accepted.decision == "accept"
    assert accepted.headline == "advisory failed (warning): style"
    # Indeterminate because 'missing' matched nothing, not because of 'style'.
    undecided = AcceptancePolicy(
        (
            CheckRequirement("style", critical=False),
            CheckRequirement("missing"),
        )
    ).evaluate(report)
    assert undecided.decision == "indeterminate"
    assert undecided.headline == "undecided: missing; advisory failed (warning): style"
    rejected = AcceptancePolicy(
        (CheckRequirement("style", critical=False), CheckRequirement("posted_twice*"))
    ).evaluate(make_report({"posted_twice": ["fail"], "style": ["fail"]}))
    assert rejected.headline == "failed: posted_twice*; advisory failed (warning): style"


def test_the_markdown_summary_leads_with_what_decided(tmp_path: Path) -> None:
    report, policy = save(
        tmp_path,
        make_report({"posted": ["pass", "pass"], "style": ["pass", "fail"]}),
        CheckRequirement("posted", min_cases=5),
        CheckRequirement("style", critical=False),
    )
    done = onrecord("gate", report, "--policy", policy, "--markdown", "-")
    assert done.returncode == 2, done.stderr
    subject = done.stdout.splitlines()[2]
    assert subject.endswith("undecided: posted; advisory failed (warning): style"), subject


def _row(text: str, first: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"│ {first} "))
    return [cell.strip() for cell in line.strip("│").split("│")]


def test_the_gate_table_gives_the_wilson_interval_beside_the_pass_rate(tmp_path: Path) -> None:
    # 19 of 20 meets 95 %, while its interval reaches down to 76.4 %: the reader should
    # see both, in the terminal as in the Markdown and JUnit outputs.
    report, policy = save(
        tmp_path,
        make_report({"posted": ["pass"] * 19 + ["fail"]}),
        CheckRequirement("posted", min_pass_rate=0.95),
    )
    done = onrecord("gate", report, "--policy", policy)
    assert done.returncode == 0, done.stderr
    header = _row(done.stdout.replace("┃", "│"), "requirement")
    assert header[3:6] == ["pass rate", "95% interval", "threshold"]
    assert _row(done.stdout, "posted")[3:6] == ["95.0% (19 of 20)", "76.4% – 99.1%", "≥ 95.0%"]
    saved = tmp_path / "decision.json"
    assert onrecord("gate", report, "--policy", policy, "--output", saved).returncode == 0
    shown = onrecord("show", saved)
    assert _row(shown.stdout, "posted")[3:5] == ["95.0% (19 of 20)", "76.4% – 99.1%"]


def _report(cases: list[tuple[str, int]], statuses: list[str]) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": case_id, "content_digest": DIGEST},
            repeat,
            {"kind": "test"},
            (CheckResult("posted", "v1", status, "why"),),
            settings={"environment_id": "env"},
        )
        for (case_id, repeat), status in zip(cases, statuses, strict=True)
    )


@pytest.mark.parametrize("surface", ["terminal", "markdown", "html"])
def test_a_p_value_that_could_never_be_significant_says_so(tmp_path: Path, surface: str) -> None:
    # 2 discordant pairs: the smallest p the exact test can give is 0.5.
    cases = [(f"case-{i}", 0) for i in range(10)]
    a = _report(cases, ["pass"] * 10).save_json(tmp_path / "a.json")
    b = _report(cases, ["fail"] * 2 + ["pass"] * 8).save_json(tmp_path / "b.json")
    out = tmp_path / "out"
    option = {"terminal": [], "markdown": ["--markdown", out], "html": ["--html", out]}[surface]
    done = onrecord("compare", a, b, *option)
    assert done.returncode == 0, done.stderr
    text = done.stdout if surface == "terminal" else out.read_text()
    assert "McNemar p cannot fall below 0.05" in text
    assert "posted (2 discordant, smallest possible p 0.5)" in text


@pytest.mark.parametrize("surface", ["terminal", "markdown", "html"])
def test_discordant_repeats_of_two_cases_are_not_six_independent_pairs(
    tmp_path: Path, surface: str
) -> None:
    # 6 discordant pairs give p = 0.03125 < 0.05, but they are 3 repeats of 2 tasks.
    cases = [(f"task-{i}", r) for i in range(8) for r in range(3)]
    a = _report(cases, ["pass"] * 24).save_json(tmp_path / "a.json")
    b = _report(cases, ["fail"] * 6 + ["pass"] * 18).save_json(tmp_path / "b.json")
    comparison = compare_reports(EvaluationReport.load(a), EvaluationReport.load(b))
    (check,) = comparison.checks
    assert check.p_value == 0.03125
    assert discordant_cases(check.discordant) == 2
    out = tmp_path / "out"
    option = {"terminal": [], "markdown": ["--markdown", out], "html": ["--html", out]}[surface]
    done = onrecord("compare", a, b, *option)
    assert done.returncode == 0, done.stderr
    text = done.stdout if surface == "terminal" else out.read_text()
    text = " ".join(text.split())  # the terminal wraps the note at COLUMNS
    assert "posted (6 discordant pairs from 2 cases, smallest possible p 0.5)" in text
    assert "repeats of one case are not" in text


def test_enough_discordant_cases_or_none_at_all_need_no_note(tmp_path: Path) -> None:
    assert too_few_pairs_note([("same", 0, 0), ("clear", 6, 6), ("many", 40, 12)]) is None
    cases = [(f"case-{i}", 0) for i in range(10)]
    a = _report(cases, ["pass"] * 10).save_json(tmp_path / "a.json")
    b = _report(cases, ["fail"] * 6 + ["pass"] * 4).save_json(tmp_path / "b.json")
    done = onrecord("compare", a, b, "--markdown", "-")
    assert done.returncode == 0, done.stderr
    assert "cannot fall below" not in done.stdout
    same = onrecord("compare", a, a)
    assert "cannot fall below" not in same.stdout


def test_smallest_p_is_what_all_pairs_on_one_side_give() -> None:
    cases = [(f"case-{i}", 0) for i in range(7)]
    a = _report(cases, ["pass"] * 7)
    for failing in range(7):
        b = _report(cases, ["fail"] * failing + ["pass"] * (7 - failing))
        (check,) = compare_reports(a, b).checks
        assert check.smallest_p == check.p_value  # every discordant pair on one side
    (check,) = compare_reports(a, a).checks
    assert check.smallest_p == 1.0
