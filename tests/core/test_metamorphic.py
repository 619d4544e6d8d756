"""Metamorphic and property-based tests of reports, acceptance policies, paired comparison
and the statistics behind them: relations that must hold whatever the data.

(The decision rules themselves are checked against a reference implementation in
test_policy_oracle.py; these tests relate one run to another instead.)
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from onrecord import AcceptancePolicy, CheckRequirement, compare_reports
from onrecord._stats import mcnemar_exact_p, pass_hat_k, wilson_interval
from onrecord.compare import Comparison
from onrecord.episode import EpisodeEvidence, evaluate_episodes, run_check
from onrecord.errors import InputError, OnrecordError
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.report import STATUSES, CheckResult, EvaluationReport, Status, Trial

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHECKS = ("a", "b/x", "b/y")
DIGEST = "c" * 64


def trial(
    case_id: str,
    repeat: int,
    statuses: Sequence[str],
    measures: dict[str, float] | None = None,
    issues: tuple[str, ...] = (),
) -> Trial:
    return Trial(
        {"case_id": case_id, "content_digest": DIGEST},
        repeat,
        {"kind": "test"},
        tuple(
            CheckResult(name, "v1", cast(Status, status), "")
            for name, status in zip(CHECKS, statuses, strict=False)
        ),
        issues,
        measures or {},
        {"environment_id": "env", "seed": repeat % 1000},
    )


status_rows = st.lists(st.sampled_from(STATUSES), min_size=3, max_size=3)
measure_values = st.one_of(
    st.integers(-1000, 1000).map(float), st.floats(-1e6, 1e6, allow_nan=False)
)


@st.composite
def paired_reports(draw: st.DrawFn) -> tuple[EvaluationReport, EvaluationReport]:
    """Two reports over the same cases, repeats and checks (so their locks are equal)."""
    keys = draw(
        st.lists(
            st.tuples(st.sampled_from(["x", "y", "z", "w", "ü/ñ"]), st.integers(0, 2)),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    sides = []
    for _ in range(2):
        measured = draw(st.lists(st.booleans(), min_size=len(keys), max_size=len(keys)))
        sides.append(
            [
                trial(
                    case,
                    repeat,
                    draw(status_rows),
                    {"return": draw(measure_values)} if has or i == 0 else {},
                )
                for i, ((case, repeat), has) in enumerate(zip(keys, measured, strict=True))
            ]
        )
    # B's trials in another order than A's, as a merge or a regrade may give them.
    return EvaluationReport.from_trials(sides[0]), EvaluationReport.from_trials(
        draw(st.permutations(sides[1]))
    )


def _essence(comparison: Comparison) -> tuple[Any, ...]:
    """A comparison without the report digests and with discordant pairs as a set."""
    return (
        comparison.pairs,
        [vars(c) | {"discordant": sorted(map(str, c.discordant))} for c in comparison.checks],
        comparison.measures,
    )


def _relabelled(rep: EvaluationReport, rename: Callable[[str], str]) -> EvaluationReport:
    return EvaluationReport.from_trials(
        dataclasses.replace(t, case={**t.case, "case_id": rename(t.case["case_id"])})
        for t in rep.trials
    )


# ---------------------------------------------------------------------------------------
# compare_reports
# ---------------------------------------------------------------------------------------


@FAST
@given(paired_reports())
def test_comparing_b_with_a_mirrors_comparing_a_with_b(
    reports: tuple[EvaluationReport, EvaluationReport],
) -> None:
    a, b = reports
    forward, backward = compare_reports(a, b, resamples=200), compare_reports(b, a, resamples=200)
    assert forward.pairs == backward.pairs
    for f, r in zip(forward.checks, backward.checks, strict=True):
        assert (f.only_a, f.only_b, f.p_value) == (r.only_b, r.only_a, r.p_value)
        assert (f.both_pass, f.both_fail, f.unmeasured) == (r.both_pass, r.both_fail, r.unmeasured)
        flipped = {dataclasses.replace(p, passed_a=not p.passed_a) for p in r.discordant}
        assert set(f.discordant) == flipped
    for f, r in zip(forward.measures, backward.measures, strict=True):
        assert (f.pairs, f.mean_a, f.mean_b) == (r.pairs, r.mean_b, r.mean_a)
        assert f.mean_difference == -r.mean_difference
        # The same resamples, seen from the other side: exactly the negated interval.
        assert f.interval == (-r.interval[1], -r.interval[0])


@FAST
@given(paired_reports(), st.randoms(use_true_random=False))
def test_comparison_ignores_the_order_of_trials(
    reports: tuple[EvaluationReport, EvaluationReport], rng: Any
) -> None:
    a, b = reports
    shuffled = []
    for rep in (a, b):
        trials = list(rep.trials)
        rng.shuffle(trials)
        shuffled.append(EvaluationReport.from_trials(trials))
    assert _essence(compare_reports(*shuffled, resamples=200)) == _essence(
        compare_reports(a, b, resamples=200)
    )


@FAST
@given(paired_reports())
def test_relabelling_cases_changes_nothing_but_labels(
    reports: tuple[EvaluationReport, EvaluationReport],
) -> None:
    a, b = reports
    names = {"x": "zz-9", "y": "a", "z": "日本", "w": "m#0: pass→fail", "ü/ñ": "0"}
    renamed = [_relabelled(rep, names.__getitem__) for rep in (a, b)]
    original, relabelled = (
        compare_reports(a, b, resamples=200),
        compare_reports(*renamed, resamples=200),
    )
    back = {new: old for old, new in names.items()}
    for c, r in zip(original.checks, relabelled.checks, strict=True):
        restored = {dataclasses.replace(p, case_id=back[p.case_id]) for p in r.discordant}
        assert set(c.discordant) == restored
        assert vars(c) | {"discordant": ()} == vars(r) | {"discordant": ()}
    assert original.measures == relabelled.measures


@FAST
@given(paired_reports())
def test_check_counts_are_a_direct_count_over_the_pairs(
    reports: tuple[EvaluationReport, EvaluationReport],
) -> None:
    a, b = reports
    by_key = {t.key: t for t in b.trials}
    for name, check in zip(a.check_names, compare_reports(a, b, resamples=10).checks, strict=True):
        pairs = [(t.result(name), by_key[t.key].result(name)) for t in a.trials]
        measured = [
            (x.passed, y.passed) for x, y in pairs if x and y and None not in (x.passed, y.passed)
        ]
        assert check.only_a == measured.count((True, False))
        assert check.only_b == measured.count((False, True))
        assert check.both_pass == measured.count((True, True))
        assert check.unmeasured == len(pairs) - len(measured)
        assert len(check.discordant) == check.only_a + check.only_b


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_is_scipys_binomial_test_and_one_only_for_a_near_tie(
    only_a: int, only_b: int
) -> None:
    p = mcnemar_exact_p(only_a, only_b)
    assert p == mcnemar_exact_p(only_b, only_a)
    if only_a + only_b:
        assert p == pytest.approx(binomtest(only_a, only_a + only_b).pvalue, rel=1e-9, abs=1e-300)
    # p = 1 exactly when the discordant pairs split as evenly as they can (0-0, k-k, k-k±1).
    assert (p == 1.0) == (abs(only_a - only_b) <= 1)


@FAST
@given(
    st.lists(measure_values, min_size=1, max_size=40),
    st.one_of(st.integers(-5, 5).map(float), st.floats(-1e6, 1e6, allow_nan=False)),
)
def test_a_constant_shift_is_measured_exactly(values: list[float], shift: float) -> None:
    # B = A + shift in every pair: the mean difference is the shift (as B - A rounds it)
    # and the interval holds it, whatever the pairs.
    a = EvaluationReport.from_trials(
        trial(f"case-{i}", 0, ["pass"] * 3, {"return": v}) for i, v in enumerate(values)
    )
    b = EvaluationReport.from_trials(
        trial(f"case-{i}", 0, ["pass"] * 3, {"return": v + shift}) for i, v in enumerate(values)
    )
    differences = {(v + shift) - v for v in values}
    assume(len(differences) == 1)  # B - A may round apart for different values of A
    (measure,) = compare_reports(a, b, resamples=50).measures
    (difference,) = differences
    assert measure.mean_difference == difference
    assert measure.interval[0] <= measure.mean_difference <= measure.interval[1]
    if difference == 0:  # never "-0.0" (a report compared with itself prints the interval)
        assert [math.copysign(1.0, bound) for bound in measure.interval] == [1.0, 1.0]


def test_the_bootstrap_is_deterministic_for_a_seed() -> None:
    a = EvaluationReport.from_trials(
        trial(f"case-{i}", 0, ["pass"] * 3, {"return": float(i % 7)}) for i in range(30)
    )
    b = EvaluationReport.from_trials(
        trial(f"case-{i}", 0, ["pass"] * 3, {"return": float(i % 5)}) for i in range(30)
    )
    first = compare_reports(a, b, seed=3).measures[0].interval
    assert compare_reports(a, b, seed=3).measures[0].interval == first
    assert compare_reports(a, b, seed=4).measures[0].interval != first


@pytest.mark.parametrize(
    ("value_a", "value_b"), [(1e308, -1e308), (-1.7e308, 1.7e308), (1e308, 1e308)]
)
def test_measures_too_large_to_average_are_refused_naming_the_measure(
    value_a: float, value_b: float
) -> None:
    # Each value is finite (a report may hold it); their sum or difference is not.
    a = EvaluationReport.from_trials(
        trial(c, 0, ["pass"] * 3, {"energy": value_a}) for c in ("x", "y")
    )
    b = EvaluationReport.from_trials(
        trial(c, 0, ["pass"] * 3, {"energy": value_b}) for c in ("x", "y")
    )
    with pytest.raises(InputError, match="'energy'"):
        compare_reports(a, b)


# ---------------------------------------------------------------------------------------
# Wilson intervals and pass^k
# ---------------------------------------------------------------------------------------

counts = st.integers(1, 10**12).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


@settings(max_examples=300, deadline=None)
@given(counts)
def test_wilson_holds_the_rate_is_monotone_and_symmetric(count: tuple[int, int]) -> None:
    k, n = count
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    if k < n:
        above = wilson_interval(k + 1, n)
        assert low <= above[0]
        assert high <= above[1]
    mirror = wilson_interval(n - k, n)
    assert (low, high) == pytest.approx((1 - mirror[1], 1 - mirror[0]), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_scipy(count: tuple[int, int]) -> None:
    expected = binomtest(*count).proportion_ci(method="wilson")
    assert wilson_interval(*count) == pytest.approx((expected.low, expected.high), abs=1e-9)


def _brute_pass_hat_k(outcomes: Sequence[bool], k: int) -> Fraction:
    """The share of k-subsets of a case's repeats that all passed."""
    subsets = list(itertools.combinations(outcomes, k))
    return Fraction(sum(all(subset) for subset in subsets), len(subsets))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda r: st.lists(st.lists(st.booleans(), min_size=r, max_size=r), min_size=1, max_size=5)
    )
)
def test_pass_hat_k_is_the_share_of_all_passing_k_subsets(cases: list[list[bool]]) -> None:
    # Every case with the same number of repeats: pass^k is then non-increasing in k.
    repeats = len(cases[0])
    values = [pass_hat_k([(sum(c), len(c)) for c in cases], k) for k in range(1, repeats + 1)]
    for k, value in enumerate(values, start=1):
        expected = sum(_brute_pass_hat_k(c, k) for c in cases) / len(cases)
        assert value == pytest.approx(float(expected), abs=1e-12)
        assert 0.0 <= value <= 1.0  # type: ignore[operator]
    assert values == sorted(values, reverse=True)  # type: ignore[type-var]
    assert pass_hat_k([(sum(c), len(c)) for c in cases], repeats + 1) is None


