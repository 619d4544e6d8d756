"""Closed-loop failure handling, one-seed intervals and independent recomputation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    OracleModel,
    PersistenceModel,
    RandomModel,
    Transitions,
    get_simulator,
)
from onrecord.dynamics._closed_loop import load_runs, run_closed_loop, save_runs
from onrecord.dynamics._closed_loop_stats import closed_loop_summary
from onrecord.dynamics._planners import ExhaustivePlanner

SIM = get_simulator("CartPole-v1")
SEEDS = [5, 6, 7]


class RaisingModel:
    """A world model whose every prediction fails."""

    model_id = "raising/v1"

    def fit(self, transitions: Any) -> None:
        """Nothing to learn."""

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Any:
        raise RuntimeError("checkpoint not loaded")

    def describe(self) -> dict[str, Any]:
        return {"kind": "raising"}


def _random_model() -> RandomModel:
    model = RandomModel(SIM)
    rng = np.random.default_rng(0)
    states = rng.normal(0, 0.05, (50, 4))
    model.fit(Transitions(states, rng.integers(0, 2, 50), states + rng.normal(0, 0.01, (50, 4))))
    return model


@pytest.fixture(scope="module")
def runs() -> list[Any]:
    planner = ExhaustivePlanner(2)
    out: list[Any] = []
    for model in (_random_model(), OracleModel(SIM), PersistenceModel(SIM), RaisingModel()):
        out += run_closed_loop(SIM, model, planner, seeds=SEEDS, max_steps=40)
    return out


def test_a_raising_model_is_recorded_per_run_and_gets_no_score(
    runs: list[Any], tmp_path: Any
) -> None:
    failed = [r for r in runs if r.record["model_id"] == "raising/v1"]
    assert len(failed) == len(SEEDS)
    for run in failed:
        error = run.record["model_error"]
        assert error["step"] == 0
        assert error["type"] == "builtins.RuntimeError"
        assert "checkpoint not loaded" in error["message"]
        assert run.failed
    assert all(r.record["model_error"] is None for r in runs if r not in failed)
    rows = {
        r["model_id"]: r
        for r in closed_loop_summary(
            runs, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1"
        )
    }
    bad = rows["raising/v1"]
    assert bad["failed_runs"] == len(SEEDS)
    assert bad["mean_return"] is None
    assert bad["normalized_score"] is None
    assert bad["return_ci"] is None
    assert bad["normalized_ci"] is None
    assert rows["oracle/CartPole-v1"]["normalized_score"] == 1.0
    assert rows["persistence/v1"]["failed_runs"] == 0
    # The error survives saving and loading.
    episodes = {r.episode.digest: r.episode for r in failed}
    loaded = load_runs(save_runs(tmp_path / "runs.jsonl", failed), episodes)
    assert all(run.failed for run in loaded)


def test_summary_matches_an_independent_paired_bootstrap(runs: list[Any]) -> None:
    usable = [r for r in runs if r.record["model_id"] != "raising/v1"]
    rows = closed_loop_summary(
        usable, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1", draws=500
    )
    totals: dict[str, list[float]] = {}
    for run in sorted(usable, key=lambda r: r.record["seed"]):
        rewards = [t["reward"] for t in run.episode.transitions()]
        totals.setdefault(run.record["model_id"], []).append(float(sum(rewards)))
    index = np.random.default_rng(0).integers(0, len(SEEDS), (500, len(SEEDS)))
    floor, top = np.array(totals["random-walk/v1"]), np.array(totals["oracle/CartPole-v1"])
    # One row per model run, so that the loop below checks every one of them.
    assert sorted(row["model_id"] for row in rows) == sorted(totals)
    assert len(totals) == 3
    for row in rows:
        mine = np.array(totals[row["model_id"]])
        assert row["mean_return"] == pytest.approx(mine.mean())
        draws = mine[index].mean(axis=1)
        assert row["return_ci"] == pytest.approx(list(np.quantile(draws, [0.025, 0.975])))
        expected = (mine.mean() - floor.mean()) / (top.mean() - floor.mean())
        assert row["normalized_score"] == pytest.approx(expected)


def test_one_seed_gives_no_interval_and_equal_floor_and_top_no_score(runs: list[Any]) -> None:
    one = [r for r in runs if r.record["seed"] == SEEDS[0] and not r.failed]
    returns = {
        r.record["model_id"]: float(sum(t["reward"] for t in r.episode.transitions())) for r in one
    }
    summary = closed_loop_summary(
        one, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1"
    )
    assert sorted(row["model_id"] for row in summary) == sorted(returns)
    assert len(returns) == 3
    for row in summary:
        assert row["return_ci"] is None
        assert row["normalized_ci"] is None
        # One seed still has a mean: that seed's own return.
        assert row["mean_return"] == pytest.approx(returns[row["model_id"]])
    same = [r for r in runs if r.record["model_id"] == "persistence/v1"]
    (row,) = closed_loop_summary(same, random_model="persistence/v1", oracle_model="persistence/v1")
    assert row["normalized_score"] is None
    assert row["normalized_ci"] is None


def test_random_model_answers_depend_only_on_the_request() -> None:
    model = _random_model()
    states = np.zeros((3, 4))
    actions = np.zeros((3, 5), dtype=np.int64)
    first = model.predict(states, actions).mean
    model.predict(np.ones((2, 4)), np.ones((2, 7), dtype=np.int64))
    assert np.array_equal(model.predict(states, actions).mean, first)
    # A seed's closed-loop run is the same alone as after other seeds.
    planner = ExhaustivePlanner(2)
    alone = run_closed_loop(SIM, _random_model(), planner, seeds=[7], max_steps=15)[0]
    model = _random_model()
    after = run_closed_loop(SIM, model, planner, seeds=[5, 7], max_steps=15)[1]
    assert alone.record["predicted_returns"] == after.record["predicted_returns"]
    assert alone.episode.data["steps"]["action"] == after.episode.data["steps"]["action"]
