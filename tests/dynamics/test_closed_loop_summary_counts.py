"""``closed_loop_summary`` on real CartPole runs: failed runs have no step count (as they
have no return), and bootstrap draws with an undefined normalized score are counted and
bound the interval rather than being dropped silently."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord.dynamics import (
    ExhaustivePlanner,
    OracleModel,
    Prediction,
    RandomModel,
    Simulator,
    Transitions,
    get_simulator,
    run_closed_loop,
)
from onrecord.dynamics._closed_loop_stats import (
    _bounded_interval,
    _interval,
    closed_loop_summary,
    closed_loop_summary_v1,
    closed_loop_summary_v2,
)
from onrecord.errors import InputError

CARTPOLE = get_simulator("CartPole-v1")
NAMES = {"random_model": "random-walk/v1", "oracle_model": "oracle/CartPole-v1"}


class LeansRightFails:
    """The oracle, except that it predicts NaN from states leaning right more than
    0.03 rad: real CartPole starts some seeds there, and those runs fail at once."""

    model_id = "leans-right-fails/v1"

    def __init__(self, simulator: Simulator) -> None:
        self.oracle = OracleModel(simulator)

    def fit(self, transitions: Transitions) -> None:
        self.oracle.fit(transitions)

    def predict(
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> Prediction:
        mean = np.array(self.oracle.predict(initial_states, actions).mean, dtype=np.float64)
        mean[initial_states[:, 2] > 0.03] = np.nan
        return Prediction(mean)

    def describe(self) -> dict[str, Any]:
        return {"kind": "leans-right-fails"}


def runs(models: list[Any], seeds: list[int], max_steps: int) -> list[Any]:
    out = []
    for model in models:
        out += run_closed_loop(
            CARTPOLE, model, ExhaustivePlanner(1), seeds=seeds, max_steps=max_steps
        )
    return out


def rows(summary: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["model_id"]: row for row in summary}


def test_failed_runs_have_no_steps_and_no_mean_steps() -> None:
    seeds = list(range(8))
    found = runs(
        [RandomModel(CARTPOLE), OracleModel(CARTPOLE), LeansRightFails(CARTPOLE)], seeds, 12
    )
    failed = {r.record["seed"] for r in found if r.failed}
    assert failed
    assert failed != set(seeds)
    row = rows(closed_loop_summary(found, **NAMES, draws=200))["leans-right-fails/v1"]
    assert row["failed_runs"] == len(failed)
    # Before: the failed runs' 0 steps were averaged in (mean_steps 12 * 5/8 = 7.5) while
    # the return and score were withheld.
    assert [n is None for n in row["steps"]] == [s in failed for s in seeds]
    assert row["mean_steps"] is None
    assert row["mean_return"] is None
    assert row["reached_cap"] == len(seeds) - len(failed)
    # Runs saved by analysis v1 are still summarized as they were.
    old = rows(closed_loop_summary_v1(found, **NAMES, draws=200))["leans-right-fails/v1"]
    assert None not in old["steps"]
    assert isinstance(old["mean_steps"], float)
    assert "normalized_ci_undefined" not in old


def test_many_undefined_draws_leave_no_interval() -> None:
    # Capped at 12 steps the random walk falls on one seed of eight only: about a third
    # of the bootstrap draws resample the tied seeds alone, where oracle = random.
    seeds = list(range(8))
    found = runs([RandomModel(CARTPOLE), OracleModel(CARTPOLE)], seeds, 12)
    oracle = rows(closed_loop_summary(found, **NAMES))["oracle/CartPole-v1"]
    assert oracle["normalized_score"] == 1.0
    assert oracle["normalized_ci_undefined"] > 0.025 * 2000
    assert oracle["normalized_ci"] is None
    # Before: an interval over the remaining two thirds, with no word of the rest.
    assert rows(closed_loop_summary_v1(found, **NAMES))["oracle/CartPole-v1"]["normalized_ci"]


def test_a_few_undefined_draws_are_counted_and_widen_the_interval() -> None:
    # Capped at 20 steps the random walk ties the oracle on seed 1 only: about 0.4 % of
    # the draws resample seed 1 alone.
    seeds = [0, 1, 3, 4]
    found = runs([RandomModel(CARTPOLE), OracleModel(CARTPOLE)], seeds, 20)
    new = rows(closed_loop_summary(found, **NAMES))["random-walk/v1"]
    old = rows(closed_loop_summary_v1(found, **NAMES))["random-walk/v1"]
    assert 0 < new["normalized_ci_undefined"] <= 0.025 * 2000
    assert new["normalized_ci"][0] <= old["normalized_ci"][0]
    assert new["normalized_ci"][1] >= old["normalized_ci"][1]


def test_no_undefined_draw_keeps_the_plain_interval() -> None:
    found = runs([RandomModel(CARTPOLE), OracleModel(CARTPOLE)], [0, 4], 20)
    new, old = (
        rows(summary(found, **NAMES))["random-walk/v1"]
        for summary in (closed_loop_summary, closed_loop_summary_v1)
    )
    assert new["normalized_ci_undefined"] == 0
    assert new["normalized_ci"] == old["normalized_ci"]


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(40, 400),
    undefined=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_bounded_interval_widens_with_undefined_draws(
    count: int, undefined: int, seed: int
) -> None:
    finite = np.random.default_rng(seed).normal(size=count)
    draws = count + undefined
    bounded = _bounded_interval(finite, draws)
    if undefined > 0.025 * draws:
        assert bounded is None
        return
    assert bounded is not None
    plain = _interval(finite)
    if not undefined:
        assert bounded == plain
    assert bounded[0] <= plain[0]
    assert bounded[1] >= plain[1]
    # One more undefined draw never narrows it.
    wider = _bounded_interval(finite, draws + 1)
    assert wider is None or (wider[0] <= bounded[0] and wider[1] >= bounded[1])


def test_a_model_with_failed_runs_has_no_prediction_gap() -> None:
    seeds = list(range(8))
    found = runs(
        [RandomModel(CARTPOLE), OracleModel(CARTPOLE), LeansRightFails(CARTPOLE)], seeds, 12
    )
    assert any(r.failed for r in found)
    assert not all(r.failed for r in found)
    row = rows(closed_loop_summary(found, **NAMES, draws=200))["leans-right-fails/v1"]
    # Before (analysis v2): the mean gap of the surviving seeds, while the return, score
    # and mean steps of the same model were withheld as a survivor sample.
    assert row["prediction_gap"] is None
    assert row["prediction_gap_undefined"] is None
    assert row["mean_return"] is None
    oracle = rows(closed_loop_summary(found, **NAMES, draws=200))["oracle/CartPole-v1"]
    assert isinstance(oracle["prediction_gap"], float)
    assert oracle["prediction_gap_undefined"] == 0
    # Runs saved by analysis v2 are still summarized as they were.
    old = rows(closed_loop_summary_v2(found, **NAMES, draws=200))["leans-right-fails/v1"]
    assert isinstance(old["prediction_gap"], float)
    assert "prediction_gap_undefined" not in old
    assert old["normalized_ci_undefined"] is None
    assert (
        "prediction_gap_undefined"
        not in rows(closed_loop_summary_v1(found, **NAMES))["oracle/CartPole-v1"]
    )


def test_seeds_without_a_defined_gap_are_counted() -> None:
    # Planning 4 steps ahead under a cap of 3 steps: no decision's horizon is ever seen
    # in full (CartPole does not fall that fast), so no seed has a gap.
    found = []
    for model in (RandomModel(CARTPOLE), OracleModel(CARTPOLE)):
        found += run_closed_loop(
            CARTPOLE, model, ExhaustivePlanner(4), seeds=[0, 1, 2], max_steps=3
        )
    summary = closed_loop_summary(found, **NAMES, draws=200)
    assert sorted(row["model_id"] for row in summary) == sorted(NAMES.values())
    for row in summary:
        assert row["prediction_gap"] is None
        assert row["prediction_gap_undefined"] == 3


@pytest.mark.parametrize(
    ("field", "value"),
    [("draws", 0), ("draws", -1), ("draws", 1.5), ("draws", True), ("seed", -1), ("seed", "0")],
)
def test_bad_bootstrap_settings_are_refused_naming_them(field: str, value: Any) -> None:
    # Before: IndexError (draws=0), ValueError or TypeError from NumPy, naming nothing.
    found = runs([RandomModel(CARTPOLE), OracleModel(CARTPOLE)], [0, 1], 5)
    with pytest.raises(InputError, match=rf"{field} must be an integer of at least"):
        closed_loop_summary(found, **NAMES, **{field: value})