# ---------------------------------------------------------------------------------------
# Reports: summaries, lock, save and load
# ---------------------------------------------------------------------------------------


@st.composite
def reports(draw: st.DrawFn) -> EvaluationReport:
    keys = draw(
        st.lists(
            st.tuples(st.text(min_size=1, max_size=6), st.integers(0, 3)), max_size=10, unique=True
        )
    )
    return EvaluationReport.from_trials(
        trial(
            case,
            repeat,
            draw(st.lists(st.sampled_from(STATUSES), min_size=0, max_size=3)),
            draw(st.dictionaries(st.sampled_from(["return", "steps"]), measure_values)),
            tuple(draw(st.lists(st.sampled_from(["observer failed"]), max_size=1))),
        )
        for case, repeat in keys
    )


@FAST
@given(reports())
def test_the_summary_is_a_direct_count_over_the_trials(rep: EvaluationReport) -> None:
    summary = rep.summary()
    trials = rep.trials
    assert summary.trials == len(trials) == sum(summary.outcomes.values())
    for check in summary.checks:
        statuses = [t.result(check.name).status if t.result(check.name) else None for t in trials]  # type: ignore[union-attr]
        assert (check.passed, check.failed) == (statuses.count("pass"), statuses.count("fail"))
        assert check.unmeasured == len(trials) - check.passed - check.failed
        assert check.errors == statuses.count("evaluator_error") + statuses.count("model_error")
        measured = check.passed + check.failed
        assert check.pass_rate == (check.passed / measured if measured else None)
        assert check.coverage == (measured / len(trials) if trials else 0.0)
    passing = sum(
        all(t.result(name) and t.result(name).status == "pass" for name in rep.check_names)  # type: ignore[union-attr]
        and not t.coverage_issues
        and bool(t.results)
        for t in trials
    )
    assert summary.outcomes["pass"] == passing
    assert summary.pass_rate == (passing / len(trials) if trials else None)
    assert all(0.0 <= value <= 1.0 for value in summary.pass_hat_k.values())


