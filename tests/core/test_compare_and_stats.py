"""Paired comparison (exact McNemar, bootstrap), refusals, Wilson and pass^k."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

import onrecord._stats as stats
from onrecord import compare_reports
from onrecord._stats import mcnemar_exact_p, pass_hat_k, wilson_interval
from onrecord.errors import ComparisonRefused
from onrecord.report import CheckResult, EvaluationReport, Trial


def _report(
    outcomes: list[bool],
    *,
    version: str = "v1",
    measure_shift: float = 0.0,
    cases: int | None = None,
) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": f"case-{i}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (CheckResult("ok", version, "pass" if passed else "fail", ""),),
            measures={"return": float(i) + measure_shift},
            settings={"env": "x"},
        )
        for i, passed in enumerate(outcomes[:cases])
    )


def test_a_report_compared_with_itself_has_p_one(frozenlake_report: EvaluationReport) -> None:
    comparison = compare_reports(frozenlake_report, frozenlake_report)
    assert comparison.pairs == 3
    assert {check.p_value for check in comparison.checks} == {1.0}
    assert comparison.measures[0].mean_difference == 0.0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_p_values_equal_scipy_binomtest(pairs: list[tuple[bool, bool]]) -> None:
    a = _report([x for x, _ in pairs])
    b = _report([y for _, y in pairs])
    check = compare_reports(a, b).checks[0]
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    assert (check.only_a, check.only_b) == (only_a, only_b)
    expected = 1.0 if only_a + only_b == 0 else binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert math.isclose(check.p_value, expected, rel_tol=1e-9, abs_tol=1e-12)


def test_discordant_pairs_are_listed() -> None:
    check = compare_reports(_report([True, True, False]), _report([True, False, True])).checks[0]
    assert [str(pair) for pair in check.discordant] == [
        "case-1#0: pass→fail",
        "case-2#0: fail→pass",
    ]
    first = check.discordant[0].to_dict()
    assert (first["case_id"], first["repeat"], first["a"], first["b"]) == (
        "case-1",
        0,
        "pass",
        "fail",
    )


def test_discordant_pairs_are_data_a_case_id_cannot_imitate() -> None:
    # A case id holding "#1: pass→fail" made the display text of two pairs ambiguous;
    # the saved comparison gives fields.
    sly = "x#1: pass→fail"

    def report(outcomes: list[bool]) -> EvaluationReport:
        return EvaluationReport.from_trials(
            Trial(
                {"case_id": case_id, "content_digest": "d" * 64},
                0,
                {"kind": "test"},
                (CheckResult("ok", "v1", "pass" if passed else "fail", ""),),
            )
            for case_id, passed in zip((sly, "x"), outcomes, strict=True)
        )

    pairs = compare_reports(report([False, True]), report([True, False])).to_dict()["checks"][0][
        "discordant"
    ]
    assert [(p["case_id"], p["a"], p["b"]) for p in pairs] == [
        (sly, "fail", "pass"),
        ("x", "pass", "fail"),
    ]


def test_bootstrap_interval_covers_a_constant_shift() -> None:
    comparison = compare_reports(_report([True] * 20), _report([True] * 20, measure_shift=2.0))
    measure = comparison.measures[0]
    assert measure.mean_difference == pytest.approx(2.0)
    assert measure.interval == pytest.approx((2.0, 2.0))


def test_different_check_versions_are_refused_with_reasons() -> None:
    with pytest.raises(ComparisonRefused) as info:
        compare_reports(_report([True]), _report([True], version="v2"))
    assert info.value.reasons == ("check 'ok': version 'v1' in A, 'v2' in B",)


def test_different_case_sets_are_refused() -> None:
    with pytest.raises(ComparisonRefused, match="case sets differ: 0 only in A"):
        compare_reports(_report([True]), _report([True, True]))


def test_different_environment_settings_are_refused(frozenlake_report: EvaluationReport) -> None:
    with pytest.raises(ComparisonRefused, match=r"environment settings differ.*max_steps: "):
        compare_reports(
            frozenlake_report,
            EvaluationReport.from_trials(
                Trial(
                    t.case, t.repeat, t.source, t.results, settings={**t.settings, "max_steps": 99}
                )
                for t in frozenlake_report.trials
            ),
        )


@pytest.mark.parametrize(("successes", "trials"), [(0, 10), (5, 10), (10, 10), (37, 120)])
def test_wilson_interval_matches_scipy(successes: int, trials: int) -> None:
    expected = binomtest(successes, trials).proportion_ci(method="wilson")
    assert wilson_interval(successes, trials) == pytest.approx(
        (expected.low, expected.high), abs=1e-9
    )


def test_pass_hat_k_is_the_unbiased_estimate() -> None:
    # one case passing 2 of 3 repeats: pass^1 = 2/3, pass^2 = C(2,2)/C(3,2) = 1/3, pass^3 = 0
    assert pass_hat_k([(2, 3)], 1) == pytest.approx(2 / 3)
    assert pass_hat_k([(2, 3)], 2) == pytest.approx(1 / 3)
    assert pass_hat_k([(2, 3)], 3) == 0.0
    assert pass_hat_k([(2, 3)], 4) is None


def test_mcnemar_large_counts_stay_finite() -> None:
    p = mcnemar_exact_p(4000, 4100)
    assert 0.0 < p < 1.0
    assert p == pytest.approx(binomtest(4000, 8100, 0.5).pvalue, rel=1e-9)


@pytest.mark.parametrize(("only_a", "only_b"), [(9800, 10200), (30000, 29000), (5, 40000)])
def test_mcnemar_is_exact_for_many_discordant_pairs(only_a: int, only_b: int) -> None:
    expected = binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert mcnemar_exact_p(only_a, only_b) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert mcnemar_exact_p(only_b, only_a) == mcnemar_exact_p(only_a, only_b)


def test_the_policy_a_report_was_made_for_is_locked(goal_episode: Any) -> None:
    from onrecord import AcceptancePolicy, CheckRequirement
    from onrecord.episode import evaluate_episode
    from onrecord.examples import frozenlake_task

    checks = list(frozenlake_task().checks)
    strict = AcceptancePolicy((CheckRequirement("reached_goal"),), name="strict")
    lenient = AcceptancePolicy((CheckRequirement("reached_goal", critical=False),), name="lax")
    a = evaluate_episode(goal_episode, checks, policy=strict)
    assert a.lock["policy"] == {"name": "strict", "digest": strict.digest}
    assert compare_reports(a, evaluate_episode(goal_episode, checks, policy=strict)).pairs == 1
    with pytest.raises(ComparisonRefused, match="lock settings differ") as refused:
        compare_reports(a, evaluate_episode(goal_episode, checks, policy=lenient))
    # where they differ, not only which lock key: "lock settings differ: policy"
    assert "policy.name: 'strict' in A, 'lax' in B" in str(refused.value)
    assert "policy.digest: " in str(refused.value)


@pytest.mark.parametrize(("size", "block"), [(5, 1_000_000), (300, 1_000), (300, 7), (40, 1)])
def test_the_bootstrap_in_blocks_equals_one_draw(
    size: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Memory stays flat for many cases; the interval is the one a single draw gives.
    differences = np.random.default_rng(size).normal(0.3, 1.0, size)
    rng = np.random.default_rng(11)
    means = differences[rng.integers(0, size, size=(500, size))].mean(axis=1)
    expected = tuple(np.percentile(means, [2.5, 97.5]))
    monkeypatch.setattr(stats, "_INDICES_PER_BLOCK", block)
    got = stats.paired_bootstrap_ci(differences, resamples=500, seed=11)
    assert got == pytest.approx(expected, rel=1e-12)  # the same draws; sums may round apart
    assert got[0] <= float(differences.mean()) <= got[1]
    assert all(map(math.isnan, stats.paired_bootstrap_ci([], resamples=10)))


@settings(max_examples=8, deadline=None)
@given(st.integers(50_001, 60_000), st.floats(0.45, 0.5))
def test_mcnemar_beyond_the_exact_limit_matches_exact_integers(
    discordant: int, share: float
) -> None:
    # Exact integers are quadratic: 0.9 s at 100,000 discordant pairs, minutes at a
    # million. Above 50,000 the tail is summed in floating point.
    only_a = int(discordant * share)
    only_b = discordant - only_a
    term = tail = 1
    for i in range(min(only_a, only_b)):
        term = term * (discordant - i) // (i + 1)
        tail += term
    exact = min(1.0, 2 * tail / (1 << discordant))
    # Below a share of about 0.42 the p-value underflows to 0 and any tiny result would
    # pass: keep to shares whose p-value is a real number to compare.
    assert exact > 1e-200
    assert mcnemar_exact_p(only_a, only_b) == pytest.approx(exact, rel=1e-9, abs=1e-300)


def test_mcnemar_for_ten_million_pairs_is_quick_and_right() -> None:
    only_a = 5_000_000 - 3_000
    p = mcnemar_exact_p(only_a, 10_000_000 - only_a)
    assert p == pytest.approx(binomtest(only_a, 10_000_000, 0.5).pvalue, rel=1e-8)
    assert mcnemar_exact_p(5_000_000, 5_000_001) == 1.0
