"""AcceptancePolicy: measured failure rejects, missing evidence is indeterminate, globs
require every matching check in every trial."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.errors import PolicyError
from onrecord.report import CheckResult, EvaluationReport, Trial

CASE = {"case_id": "c", "content_digest": "d" * 64, "source_id": None}


def report(*trials: dict[str, str], issues: tuple[str, ...] = ()) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            CASE,
            repeat,
            {"kind": "test"},
            tuple(CheckResult(name, "v1", status, status) for name, status in t.items()),
            coverage_issues=issues,
        )
        for repeat, t in enumerate(trials)
    )


def decide(policy: AcceptancePolicy, rep: EvaluationReport) -> str:
    return policy.evaluate(rep).decision


REQUIRE_A = AcceptancePolicy((CheckRequirement("a"),))


def test_all_pass_accepts() -> None:
    assert decide(REQUIRE_A, report({"a": "pass"}, {"a": "pass"})) == "accept"


def test_measured_failure_rejects_even_with_missing_evidence() -> None:
    rep = report({"a": "fail"}, {"a": "not_measured"}, issues=("observer failed",))
    decision = REQUIRE_A.evaluate(rep)
    assert decision.decision == "reject"
    assert decision.exit_code == 1
    assert "'a' (critical) failed: 0 passed, 1 failed, 1 not measured of 2" in decision.reasons[0]


@pytest.mark.parametrize("status", ["not_measured", "evaluator_error", "model_error"])
def test_unmeasured_is_never_a_pass(status: str) -> None:
    assert decide(REQUIRE_A, report({"a": "pass"}, {"a": status})) == "indeterminate"


def test_coverage_issue_makes_an_otherwise_passing_report_indeterminate() -> None:
    decision = REQUIRE_A.evaluate(report({"a": "pass"}, issues=("interact returned early",)))
    assert decision.decision == "indeterminate"
    assert decision.coverage_issues == ("c#0: interact returned early",)


def test_missing_check_is_indeterminate() -> None:
    decision = AcceptancePolicy((CheckRequirement("zzz"),)).evaluate(report({"a": "pass"}))
    assert decision.decision == "indeterminate"
    assert decision.reasons == ("no check in the report matches 'zzz'",)


def test_glob_requires_every_matching_check_in_every_trial() -> None:
    policy = AcceptancePolicy((CheckRequirement("dynamics/angle/*"),))
    full = report({"dynamics/angle/h1": "pass", "dynamics/angle/h4": "pass"})
    assert decide(policy, full) == "accept"
    censored = report(
        {"dynamics/angle/h1": "pass", "dynamics/angle/h4": "pass"}, {"dynamics/angle/h1": "pass"}
    )  # h4 missing in the second trial
    assert decide(policy, censored) == "indeterminate"


def test_advisory_failure_does_not_reject() -> None:
    policy = AcceptancePolicy((CheckRequirement("a"), CheckRequirement("b", critical=False)))
    decision = policy.evaluate(report({"a": "pass", "b": "fail"}))
    assert decision.decision == "accept"
    assert decision.reasons == (
        "'b' (advisory) failed: 0 passed, 1 failed, 0 not measured of 1; needs pass rate >= 1",
    )


def test_min_pass_rate_decides_when_missing_results_cannot_change_it() -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_pass_rate=0.5),))
    assert decide(policy, report({"a": "pass"}, {"a": "fail"}, {"a": "pass"})) == "accept"
    assert decide(policy, report({"a": "fail"}, {"a": "fail"}, {"a": "pass"})) == "reject"
    assert (
        decide(policy, report({"a": "pass"}, {"a": "fail"}, {"a": "not_measured"}))
        == "indeterminate"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"check": ""}, "CheckRequirement.check must be a check name or glob, got ''"),
        (
            {"check": "a", "min_pass_rate": 0},
            "CheckRequirement.min_pass_rate must be in (0, 1], got 0",
        ),
        (
            {"check": "a", "critical": "yes"},
            "CheckRequirement.critical must be True or False, got 'yes'",
        ),
    ],
)
def test_bad_requirements_are_named(kwargs: dict[str, object], message: str) -> None:
    check = kwargs.pop("check")
    with pytest.raises(PolicyError, match=f"^{re.escape(message)}$"):
        CheckRequirement(check, **kwargs)  # type: ignore[arg-type]


def test_empty_policy_is_refused() -> None:
    with pytest.raises(PolicyError, match="non-empty tuple of CheckRequirement"):
        AcceptancePolicy(())


def test_toml_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'name = "release"\n[[requirements]]\ncheck = "a"\n'
        '[[requirements]]\ncheck = "b"\ncritical = false\n'
    )
    policy = AcceptancePolicy.load(path)
    assert policy.name == "release"
    assert [r.check for r in policy.requirements] == ["a", "b"]
    assert decide(policy, report({"a": "pass", "b": "fail"})) == "accept"


def test_policy_json_round_trip(tmp_path: Path) -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_pass_rate=0.9),), name="p")
    policy.save_json(tmp_path / "p.json")
    assert AcceptancePolicy.load(tmp_path / "p.json") == policy