@FAST
@given(reports(), st.randoms(use_true_random=False))
def test_save_load_is_identity_and_order_only_changes_the_digest(
    tmp_path_factory: pytest.TempPathFactory, rep: EvaluationReport, rng: Any
) -> None:
    path = tmp_path_factory.mktemp("r") / "report.json"
    loaded = EvaluationReport.load(rep.save_json(path))
    assert (loaded.digest, loaded.to_dict(), loaded.trials) == (
        rep.digest,
        rep.to_dict(),
        rep.trials,
    )
    # The digest covers the trials in the order given (evaluation order, documented);
    # what they are comparable with, what they summarize to and how a policy decides
    # do not depend on it.
    trials = list(rep.trials)
    rng.shuffle(trials)
    shuffled = EvaluationReport.from_trials(trials)
    assert shuffled.lock == rep.lock
    assert shuffled.summary() == rep.summary()
    assert (shuffled.digest == rep.digest) == (shuffled.trials == rep.trials)
    policy = AcceptancePolicy((CheckRequirement("*", min_pass_rate=0.5, min_coverage=0.5),))
    first, second = policy.evaluate(rep), policy.evaluate(shuffled)
    assert (first.decision, first.outcomes) == (second.decision, second.outcomes)


@FAST
@given(reports(), st.data())
def test_merging_the_parts_of_a_report_gives_it_back(
    rep: EvaluationReport, data: st.DataObject
) -> None:
    trials = rep.trials
    cut = data.draw(st.integers(0, len(trials)))
    extra = {"policy": {"name": "p", "digest": "0" * 64}}
    whole = EvaluationReport.from_trials(trials, lock_extra=extra)
    parts = [
        EvaluationReport.from_trials(part, lock_extra=extra)
        for part in (trials[:cut], trials[cut:])
    ]
    merged = EvaluationReport.merge(parts)
    assert (merged.digest, merged.lock) == (whole.digest, whole.lock)


