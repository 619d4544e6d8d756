"""An independent reference implementation of the acceptance rules in
docs/reports-and-policies.md, and property tests of ``AcceptancePolicy.evaluate``
against it over random reports and random policies.

The reference is written from the documented rules only:

1. a critical requirement that *failed* rejects — even when other evidence is missing;
2. otherwise any *undecided* requirement, or any coverage issue of any trial, makes the
   decision indeterminate;
3. otherwise accept (an advisory failure is a warning in ``reasons``).

A requirement matches every check of the report whose name equals it or that its glob
matches (case-sensitive, on every platform); each matched check is required in every
trial, so it has ``trials × matched`` results, and a result that is absent, not measured
or errored is unmeasured (never a pass). Its status, in order:

* no matched check (or no trial): undecided;
* even if every unmeasured result had passed the pass rate stays below
  ``min_pass_rate``: failed (whatever the coverage or case count);
* fewer distinct cases (case id + content digest) with a measured result than
  ``min_cases``: undecided;
* measured share below ``min_coverage``: undecided;
* otherwise the pass rate over the measured results decides: met when it is at least
  ``min_pass_rate``, failed when below.

Thresholds are compared exactly as the decimals the user wrote (``7/10 >= 0.7``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.cli.main import main as cli_main
from onrecord.policy import PolicyDecision
from onrecord.report import STATUSES, CheckResult, EvaluationReport, Status, Trial

RefStatus = Literal["met", "failed", "undecided"]
RefDecision = Literal["accept", "reject", "indeterminate"]

# ---------------------------------------------------------------------------------------
# The reference implementation
# ---------------------------------------------------------------------------------------


def _at_least(numerator: int, denominator: int, threshold: float) -> bool:
    """``numerator / denominator >= threshold``, exactly, the threshold read as the decimal
    the user wrote (its shortest repr), so 7 of 10 meets 0.7 and 1 of 10 meets 0.1."""
    return Fraction(numerator, denominator) >= Fraction(repr(float(threshold)))


def ref_matches(pattern: str, name: str) -> bool:
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


@dataclass(frozen=True)
class RefOutcome:
    status: RefStatus
    passed: int
    failed: int
    unmeasured: int
    cases: int
    matched: tuple[str, ...]
    kinds: Counter[str]
    """Unmeasured results by why: not_measured, evaluator_error, model_error, missing."""


def ref_judge(requirement: CheckRequirement, report: EvaluationReport) -> RefOutcome:
    matched = tuple(
        sorted(name for name in report.check_names if ref_matches(requirement.check, name))
    )
    passed = failed = unmeasured = 0
    kinds: Counter[str] = Counter()
    measured_cases: set[tuple[str, str]] = set()
    for trial in report.trials:
        by_name = {result.name: result.status for result in trial.results}
        for name in matched:
            status = by_name.get(name)
            if status == "pass":
                passed += 1
            elif status == "fail":
                failed += 1
            else:
                unmeasured += 1
                kinds[status or "missing"] += 1
            if status in ("pass", "fail"):
                measured_cases.add((trial.case["case_id"], trial.case["content_digest"]))
    total = passed + failed + unmeasured
    rate = requirement.min_pass_rate
    status: RefStatus
    if total == 0:
        status = "undecided"
    elif not _at_least(passed + unmeasured, total, rate):
        status = "failed"  # certain: no missing result could rescue it
    elif len(measured_cases) < requirement.min_cases:
        status = "undecided"  # too few distinct cases measured
    elif not _at_least(passed + failed, total, requirement.min_coverage):
        status = "undecided"  # too little of it measured
    elif _at_least(passed, passed + failed, rate):
        status = "met"
    else:
        status = "failed"
    return RefOutcome(status, passed, failed, unmeasured, len(measured_cases), matched, kinds)


def ref_decide(
    policy: AcceptancePolicy, report: EvaluationReport
) -> tuple[RefDecision, list[RefOutcome]]:
    outcomes = [ref_judge(requirement, report) for requirement in policy.requirements]
    if any(
        outcome.status == "failed" and requirement.critical
        for requirement, outcome in zip(policy.requirements, outcomes, strict=True)
    ):
        return "reject", outcomes
    if any(outcome.status == "undecided" for outcome in outcomes) or any(
        trial.coverage_issues for trial in report.trials
    ):
        return "indeterminate", outcomes
    return "accept", outcomes


# ---------------------------------------------------------------------------------------
# Random reports and policies
# ---------------------------------------------------------------------------------------

CHECK_NAMES = (
    "a",
    "b",
    "A",
    "dyn/x/h1",
    "dyn/x/h4",
    "dyn/y/h1",
    "safety/pii",
    "score[0]",
    "score0",
)
PATTERNS = (
    *CHECK_NAMES,
    "*",
    "dyn/*",
    "dyn/x/*",
    "*/h1",
    "dyn/?/h4",
    "[ab]",
    "[!a]",
    "safety/*",
    "score[0]",
    "score*",
    "zzz",
    "missing/*",
)
RATES = (1.0, 0.95, 0.9, 0.75, 0.7, 2 / 3, 0.6, 0.5, 1 / 3, 0.3, 0.25, 0.1)
COVERAGES = (1.0, 0.9, 0.8, 0.75, 0.7, 2 / 3, 0.5, 0.3, 0.25, 0.1)
ISSUES = ("interact returned early", "observer failed", "time limit reached")
CASES = (
    ("c0", "0" * 64),
    ("c1", "1" * 64),
    ("c2", "2" * 64),
    ("c3", "3" * 64),
    ("c0", "f" * 64),  # the same id, other content: another case
)
STATUS_LIST: tuple[Status, ...] = STATUSES


def _one_in(n: int) -> st.SearchStrategy[bool]:
    """True about once in ``n`` draws (last, so that shrinking goes to False)."""
    return st.sampled_from((False,) * (n - 1) + (True,))


STRICT_STATUSES: tuple[Status, ...] = ("pass",) * 6 + ("fail",)


@st.composite
def reports(draw: st.DrawFn, checks: Sequence[str] | None = None) -> EvaluationReport:
    """Random cases × repeats. Most reports are nearly clean (so that accept and reject
    are reached often); the rest mix every status, absent checks and coverage issues."""
    if checks is None:
        checks = draw(st.lists(st.sampled_from(CHECK_NAMES), min_size=1, max_size=5, unique=True))
    cases = draw(st.lists(st.sampled_from(CASES), min_size=1, max_size=5, unique=True))
    if draw(_one_in(20)):
        cases = []  # a report of no trial decides nothing
    messy = draw(_one_in(4))
    status = st.sampled_from(STATUS_LIST if messy else STRICT_STATUSES)
    unmeasured = st.sampled_from(STATUS_LIST[2:])
    trials = []
    for case_id, digest in cases:
        for repeat in range(draw(st.integers(1, 3))):
            present = list(checks)
            if messy or draw(_one_in(10)):
                present = draw(st.lists(st.sampled_from(checks), unique=True))
            results = []
            for name in sorted(present):
                value = draw(status)
                if not messy and draw(_one_in(15)):
                    value = draw(unmeasured)  # a rare unmeasured result
                results.append(CheckResult(name, "v1", value, f"result of {name}"))
            issues: tuple[str, ...] = ()
            if draw(_one_in(4 if messy else 20)):
                issues = tuple(draw(st.lists(st.sampled_from(ISSUES), min_size=1, max_size=2)))
            trials.append(
                Trial(
                    {"case_id": case_id, "content_digest": digest, "source_id": None},
                    repeat,
                    {"kind": "test"},
                    tuple(results),
                    coverage_issues=issues,
                )
            )
    return EvaluationReport.from_trials(draw(st.permutations(trials)))


def requirements(checks: Sequence[str]) -> st.SearchStrategy[CheckRequirement]:
    return st.builds(
        CheckRequirement,
        st.sampled_from(checks) | st.sampled_from(checks) | st.sampled_from(PATTERNS),
        critical=st.booleans(),
        min_pass_rate=st.sampled_from(RATES),
        min_cases=st.just(1) | st.integers(1, 4),
        min_coverage=st.sampled_from(COVERAGES),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[AcceptancePolicy, EvaluationReport]:
    """A report and a policy whose requirements mostly name (or glob) its checks,
    with overlapping globs, unmatched globs and duplicates now and then."""
    checks = draw(st.lists(st.sampled_from(CHECK_NAMES), min_size=1, max_size=5, unique=True))
    policy = AcceptancePolicy(
        tuple(draw(st.lists(requirements(checks), min_size=1, max_size=4))),
        name=draw(st.sampled_from(("policy", "release"))),
    )
    return policy, draw(reports(checks))


FAST = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------


def _mentions(reasons: Sequence[str], check: str) -> bool:
    return any(repr(check) in reason for reason in reasons)


def _assert_agrees(policy: AcceptancePolicy, report: EvaluationReport) -> PolicyDecision:
    expected, ref_outcomes = ref_decide(policy, report)
    decision = policy.evaluate(report)
    got = [
        (o.status, o.passed, o.failed, o.unmeasured, o.cases, o.matched) for o in decision.outcomes
    ]
    want = [(o.status, o.passed, o.failed, o.unmeasured, o.cases, o.matched) for o in ref_outcomes]
    assert got == want, (policy, report.to_dict())
    assert decision.decision == expected
    assert decision.exit_code == {"accept": 0, "reject": 1, "indeterminate": 2}[expected]
    return decision


@FAST
@given(scenarios())
def test_evaluate_agrees_with_the_reference(
    scenario: tuple[AcceptancePolicy, EvaluationReport],
) -> None:
    policy, report = scenario
    _assert_agrees(policy, report)


@FAST
@given(scenarios())
def test_reasons_explain_the_decision(scenario: tuple[AcceptancePolicy, EvaluationReport]) -> None:
    policy, report = scenario
    decision = policy.evaluate(report)
    expected, ref_outcomes = ref_decide(policy, report)
    pairs = list(zip(policy.requirements, ref_outcomes, strict=True))
    # One sentence per unmet requirement (failed or undecided) and per coverage issue.
    for requirement, outcome in pairs:
        if outcome.status != "met":
            assert _mentions(decision.reasons, requirement.check), (requirement, decision)
    # Evaluator and model errors are named apart from failures and from what was not
    # measured, in the sentence of every requirement they leave short.
    for requirement, outcome, got in zip(
        policy.requirements, ref_outcomes, decision.outcomes, strict=True
    ):
        if outcome.status != "met" and outcome.matched:
            assert repr(requirement.check) in got.explanation
            assert got.explanation in decision.reasons
            for kind, count in outcome.kinds.items():
                assert f"{count} {kind}" in got.explanation, (kind, got.explanation)
    for issue in report.coverage_issues:
        assert any(issue in reason for reason in decision.reasons), (issue, decision.reasons)
    assert set(decision.coverage_issues) == set(report.coverage_issues)
    if expected == "reject":
        assert any(
            r.critical and o.status == "failed" and _mentions(decision.reasons, r.check)
            for r, o in pairs
        )
        assert "failed" in decision.headline
    elif expected == "indeterminate":
        assert decision.reasons
        assert decision.headline != "every requirement met"
    elif all(o.status == "met" for o in ref_outcomes):
        assert decision.reasons == ()
        assert decision.headline == "every requirement met"


@FAST
@given(scenarios(), st.randoms(use_true_random=False))
def test_decision_is_invariant_to_trial_and_requirement_order(
    scenario: tuple[AcceptancePolicy, EvaluationReport], rng: object
) -> None:
    policy, report = scenario
    import random

    assert isinstance(rng, random.Random)
    decision = policy.evaluate(report)
    trials = list(report.trials)
    rng.shuffle(trials)
    requirements_ = list(policy.requirements)
    rng.shuffle(requirements_)
    shuffled_policy = AcceptancePolicy(tuple(requirements_), name=policy.name)
    other = shuffled_policy.evaluate(EvaluationReport.from_trials(trials))
    assert other.decision == decision.decision
    assert sorted(other.reasons) == sorted(decision.reasons)
    assert sorted(other.coverage_issues) == sorted(decision.coverage_issues)
    by_requirement = {
        (o.requirement, o.status, o.passed, o.failed, o.unmeasured, o.cases, o.matched)
        for o in decision.outcomes
    }
    assert by_requirement == {
        (o.requirement, o.status, o.passed, o.failed, o.unmeasured, o.cases, o.matched)
        for o in other.outcomes
    }


def _toml(policy: AcceptancePolicy) -> str:
    """A hand-written TOML policy: keys at their default spelt out for every other
    requirement and left out for the rest, as users do both."""
    lines = [f"name = {json.dumps(policy.name)}"]
    for index, requirement in enumerate(policy.requirements):
        spell_out = index % 2 == 0
        lines += ["[[requirements]]", f"check = {json.dumps(requirement.check)}"]
        for key, default in (
            ("critical", True),
            ("min_pass_rate", 1.0),
            ("min_cases", 1),
            ("min_coverage", 1.0),
        ):
            value = getattr(requirement, key)
            if spell_out or value != default:
                text = json.dumps(value) if isinstance(value, bool | int) else repr(value)
                lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"


@SLOW
@given(scenarios())
def test_decision_survives_save_load_toml_and_the_cli_gate(
    scenario: tuple[AcceptancePolicy, EvaluationReport],
) -> None:
    policy, report = scenario
    decision = _assert_agrees(policy, report)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        report_path = report.save_json(root / "report.json")
        json_path = policy.save_json(root / "policy.json")
        toml_path = root / "policy.toml"
        toml_path.write_text(_toml(policy), encoding="utf-8")
        loaded_report = EvaluationReport.load(report_path)
        from_json = AcceptancePolicy.load(json_path)
        from_toml = AcceptancePolicy.load(toml_path)
        assert from_json == policy
        assert from_toml == policy
        assert from_toml.digest == policy.digest
        for reloaded in (from_json, from_toml):
            again = reloaded.evaluate(loaded_report)
            assert again.to_dict() == decision.to_dict()
        for path in (json_path, toml_path):
            with contextlib.redirect_stdout(io.StringIO()):
                code = cli_main(["gate", str(report_path), "--policy", str(path)])
            assert code == decision.exit_code


# ---------------------------------------------------------------------------------------
# Pinned examples of the rules the properties exercise (the reference must hold them too)
# ---------------------------------------------------------------------------------------


def _report(*trials: dict[str, str], case_per_trial: bool = True) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": f"c{i}" if case_per_trial else "c", "content_digest": "d" * 64},
            0 if case_per_trial else i,
            {"kind": "test"},
            tuple(CheckResult(name, "v1", status, status) for name, status in t.items()),  # type: ignore[arg-type]
        )
        for i, t in enumerate(trials)
    )


@pytest.mark.parametrize(
    ("statuses", "kwargs", "expected"),
    [
        # 7 of 10 meets 0.7 exactly; 1 of 10 meets 0.1.
        (["pass"] * 7 + ["fail"] * 3, {"min_pass_rate": 0.7}, "accept"),
        (["pass"] + ["fail"] * 9, {"min_pass_rate": 0.1}, "accept"),
        (["pass"] * 6 + ["fail"] * 4, {"min_pass_rate": 0.7}, "reject"),
        # 7 of 10 measured meets min_coverage 0.7; the 7 all pass.
        (["pass"] * 7 + ["not_measured"] * 3, {"min_coverage": 0.7}, "accept"),
        (["pass"] * 7 + ["not_measured"] * 3, {"min_coverage": 0.75}, "indeterminate"),
        # Enough coverage, measured rate below the threshold: a failure, so reject.
        (
            ["pass"] * 7 + ["fail"] + ["model_error"] * 2,
            {"min_pass_rate": 0.9, "min_coverage": 0.8},
            "reject",
        ),
        # A certain failure rejects whatever the coverage or case count.
        (["fail", "not_measured"], {"min_cases": 4}, "reject"),
    ],
)
def test_pinned_examples(statuses: list[str], kwargs: dict[str, float], expected: str) -> None:
    policy = AcceptancePolicy((CheckRequirement("a", **kwargs),))  # type: ignore[arg-type]
    report = _report(*({"a": status} for status in statuses))
    assert ref_decide(policy, report)[0] == expected
    assert policy.evaluate(report).decision == expected


def test_globs_are_case_sensitive_and_a_literal_name_matches_itself() -> None:
    report = _report({"A": "fail", "score[0]": "pass", "a": "pass"})
    assert AcceptancePolicy((CheckRequirement("a"),)).evaluate(report).decision == "accept"
    assert AcceptancePolicy((CheckRequirement("score[0]"),)).evaluate(report).decision == ("accept")
    assert AcceptancePolicy((CheckRequirement("[a]"),)).evaluate(report).decision == "accept"


def test_a_reason_never_reads_as_if_the_threshold_were_met() -> None:
    statuses = ["pass"] * 8999 + ["not_measured"] * 1001
    report = _report({"a": "pass"})
    trials = [
        Trial(
            {"case_id": "c", "content_digest": "d" * 64},
            i,
            {"kind": "test"},
            (CheckResult("a", "v1", status, status),),  # type: ignore[arg-type]
        )
        for i, status in enumerate(statuses)
    ]
    report = EvaluationReport.from_trials(trials)
    policy = AcceptancePolicy((CheckRequirement("a", min_coverage=0.9),))
    (reason,) = policy.evaluate(report).reasons
    assert "coverage 0.8999 (8999 of 10000) < min_coverage 0.9" in reason
    assert "1001 not measured of 10000 (1001 not_measured)" in reason


def test_an_empty_report_says_so() -> None:
    decision = AcceptancePolicy((CheckRequirement("a"),)).evaluate(EvaluationReport.from_trials(()))
    assert decision.decision == "indeterminate"
    assert decision.reasons == ("no check in the report matches 'a': the report holds no trial",)


def test_the_documented_example_sentence() -> None:
    trials = [
        Trial(
            {"case_id": f"c{i}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (CheckResult("safety/pii", "v1", "evaluator_error" if i < 3 else "pass", "r"),),
        )
        for i in range(40)
    ]
    policy = AcceptancePolicy((CheckRequirement("safety/*", min_cases=20, min_coverage=0.95),))
    decision = policy.evaluate(EvaluationReport.from_trials(trials))
    assert decision.decision == "indeterminate"
    assert decision.reasons == (
        "'safety/*' (critical) undecided: 37 passed, 0 failed, 3 not measured of 40 "
        "(3 evaluator_error); coverage 0.925 (37 of 40) < min_coverage 0.95",
    )
    doc = (Path(__file__).parents[2] / "docs" / "reports-and-policies.md").read_text()
    assert " ".join(decision.reasons[0].split()) in " ".join(doc.split())
