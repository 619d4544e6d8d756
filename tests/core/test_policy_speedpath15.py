"""``AcceptancePolicy.evaluate`` counts each check once per report and shares the count
between the requirements that match it (an exact name and a glob, or two globs). These
tests hold that shortcut to the straightforward method: every requirement judged on its
own, its results read one (trial, check) at a time and its interval taken over a
(passes, results) tuple per case."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._policy_rules import StatusTable, matches, requirement_interval
from onrecord._stats import clustered_interval
from onrecord.report import EvaluationReport
from tests.core.test_policy_oracle import CHECK_NAMES, COVERAGES, PATTERNS, RATES, reports

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _straightforward(
    pattern: str, report: EvaluationReport
) -> tuple[int, int, int, int, tuple[float, float]]:
    """(passed, failed, unmeasured, cases, interval) of one requirement, result by result."""
    matched = [name for name in report.check_names if matches(pattern, name)]
    passed = failed = unmeasured = 0
    per_case: dict[tuple[str, str], tuple[int, int]] = {}
    for trial in report.trials:
        case = (trial.case["case_id"], trial.case["content_digest"])
        for name in matched:
            result = trial.result(name)
            status = result.status if result is not None else "missing"
            if status not in ("pass", "fail"):
                unmeasured += 1
                continue
            passed += status == "pass"
            failed += status == "fail"
            passes, results = per_case.get(case, (0, 0))
            per_case[case] = (passes + (status == "pass"), results + 1)
    return passed, failed, unmeasured, len(per_case), clustered_interval(list(per_case.values()))


def _requirements(checks: Sequence[str]) -> st.SearchStrategy[CheckRequirement]:
    return st.builds(
        CheckRequirement,
        st.sampled_from(checks) | st.sampled_from(PATTERNS),
        critical=st.booleans(),
        min_pass_rate=st.sampled_from(RATES),
        min_cases=st.integers(1, 4),
        min_coverage=st.sampled_from(COVERAGES),
        min_lower_bound=st.none() | st.sampled_from((0.2, 0.5, 0.8, 0.95)),
    )


@st.composite
def _scenarios(draw: st.DrawFn) -> tuple[AcceptancePolicy, EvaluationReport]:
    """Policies whose requirements often match the same checks: a name twice, a name and
    a glob over it, overlapping globs; reports with repeats, shared case ids and
    results absent from some trials."""
    checks = draw(st.lists(st.sampled_from(CHECK_NAMES), min_size=1, max_size=5, unique=True))
    requirements = draw(st.lists(_requirements(checks), min_size=2, max_size=6))
    return AcceptancePolicy(tuple(requirements)), draw(reports(checks))


@SETTINGS
@given(_scenarios())
def test_every_requirement_fares_as_when_judged_alone_result_by_result(
    scenario: tuple[AcceptancePolicy, EvaluationReport],
) -> None:
    policy, report = scenario
    decision = policy.evaluate(report)
    for requirement, outcome in zip(policy.requirements, decision.outcomes, strict=True):
        alone = AcceptancePolicy((requirement,)).evaluate(report).outcomes[0]
        assert outcome == alone, requirement
        got = (outcome.passed, outcome.failed, outcome.unmeasured, outcome.cases)
        want = _straightforward(requirement.check, report)
        assert (*got, outcome.interval) == want, requirement
    # Reordered, the requirements share their counts in another order; nothing moves.
    backwards = AcceptancePolicy(tuple(reversed(policy.requirements))).evaluate(report)
    assert backwards.outcomes == tuple(reversed(decision.outcomes))


@SETTINGS
@given(reports(CHECK_NAMES[:4]), st.lists(st.sampled_from(CHECK_NAMES), min_size=1, max_size=4))
def test_a_saved_decisions_matched_checks_absent_from_the_report_add_no_result(
    report: EvaluationReport, matched: list[str]
) -> None:
    """A view shows a saved decision beside a report: a matched check the report lacks
    has no result in any trial, so the interval is that of the checks it holds."""
    table = StatusTable(report)
    present = [name for name in matched if name in report.check_names]
    per_case: dict[tuple[str, str], tuple[int, int]] = {}
    for trial in report.trials:
        case = (trial.case["case_id"], trial.case["content_digest"])
        for name in present:
            result = trial.result(name)
            if result is not None and result.status in ("pass", "fail"):
                passes, results = per_case.get(case, (0, 0))
                per_case[case] = (passes + (result.status == "pass"), results + 1)
    want = clustered_interval(list(per_case.values()))
    assert requirement_interval(table, tuple(matched)) == want
    assert requirement_interval(StatusTable(report), tuple(present)) == want