# ---------------------------------------------------------------------------------------
# Acceptance policies
# ---------------------------------------------------------------------------------------

requirements = st.builds(
    CheckRequirement,
    st.sampled_from(["a", "b/*", "b/x", "*", "missing"]),
    critical=st.booleans(),
    min_pass_rate=st.sampled_from([1.0, 0.9, 0.5, 0.25]),
    min_cases=st.integers(1, 3),
    min_coverage=st.sampled_from([1.0, 0.75, 0.5]),
)
policies = st.lists(requirements, min_size=1, max_size=4).map(lambda r: AcceptancePolicy(tuple(r)))
full_rows = st.lists(st.sampled_from(STATUSES), min_size=3, max_size=3)


@st.composite
def full_reports(draw: st.DrawFn) -> list[Trial]:
    """Trials that each hold every check (so one more trial adds no new check)."""
    keys = draw(
        st.lists(st.tuples(st.sampled_from("pqrs"), st.integers(0, 2)), unique=True, max_size=8)
    )
    return [trial(case, repeat, draw(full_rows)) for case, repeat in keys]


@FAST
@given(full_reports(), policies, st.booleans())
def test_a_passing_trial_never_rejects_an_accepted_report_nor_a_failing_one_accepts(
    trials: list[Trial], policy: AcceptancePolicy, passing: bool
) -> None:
    before = policy.evaluate(EvaluationReport.from_trials(trials)).decision
    added = trial("new", 0, ["pass" if passing else "fail"] * 3)
    after = policy.evaluate(EvaluationReport.from_trials([*trials, added])).decision
    if passing:
        assert not (before == "accept" and after == "reject")
    else:
        assert not (before == "reject" and after == "accept")


