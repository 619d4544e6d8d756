"""Issue 2, item 8: two reports with equal locks always get a p-value (exact McNemar,
equal to ``scipy.stats.binomtest``), whatever their trials hold; a report's lock always
describes its own trials, so equal locks mean pairable trials."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from onrecord import compare_reports
from onrecord.errors import InputError
from onrecord.report import STATUSES, CheckResult, EvaluationReport, Trial

CHECKS = ("a", "b")


def _trial(case: int, repeat: int, statuses: dict[str, str], value: float) -> Trial:
    return Trial(
        {"case_id": f"case-{case}", "content_digest": "d" * 64},
        repeat,
        {"kind": "test"},
        tuple(CheckResult(name, "v1", status, "") for name, status in statuses.items()),
        measures={"return": value},
        settings={"environment_id": "e"},
    )


status = st.sampled_from(STATUSES)
plan = st.lists(
    st.tuples(
        st.integers(0, 5),  # case
        st.integers(0, 2),  # repeat
        st.tuples(status, status, status, status),  # a and b in A, a and b in B
        st.floats(-10, 10),
        st.floats(-10, 10),
    ),
    min_size=1,
    max_size=25,
    unique_by=lambda item: (item[0], item[1]),
)


@settings(max_examples=80, deadline=None)
@given(plan)
def test_equal_locks_always_get_a_p_value_equal_to_binomtest(
    items: list[tuple[int, int, tuple[str, str, str, str], float, float]],
) -> None:
    a = EvaluationReport.from_trials(
        _trial(case, repeat, dict(zip(CHECKS, s[:2], strict=True)), x)
        for case, repeat, s, x, _ in items
    )
    b = EvaluationReport.from_trials(
        _trial(case, repeat, dict(zip(CHECKS, s[2:], strict=True)), y)
        for case, repeat, s, _, y in reversed(items)  # order does not matter
    )
    assert a.lock == b.lock
    comparison = compare_reports(a, b)
    assert comparison.pairs == len(items)
    assert [check.name for check in comparison.checks] == list(CHECKS)
    for offset, check in enumerate(comparison.checks):
        pairs = [(s[offset], s[offset + 2]) for _, _, s, _, _ in items]
        only_a = sum(x == "pass" and y == "fail" for x, y in pairs)
        only_b = sum(x == "fail" and y == "pass" for x, y in pairs)
        unmeasured = sum(x not in ("pass", "fail") or y not in ("pass", "fail") for x, y in pairs)
        assert (check.only_a, check.only_b, check.unmeasured) == (only_a, only_b, unmeasured)
        n = only_a + only_b
        expected = 1.0 if n == 0 else binomtest(only_a, n, 0.5).pvalue
        assert 0.0 <= check.p_value <= 1.0
        assert math.isclose(check.p_value, expected, rel_tol=1e-9, abs_tol=1e-12)
    (measure,) = comparison.measures
    assert measure.pairs == len(items)
    assert measure.interval[0] <= measure.mean_difference + 1e-9
    assert measure.mean_difference <= measure.interval[1] + 1e-9


def test_a_lock_that_does_not_describe_the_trials_is_refused() -> None:
    a = EvaluationReport.from_trials([_trial(0, 0, {"a": "pass"}, 0.0), _trial(1, 0, {}, 0.0)])
    with pytest.raises(InputError, match="lock does not match its trials"):
        EvaluationReport([_trial(0, 0, {"a": "pass"}, 0.0), _trial(2, 0, {}, 0.0)], a.lock)
    with pytest.raises(InputError, match="lock does not match its trials"):
        EvaluationReport([_trial(0, 0, {"a": "pass"}, 0.0)], a.lock)


def test_the_constructor_accepts_the_lock_of_its_trials() -> None:
    a = EvaluationReport.from_trials([_trial(0, 0, {"a": "pass"}, 1.0)], lock_extra={"x": 1})
    again = EvaluationReport(a.trials, a.lock)
    assert again.digest == a.digest
    assert compare_reports(a, again).checks[0].p_value == 1.0
