"""Adversarial probes of paired comparison and of the ``gate`` / ``compare`` exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement, compare_reports
from onrecord.errors import ComparisonRefused, InputError
from onrecord.report import CheckResult, EvaluationReport, Trial

DIGEST = "d" * 64


def report(
    statuses: list[str], *, version: str = "v1", measures: list[dict[str, Any]] | None = None
) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": f"case-{i}", "content_digest": DIGEST},
            0,
            {"kind": "test"},
            (CheckResult("ok", version, status, ""),),
            measures=(measures or [{}] * len(statuses))[i],
            settings={"environment_id": "env"},
        )
        for i, status in enumerate(statuses)
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"resamples": 0}, "resamples"),
        ({"resamples": -5}, "resamples"),
        ({"resamples": 2.5}, "resamples"),
        ({"resamples": True}, "resamples"),
        ({"resamples": 10**12}, "resamples"),  # ran until memory ran out
        ({"seed": -1}, "seed"),
        ({"seed": "0"}, "seed"),
    ],
)
def test_bad_bootstrap_settings_name_the_argument(kwargs: dict[str, Any], field: str) -> None:
    # resamples=0 used to fail inside NumPy ("need at least one array to concatenate").
    rep = report(["pass"], measures=[{"return": 1.0}])
    with pytest.raises(InputError, match=rf"compare_reports\({field}=\.\.\.\)"):
        compare_reports(rep, rep, **kwargs)


def test_refusal_says_which_side_lacks_a_check() -> None:
    with pytest.raises(ComparisonRefused) as info:
        compare_reports(EvaluationReport.from_trials([]), report(["pass"]))
    reasons = info.value.reasons
    assert reasons[0] == "check 'ok' is only in B (version 'v1')"
    assert any(reason.startswith("case sets differ: 0 only in A") for reason in reasons)


def test_two_empty_reports_compare_with_nothing_to_pair() -> None:
    empty = EvaluationReport.from_trials([])
    comparison = compare_reports(empty, empty)
    assert (comparison.pairs, comparison.checks, comparison.measures) == (0, (), ())


def test_different_versions_and_case_sets_are_all_listed() -> None:
    with pytest.raises(ComparisonRefused) as info:
        compare_reports(report(["pass", "pass"]), report(["pass"], version="v2"))
    assert info.value.reasons == (
        "check 'ok': version 'v1' in A, 'v2' in B",
        "case sets differ: 1 only in A (case-1), 0 only in B",
    )


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["pass", "fail", "not_measured", "evaluator_error"]), max_size=30))
def test_ties_everywhere_give_p_one(statuses: list[str]) -> None:
    rep = report(statuses)
    comparison = compare_reports(rep, rep)
    check = comparison.checks[0] if comparison.checks else None
    if check is not None:
        assert check.p_value == 1.0
        assert check.discordant == ()
        assert check.unmeasured == sum(s not in ("pass", "fail") for s in statuses)


def test_bootstrap_with_one_case_is_the_single_difference() -> None:
    a = report(["pass"], measures=[{"return": 1.5}])
    b = report(["pass"], measures=[{"return": 4.0}])
    measure = compare_reports(a, b, resamples=1).measures[0]
    assert (measure.pairs, measure.mean_difference, measure.interval) == (1, 2.5, (2.5, 2.5))


def test_a_measure_missing_on_one_side_is_left_out_of_its_pairs() -> None:
    a = report(["pass", "pass"], measures=[{"return": 1.0}, {"return": 2.0}])
    b = report(["pass", "pass"], measures=[{"return": 3.0}, {}])
    measure = compare_reports(a, b).measures[0]
    assert (measure.pairs, measure.mean_a, measure.mean_b) == (1, 1.0, 3.0)


# --- the command line, as a CI job runs it -----------------------------------------


def onrecord(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onrecord.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("probe")
    report(["pass"]).save_json(folder / "pass.json")
    report(["fail", "not_measured"]).save_json(folder / "fail.json")
    report(["not_measured"]).save_json(folder / "unmeasured.json")
    report(["pass"], version="v2").save_json(folder / "v2.json")
    EvaluationReport.from_trials([]).save_json(folder / "empty.json")
    AcceptancePolicy((CheckRequirement("ok"),)).save_json(folder / "policy.json")
    (folder / "typo.toml").write_text('[[requirements]]\ncheck = "ok"\ncritcal = false\n')
    (folder / "latin1.toml").write_bytes(b'[[requirements]]\ncheck = "\xe9"\n')
    return folder


@pytest.mark.parametrize(
    ("report_name", "policy_name", "code"),
    [
        ("pass.json", "policy.json", 0),
        ("fail.json", "policy.json", 1),
        ("unmeasured.json", "policy.json", 2),
        ("empty.json", "policy.json", 2),
        # Both used to be wrong: a typo accepted with exit 0, a non-UTF-8 file crashed
        # with a traceback and exit 1, which a CI job reads as "reject".
        ("pass.json", "typo.toml", 3),
        ("pass.json", "latin1.toml", 3),
        ("policy.json", "policy.json", 3),
        ("pass.json", "pass.json", 3),
    ],
)
def test_gate_exit_codes(folder: Path, report_name: str, policy_name: str, code: int) -> None:
    result = onrecord("gate", folder / report_name, "--policy", folder / policy_name)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    if code == 3:
        assert "onrecord gate: error: " in result.stderr


@pytest.mark.parametrize(
    ("a", "b", "code"),
    [
        ("pass.json", "pass.json", 0),
        ("empty.json", "empty.json", 0),
        ("pass.json", "v2.json", 3),
        ("empty.json", "pass.json", 3),
    ],
)
def test_compare_exit_codes(folder: Path, a: str, b: str, code: int) -> None:
    result = onrecord("compare", folder / a, folder / b)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