@FAST
@given(full_reports(), policies, st.sampled_from(CHECKS), st.integers(0, 7))
def test_a_measured_failure_of_a_critical_check_always_rejects(
    trials: list[Trial], policy: AcceptancePolicy, check: str, where: int
) -> None:
    # However the rest of the report and the policy look, one failure of a check that a
    # critical requirement with min_pass_rate 1 covers rejects.
    strict = AcceptancePolicy((*policy.requirements, CheckRequirement(check)))
    statuses = ["pass"] * 3
    statuses[CHECKS.index(check)] = "fail"
    trials = [*trials]
    trials.insert(min(where, len(trials)), trial("failing", 0, statuses, issues=("gap",)))
    decision = strict.evaluate(EvaluationReport.from_trials(trials))
    assert (decision.decision, decision.exit_code) == ("reject", 1)


@FAST
@given(
    st.lists(
        st.tuples(
            st.sampled_from("pqrs"),
            st.integers(0, 2),
            st.lists(st.sampled_from([*STATUSES, None]), min_size=3, max_size=3),
        ),
        unique_by=lambda x: x[:2],
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 3),
)
def test_a_critical_glob_decides_as_its_matching_checks_spelled_out(
    rows: list[tuple[str, int, list[str | None]]], min_cases: int
) -> None:
    # With every result required (min_pass_rate and min_coverage 1), a critical glob is
    # the same requirement as one per check it matches — a result absent from a trial
    # included. (Not so for an advisory one: a glob that certainly failed on b/x is a
    # warning, while b/y spelled out and unmeasured on its own is undecided.)
    trials = [
        Trial(
            {"case_id": case, "content_digest": DIGEST},
            repeat,
            {"kind": "test"},
            tuple(CheckResult(n, "v1", s, "") for n, s in zip(CHECKS, statuses, strict=True) if s),
            settings={"environment_id": "env"},
        )
        for case, repeat, statuses in rows
    ]
    rep = EvaluationReport.from_trials(trials)
    matched = [name for name in rep.check_names if name.startswith("b/")]
    assume(matched)
    glob = AcceptancePolicy((CheckRequirement("b/*", min_cases=min_cases),))
    spelled = AcceptancePolicy(tuple(CheckRequirement(n, min_cases=min_cases) for n in matched))
    assert glob.evaluate(rep).decision == spelled.evaluate(rep).decision


