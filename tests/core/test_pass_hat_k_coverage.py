"""pass^k over repeats that were measured, with unequal repeats per case: the estimate is
checked against a brute force over k-subsets and against SciPy's hypergeometric law
(C(c, k) / C(n, k) is the chance that k repeats drawn without replacement all passed)."""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom

from onrecord.html import write_report
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord

DIGEST = "e" * 64
Outcome = Literal["pass", "fail", "incomplete"]
# One check's status per outcome: "incomplete" is a result that was not measured.
_STATUS = {"pass": "pass", "fail": "fail", "incomplete": "not_measured"}


def trial(case_id: str, repeat: int, outcome: Outcome) -> Trial:
    return Trial(
        {"case_id": case_id, "content_digest": DIGEST},
        repeat,
        {"kind": "test"},
        (CheckResult("a", "v1", _STATUS[outcome], outcome),),  # type: ignore[arg-type]
    )


def report_of(cases: Sequence[Sequence[Outcome]]) -> EvaluationReport:
    return EvaluationReport.from_trials(
        trial(f"case-{index}", repeat, outcome)
        for index, outcomes in enumerate(cases)
        for repeat, outcome in enumerate(outcomes)
    )


def test_a_repeat_that_was_not_measured_is_not_a_failure_of_pass_hat_k() -> None:
    # One pass and one unknown: before the fix pass^2 read 0.0 ("never twice in a row")
    # and pass^1 0.5, counting the repeat that was not measured as a failure.
    summary = report_of([["pass", "incomplete"]]).summary()
    assert summary.pass_hat_k == {1: 1.0}
    assert summary.pass_hat_k_cases == {1: 1}
    assert summary.outcomes == {"pass": 1, "fail": 0, "incomplete": 1}


def test_a_case_with_no_measured_repeat_is_left_out_and_counted() -> None:
    summary = report_of([["incomplete", "incomplete"], ["pass", "fail", "pass"]]).summary()
    assert summary.pass_hat_k == pytest.approx({1: 2 / 3, 2: 1 / 3, 3: 0.0})
    assert summary.pass_hat_k_cases == {1: 1, 2: 1, 3: 1}


def test_unequal_repeats_say_how_many_cases_each_k_averages() -> None:
    # 3 repeats of one case, 5 of another: k = 4 and 5 average the second case only.
    summary = report_of([["pass"] * 3, ["pass", "pass", "pass", "pass", "fail"]]).summary()
    assert summary.pass_hat_k_cases == {1: 2, 2: 2, 3: 2, 4: 1, 5: 1}
    assert summary.pass_hat_k[3] == pytest.approx((1 + 4 / 10) / 2)
    assert summary.pass_hat_k[4] == pytest.approx(1 / 5)
    assert summary.to_dict()["pass_hat_k_cases"] == {"1": 2, "2": 2, "3": 2, "4": 1, "5": 1}


def _brute(outcomes: Sequence[Outcome], k: int) -> Fraction:
    measured = [outcome == "pass" for outcome in outcomes if outcome != "incomplete"]
    subsets = list(itertools.combinations(measured, k))
    return Fraction(sum(all(subset) for subset in subsets), len(subsets))


cases_strategy = st.lists(
    st.lists(st.sampled_from(["pass", "fail", "incomplete"]), min_size=1, max_size=7),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(cases_strategy, st.randoms(use_true_random=False))
def test_pass_hat_k_is_the_share_of_passing_k_subsets_of_measured_repeats(
    cases: list[list[Outcome]], rng: random.Random
) -> None:
    report = report_of(cases)
    measured = [sum(outcome != "incomplete" for outcome in case) for case in cases]
    expected: dict[int, Fraction] = {}
    for k in range(1, max(measured) + 1):
        included = [case for case, n in zip(cases, measured, strict=True) if n >= k]
        expected[k] = sum((_brute(case, k) for case in included), Fraction()) / len(included)
    summary = report.summary()
    assert summary.pass_hat_k == pytest.approx({k: float(v) for k, v in expected.items()})
    assert summary.pass_hat_k_cases == {
        k: sum(n >= k for n in measured) for k in range(1, max(measured) + 1)
    }
    shuffled = list(report.trials)
    rng.shuffle(shuffled)
    assert EvaluationReport.from_trials(shuffled).summary().pass_hat_k == summary.pass_hat_k


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_pass_hat_k_matches_scipy_hypergeometric(count: tuple[int, int]) -> None:
    passes, repeats = count
    passing: list[Outcome] = ["pass"] * passes
    failing: list[Outcome] = ["fail"] * (repeats - passes)
    outcomes = passing + failing
    summary = report_of([outcomes]).summary()
    for k in range(1, repeats + 1):
        # k draws without replacement from `repeats` holding `passes` passes, all passing.
        assert summary.pass_hat_k[k] == pytest.approx(
            hypergeom.pmf(k, repeats, passes, k), rel=1e-9, abs=1e-300
        )


def test_show_and_the_html_report_say_over_how_many_cases_each_k_averages(
    tmp_path: Path,
) -> None:
    # Three repeats of one case, one of another: pass^2 and pass^3 average one case.
    report = report_of([["pass", "pass", "fail"], ["pass"]])
    saved = report.save_json(tmp_path / "report.json")
    shown = onrecord("show", saved)
    assert shown.returncode == 0, shown.stderr
    line = next(text for text in shown.stdout.splitlines() if text.startswith("pass^k:"))
    assert "k=1: 0.833" in line
    assert "k=1: 0.833 (" not in line  # every case has one measured repeat
    assert "k=2: 0.333 (1 of 2 cases)" in line
    assert "k=3: 0.000 (1 of 2 cases)" in line
    page = write_report(saved, tmp_path / "report.html").read_text()
    table = page[page.index('id="passk"') : page.index("</table>", page.index('id="passk"'))]
    assert '<th scope="col">tasks</th>' in table
    rows = re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>") :])
    assert [re.findall(r">([^<]*)</td>", row) for row in rows] == [
        ["1", "0.833", "2"],
        ["2", "0.333", "1"],
        ["3", "0.000", "1"],
    ]
