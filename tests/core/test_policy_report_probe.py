"""Adversarial probes of reports, acceptance policies and their statistics: bad field
values, tampered files and edge counts (round trips: test_report_roundtrip_probe.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._canonical import content_digest
from onrecord._stats import wilson_interval
from onrecord.errors import (
    DigestMismatch,
    InputError,
    OnrecordError,
    PolicyError,
    SchemaError,
)
from onrecord.report import CheckResult, EvaluationReport, Trial

DIGEST = "d" * 64


def trial(
    case_id: str = "c",
    repeat: int = 0,
    issues: tuple[str, ...] = (),
    measures: dict[str, Any] | None = None,
    **statuses: str,
) -> Trial:
    return Trial(
        {"case_id": case_id, "content_digest": DIGEST},
        repeat,
        {"kind": "test"},
        tuple(CheckResult(name, "v1", status, status) for name, status in statuses.items()),
        coverage_issues=issues,
        measures=measures or {},
    )


def report(*trials: Trial, extra: dict[str, Any] | None = None) -> EvaluationReport:
    return EvaluationReport.from_trials(trials, lock_extra=extra)


REQUIRE_A = AcceptancePolicy((CheckRequirement("a"),))


# --- Wilson interval ---------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=20_000))
def test_wilson_bounds_are_exactly_0_and_1_at_the_extremes(n: int) -> None:
    # Before the fix 943 of n < 3000 gave an all-pass upper bound of 0.9999999999999999
    # and 544 an all-fail lower bound of 5.6e-17 (e.g. n = 10 and n = 3).
    assert wilson_interval(n, n)[1] == 1.0
    assert wilson_interval(0, n)[0] == 0.0


@pytest.mark.parametrize(("k", "n"), [(0, 3), (10, 10), (0, 1), (1, 1), (3, 7), (0, 0)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    if n == 0:
        assert wilson_interval(0, 0) == (0.0, 1.0)
        return
    expected = binomtest(k, n).proportion_ci(method="wilson")
    low, high = wilson_interval(k, n)
    assert math.isclose(low, expected.low, abs_tol=1e-12)
    assert math.isclose(high, expected.high, abs_tol=1e-12)


def test_summary_of_an_all_pass_report_has_upper_bound_one() -> None:
    summary = report(*(trial(repeat=i, a="pass") for i in range(10))).summary()
    assert summary.interval[1] == 1.0
    assert summary.checks[0].interval[1] == 1.0


# --- policy decisions --------------------------------------------------------------


def test_exact_check_name_with_glob_characters_is_matched() -> None:
    # fnmatch reads "score[0]" as "score0": the check could not be required by name.
    rep = report(trial(**{"score[0]": "fail"}))
    decision = AcceptancePolicy((CheckRequirement("score[0]"),)).evaluate(rep)
    assert decision.decision == "reject"
    assert decision.outcomes[0].matched == ("score[0]",)


def test_zero_cases_is_indeterminate_never_accept() -> None:
    decision = REQUIRE_A.evaluate(report())
    assert decision.decision == "indeterminate"
    assert decision.exit_code == 2
    summary = report().summary()
    assert (summary.trials, summary.pass_rate, summary.pass_hat_k) == (0, None, {})


@pytest.mark.parametrize("status", ["not_measured", "evaluator_error", "model_error"])
def test_every_check_unmeasured_is_indeterminate_and_counted(status: str) -> None:
    rep = report(trial(a=status), trial(repeat=1, a=status))
    decision = REQUIRE_A.evaluate(rep)
    assert decision.decision == "indeterminate"
    assert (decision.outcomes[0].passed, decision.outcomes[0].unmeasured) == (0, 2)
    check = rep.summary().checks[0]
    assert (check.pass_rate, check.coverage, check.interval) == (None, 0.0, (0.0, 1.0))


def test_critical_failure_with_missing_evidence_and_glob_rejects() -> None:
    rep = report(
        trial(**{"dyn/x/h1": "fail", "dyn/x/h2": "pass"}, issues=("observer failed",)),
        trial(repeat=1, **{"dyn/x/h1": "evaluator_error"}),
    )
    policy = AcceptancePolicy((CheckRequirement("dyn/x/*"), CheckRequirement("nothing*")))
    decision = policy.evaluate(rep)
    assert decision.decision == "reject"
    assert decision.outcomes[0].matched == ("dyn/x/h1", "dyn/x/h2")
    assert (decision.outcomes[0].failed, decision.outcomes[0].unmeasured) == (1, 2)
    assert decision.outcomes[1].status == "undecided"


def test_summary_counts_a_trial_missing_a_check_as_incomplete() -> None:
    # Merging reports of different check sets: the policy sees "b" missing in trial 0,
    # so the summary must not count that trial as a pass.
    merged = EvaluationReport.merge(
        [report(trial("x", a="pass")), report(trial("y", a="pass", b="pass"))]
    )
    summary = merged.summary()
    assert summary.outcomes == {"pass": 1, "fail": 0, "incomplete": 1}
    # pass^k leaves the incomplete trial out (neither a pass nor a failure) and says so.
    assert (summary.pass_hat_k, summary.pass_hat_k_cases) == ({1: 1.0}, {1: 1})
    assert AcceptancePolicy((CheckRequirement("*"),)).evaluate(merged).decision == ("indeterminate")


def test_the_html_task_table_agrees_with_the_summary_on_a_missing_check() -> None:
    from onrecord.html._tasks import task_rows

    merged = EvaluationReport.merge(
        [report(trial("x", a="pass")), report(trial("y", a="pass", b="pass"))]
    )
    first, second = merged.trials
    assert (first.outcome, first.outcome_among(merged.check_names)) == ("pass", "incomplete")
    assert second.outcome_among(merged.check_names) == "pass"
    rows = {row["case_id"]: row for row in task_rows(merged)}
    assert (rows["x"]["pass"], rows["x"]["incomplete"], rows["y"]["pass"]) == (0, 1, 1)


def test_pass_hat_k_with_unequal_repeats_per_case() -> None:
    rep = report(
        trial("x", 0, a="pass"),
        trial("x", 1, a="pass"),
        trial("x", 2, a="fail"),
        trial("y", 0, a="pass"),
    )
    # pass^1 averages x (2/3) and y (1); pass^2 and pass^3 only x (C(2,k)/C(3,k)).
    assert rep.summary().pass_hat_k == pytest.approx({1: (2 / 3 + 1) / 2, 2: 1 / 3, 3: 0.0})


def test_merge_keeps_the_lock_settings_every_report_shares() -> None:
    policy = {"policy": {"name": "p", "digest": "1" * 64}}
    merged = EvaluationReport.merge(
        [report(trial("x", a="pass"), extra=policy), report(trial("y", a="pass"), extra=policy)]
    )
    assert merged.lock["policy"] == policy["policy"]
    other = {"policy": {"name": "q", "digest": "2" * 64}}
    mixed = EvaluationReport.merge(
        [report(trial("x", a="pass"), extra=policy), report(trial("y", a="pass"), extra=other)]
    )
    assert "policy" not in mixed.lock


# --- bad policy fields -------------------------------------------------------------


@pytest.mark.parametrize("rate", [True, False, -0.5, 1.5, math.nan, math.inf, "0.9", None])
def test_bad_min_pass_rate_is_a_policy_error_naming_the_field(rate: Any) -> None:
    with pytest.raises(PolicyError, match=r"CheckRequirement\.min_pass_rate must be in \(0, 1\]"):
        CheckRequirement("a", min_pass_rate=rate)


@pytest.mark.parametrize("name", [5, math.nan, ["x"], "", "  ", None])
def test_policy_name_must_be_a_non_empty_string(name: Any) -> None:
    # A NaN name used to save as null, so the loaded policy differed from the saved one.
    with pytest.raises(PolicyError, match=r"AcceptancePolicy\.name must be a non-empty string"):
        AcceptancePolicy((CheckRequirement("a"),), name=name)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[requirements]]\ncheck = "a"\ncritcal = false\n', r"unknown field\(s\) \['critcal'\]"),
        ('[[requirements]]\ncheck = "a"\nmin_pass_rat = 0.5\n', r"\['min_pass_rat'\]"),
        ('nmae = "x"\n[[requirements]]\ncheck = "a"\n', r"the policy has unknown field\(s\)"),
        ('[[requirements]]\ncheck = "a"\nmin_pass_rate = true\n', "min_pass_rate"),
        ('name = 3\n[[requirements]]\ncheck = "a"\n', "AcceptancePolicy.name"),
        ('requirements = ["a"]\n', "requirement #1 is malformed"),
        ("[[requirements]]\ncritical = false\n", "each needs a 'check' name"),
    ],
)
def test_hand_written_toml_mistakes_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=message):
        AcceptancePolicy.load(path)


def test_non_utf8_toml_is_a_policy_error(tmp_path: Path) -> None:
    path = tmp_path / "policy.TOML"
    path.write_bytes(b'[[requirements]]\ncheck = "\xff"\n')
    with pytest.raises(PolicyError, match="not valid UTF-8 TOML"):
        AcceptancePolicy.load(path)


@pytest.mark.parametrize("data", [[1], "policy", None, 3])
def test_from_dict_of_a_non_object_is_an_onrecord_error(data: Any) -> None:
    with pytest.raises(PolicyError, match="a policy must be an object"):
        AcceptancePolicy.from_dict(data, verify_digest=False)
    with pytest.raises(SchemaError, match="a report must be a JSON object"):
        EvaluationReport.from_dict(data)


def test_saved_policy_with_an_added_field_names_the_field() -> None:
    data = REQUIRE_A.to_dict() | {"approved": True}
    data["digest"] = content_digest(data)
    with pytest.raises(PolicyError, match=r"unknown field\(s\) \['approved'\]"):
        AcceptancePolicy.from_dict(data)


def test_saved_policy_rewritten_with_a_fresh_digest_is_explained() -> None:
    data = REQUIRE_A.to_dict()
    del data["schema"]
    data["digest"] = content_digest(data)
    with pytest.raises(DigestMismatch, match="rewritten by hand"):
        AcceptancePolicy.from_dict(data)


# --- bad trial fields --------------------------------------------------------------


@pytest.mark.parametrize("repeat", ["0", -1, 0.5, True, None])
def test_trial_repeat_must_be_a_non_negative_integer(repeat: Any) -> None:
    # A string repeat used to crash build_lock's sort with a bare TypeError.
    with pytest.raises(InputError, match=r"Trial\.repeat must be a non-negative integer"):
        trial(repeat=repeat, a="pass")


def test_numpy_repeat_is_stored_as_a_plain_int() -> None:
    rep = report(trial(repeat=np.int64(2), a="pass"))  # type: ignore[arg-type]
    assert type(rep.trials[0].repeat) is int
    assert EvaluationReport.from_dict(orjson.loads(rep.to_bytes())).digest == rep.digest


@pytest.mark.parametrize("value", ["1.5", None, True, [1.0], {"x": 1}])
def test_measures_must_be_numbers(value: Any) -> None:
    # compare_reports used to crash on these with a bare ValueError / TypeError.
    with pytest.raises(InputError, match="measure 'return' of case 'c' must be a finite number"):
        trial(measures={"return": value}, a="pass")


def test_nan_measure_is_refused_with_its_path() -> None:
    with pytest.raises(OnrecordError, match=r"\$\.trial\.measures\.return is nan"):
        trial(measures={"return": math.nan}, a="pass")


def test_malformed_trial_fields_are_input_errors() -> None:
    with pytest.raises(InputError, match="coverage_issues must be a tuple of sentences"):
        trial(issues="observer failed", a="pass")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="case_id and content_digest strings"):
        Trial({"case_id": 5, "content_digest": DIGEST}, 0, {}, ())
    with pytest.raises(InputError, match=r"CheckResult\.version must be a non-empty string"):
        CheckResult("a", 1, "pass", "")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"CheckResult\.name must be a non-empty string"):
        CheckResult("", "v1", "pass", "")


# --- tampered and truncated files --------------------------------------------------

SAMPLE = report(trial(a="fail", b="pass"), trial(repeat=1, a="not_measured", b="pass"))


@pytest.mark.parametrize(
    "where", [(), ("trials", 0), ("trials", 0, "results", 0)], ids=["top", "trial", "result"]
)
def test_report_with_an_added_field_is_refused(tmp_path: Path, where: tuple[Any, ...]) -> None:
    # The digest covers only what the report rebuilds: an added "override" used to load
    # silently, and the digest even matched.
    data = SAMPLE.to_dict()
    target: Any = data
    for step in where:
        target = target[step]
    target["override"] = "pass"
    # Its digest recomputed over the whole record (without that, the digest is what
    # fails first: tests/records/test_loaders_digest_first.py).
    data["digest"] = content_digest(data)
    path = tmp_path / "report.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n")
    with pytest.raises(SchemaError, match=r"unknown field\(s\) \['override'\]"):
        EvaluationReport.load(path)


def test_flipped_status_is_detected(tmp_path: Path) -> None:
    path = SAMPLE.save_json(tmp_path / "report.json")
    path.write_bytes(path.read_bytes().replace(b'"status":"fail"', b'"status":"pass"'))
    with pytest.raises(DigestMismatch, match="changed after saving"):
        EvaluationReport.load(path)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    # Before: "schema is 'onrecord.policy/v1', expected 'onrecord.report/v1'" without the
    # file, so with a report and a policy on one command line the user had to guess.
    from onrecord._canonical import canonical_bytes, content_digest
    from onrecord.errors import PolicyError, SchemaError
    from onrecord.policy import AcceptancePolicy, CheckRequirement
    from onrecord.report import EvaluationReport

    policy = AcceptancePolicy((CheckRequirement("a"),)).save_json(tmp_path / "policy.json")
    with pytest.raises(SchemaError, match=r"policy\.json: schema is 'onrecord\.policy/v1'"):
        EvaluationReport.load(policy)
    bad = {"schema": "onrecord.policy/v1", "requirements": [{"check": 5}]}
    bad["digest"] = content_digest(bad)
    (tmp_path / "bad.json").write_bytes(canonical_bytes(bad))
    with pytest.raises(PolicyError, match=r"bad\.json: CheckRequirement\.check"):
        AcceptancePolicy.load(tmp_path / "bad.json")
    (tmp_path / "bad.toml").write_text('[[requirements]]\ncheck = "a"\nmin_pass_rate = 2\n')
    with pytest.raises(PolicyError, match=r"bad\.toml: "):
        AcceptancePolicy.load(tmp_path / "bad.toml")


def test_the_headline_keeps_a_case_id_holding_a_colon() -> None:
    # Before: the coverage issue was split on its first ": ", inside "a: b#0".
    from onrecord.policy import _without_trial

    assert _without_trial("a: b#0: the episode ended early") == "the episode ended early"
    assert _without_trial("case#12: observer failed: x") == "observer failed: x"