# ---------------------------------------------------------------------------------------
# evaluate_episodes: cases × repeats
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def episodes() -> list[EpisodeEvidence]:
    """Two versions of one case (same id, other content) and another case, by 2 agents."""
    task = frozenlake_task()
    tasks = [
        task,
        dataclasses.replace(task, case=dataclasses.replace(task.case, input="Walk, v2")),
        dataclasses.replace(task, case=dataclasses.replace(task.case, case_id="other")),
    ]
    return [
        run_gym_task(t, FROZENLAKE_AGENTS[agent](), seed=seed)
        for t in tasks
        for agent in ("walks_to_goal", "walks_into_hole")
        for seed in (1, 2)
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_each_episode_lands_in_its_trial_with_its_repeat(
    episodes: list[EpisodeEvidence], data: st.DataObject
) -> None:
    chosen = data.draw(st.permutations(episodes))[: data.draw(st.integers(1, len(episodes)))]
    checks = list(frozenlake_task().checks)
    rep = evaluate_episodes(chosen, checks)
    identity = [(e.case["case_id"], e.case["content_digest"]) for e in chosen]
    for index, (episode, got) in enumerate(zip(chosen, rep.trials, strict=True)):
        assert got.source["digest"] == episode.digest
        assert (got.case["case_id"], got.case["content_digest"]) == identity[index]
        assert got.repeat == identity[:index].count(identity[index])
        assert got.results == tuple(run_check(check, episode) for check in checks)
        assert got.measures == episode.measures
    # The same episodes in another order: the same cases and repeats, so comparable.
    other = evaluate_episodes(data.draw(st.permutations(chosen)), checks)
    assert sorted(t.key for t in other.trials) == sorted(t.key for t in rep.trials)
    if all(identity.count(key) == 1 for key in identity):
        assert compare_reports(rep, other, resamples=10).pairs == len(chosen)


# ---------------------------------------------------------------------------------------
# Bad input: an OnrecordError naming the field, never a bare exception or a wrong number
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: trial("x", 0, ["pass"], {"steps": math.nan}), "steps"),
        (lambda: trial("x", 0, ["pass"], {"steps": -math.inf}), "steps"),
        (lambda: trial("x", 0, ["pass"], {"steps": True}), "steps"),
        (lambda: trial("x", 0, ["pass"], {"steps": "3"}), "steps"),
        (lambda: trial("x", 0, ["pass"], {"steps": 2**70}), "steps"),
        (lambda: trial("x", -1, ["pass"]), "repeat"),
        (lambda: trial("x", 2**70, ["pass"]), "repeat"),
        (lambda: trial("\ud800", 0, ["pass"]), "case_id"),
        (lambda: trial("x", 0, ["passed"]), "status"),
        (lambda: EvaluationReport.from_trials([trial("x", 0, ["pass"])] * 2), "duplicates"),
        (
            lambda: compare_reports(EvaluationReport.from_trials([]), "report.json"),
            "EvaluationReport",
        ),  # type: ignore[arg-type]
    ],
)
def test_bad_input_raises_an_onrecord_error_naming_the_field(
    make: Callable[[], object], field: str
) -> None:
    with pytest.raises(OnrecordError, match=field):
        make()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(min_size=1), min_size=1, max_size=5, unique=True))
def test_unicode_case_ids_round_trip_and_compare(case_ids: list[str]) -> None:
    rep = EvaluationReport.from_trials(trial(c, 0, ["pass", "fail"]) for c in case_ids)
    loaded = EvaluationReport.from_dict(rep.to_dict())
    assert [t.case["case_id"] for t in loaded.trials] == case_ids
    comparison = compare_reports(rep, loaded, resamples=10)
    assert [(c.both_pass, c.both_fail, c.p_value) for c in comparison.checks] == [
        (len(case_ids), 0, 1.0),
        (0, len(case_ids), 1.0),
    ]
