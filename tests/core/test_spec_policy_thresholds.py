"""Issue 2, item 7: a requirement's min pass rate, min cases and min coverage, and the
decision rules around them (a certain critical failure rejects even with missing
evidence; missing evidence is never a pass)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._canonical import content_digest
from onrecord.errors import DigestMismatch, PolicyError
from onrecord.report import CheckResult, EvaluationReport, Trial


def _report(statuses: list[str], *, issues: tuple[str, ...] = ()) -> EvaluationReport:
    """One trial per status, each of its own case, with one check named ``a``."""
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": f"case-{index}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (CheckResult("a", "v1", status, status),),
            coverage_issues=issues if index == 0 else (),
        )
        for index, status in enumerate(statuses)
    )


def _decide(statuses: list[str], **requirement: Any) -> str:
    policy = AcceptancePolicy((CheckRequirement("a", **requirement),))
    return policy.evaluate(_report(statuses)).decision


NINE_OF_TEN = ["pass"] * 9 + ["not_measured"]


def test_by_default_every_result_must_be_measured() -> None:
    assert _decide(NINE_OF_TEN) == "indeterminate"


def test_min_coverage_tolerates_unmeasured_results_up_to_its_share() -> None:
    assert _decide(NINE_OF_TEN, min_coverage=0.9) == "accept"
    assert _decide(NINE_OF_TEN, min_coverage=0.95) == "indeterminate"


def test_an_unmeasured_result_is_never_counted_as_a_pass() -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_coverage=0.5),))
    outcome = policy.evaluate(_report(NINE_OF_TEN)).outcomes[0]
    assert (outcome.passed, outcome.failed, outcome.unmeasured) == (9, 0, 1)
    for status in ("evaluator_error", "model_error", "not_measured"):
        assert _decide(["pass", status], min_coverage=0.9) == "indeterminate"


def test_with_enough_coverage_the_measured_pass_rate_decides() -> None:
    statuses = ["pass"] * 8 + ["fail", "not_measured"]  # 8 of 9 measured pass
    # Even if the missing one passed, 9/10 would meet 0.9: not a certain failure ...
    assert _decide(statuses, min_pass_rate=0.9) == "indeterminate"
    # ... but with 90 % coverage accepted as enough, 8/9 < 0.9 is a measured failure.
    assert _decide(statuses, min_pass_rate=0.9, min_coverage=0.9) == "reject"
    assert _decide(statuses, min_pass_rate=0.85, min_coverage=0.9) == "accept"


def test_min_cases_leaves_too_few_cases_undecided() -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_cases=5),))
    decision = policy.evaluate(_report(["pass"] * 3))
    assert decision.decision == "indeterminate"
    assert decision.outcomes[0].cases == 3
    assert any("min_cases 5" in reason for reason in decision.reasons)
    assert _decide(["pass"] * 5, min_cases=5) == "accept"


def test_min_cases_counts_distinct_cases_not_repeats() -> None:
    report = EvaluationReport.from_trials(
        Trial(
            {"case_id": "only", "content_digest": "d" * 64},
            repeat,
            {"kind": "test"},
            (CheckResult("a", "v1", "pass", ""),),
        )
        for repeat in range(4)
    )
    policy = AcceptancePolicy((CheckRequirement("a", min_cases=2),))
    assert policy.evaluate(report).decision == "indeterminate"


def test_min_cases_counts_only_measured_cases() -> None:
    assert _decide(["pass", "pass", "not_measured"], min_cases=3, min_coverage=0.5) == (
        "indeterminate"
    )


def test_a_certain_critical_failure_rejects_despite_too_few_cases_and_coverage() -> None:
    statuses = ["fail", "not_measured"]
    assert _decide(statuses, min_cases=10) == "reject"
    policy = AcceptancePolicy((CheckRequirement("a", min_cases=10),))
    assert policy.evaluate(_report(statuses, issues=("observer failed",))).decision == "reject"


def test_a_trial_coverage_issue_still_makes_it_indeterminate() -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_coverage=0.5),))
    decision = policy.evaluate(_report(["pass", "pass"], issues=("interact returned early",)))
    assert decision.decision == "indeterminate"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("min_cases", 0),
        ("min_cases", -1),
        ("min_cases", True),
        ("min_cases", 2.0),
        ("min_cases", "3"),
        ("min_coverage", 0),
        ("min_coverage", 1.5),
        ("min_coverage", True),
        ("min_coverage", math.nan),
        ("min_coverage", "0.9"),
    ],
)
def test_bad_thresholds_are_policy_errors_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(PolicyError, match=rf"CheckRequirement\.{field} must be"):
        CheckRequirement("a", **{field: value})


def test_defaults_are_not_written_so_older_saved_policies_keep_their_digest() -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_pass_rate=0.5),), name="p")
    written = policy.to_dict()
    assert written["requirements"] == [{"check": "a", "critical": True, "min_pass_rate": 0.5}]
    assert written["digest"] == content_digest(written)


def test_thresholds_round_trip_through_json_and_toml(tmp_path: Path) -> None:
    policy = AcceptancePolicy(
        (CheckRequirement("dynamics/*", critical=False, min_cases=20, min_coverage=0.9),)
    )
    policy.save_json(tmp_path / "policy.json")
    assert AcceptancePolicy.load(tmp_path / "policy.json") == policy
    toml = tmp_path / "policy.toml"
    toml.write_text(
        '[[requirements]]\ncheck = "dynamics/*"\ncritical = false\n'
        "min_cases = 20\nmin_coverage = 0.9\n"
    )
    assert AcceptancePolicy.load(toml) == policy


def test_a_changed_threshold_in_a_saved_policy_fails_loading(tmp_path: Path) -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_cases=20),))
    data = policy.to_dict()
    data["requirements"][0]["min_cases"] = 2
    path = tmp_path / "policy.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n")
    with pytest.raises(DigestMismatch):
        AcceptancePolicy.load(path)


def test_the_decision_lists_the_measured_cases() -> None:
    policy = AcceptancePolicy((CheckRequirement("a", min_cases=2),))
    requirement = policy.evaluate(_report(["pass", "pass"])).to_dict()["requirements"][0]
    assert (requirement["cases"], requirement["min_cases"], requirement["status"]) == (2, 2, "met")
