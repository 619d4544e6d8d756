"""Planners, closed loop and controls on real CartPole."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    CrossEntropyPlanner,
    ExhaustivePlanner,
    OracleModel,
    RandomModel,
    RandomShootingPlanner,
    Simulator,
    Transitions,
    capture_forecasts,
)
from onrecord.dynamics._closed_loop import load_runs, run_closed_loop, save_runs
from onrecord.dynamics._closed_loop_stats import closed_loop_summary
from onrecord.dynamics._controls import capture_pairs, effect_table
from onrecord.errors import DigestMismatch, InputError

SEEDS = [60_000, 60_001]


@pytest.fixture(scope="module")
def runs(cartpole: Simulator, models: dict[str, Any], training: Transitions) -> list[Any]:
    random_model = RandomModel(cartpole)
    random_model.fit(training)
    out = []
    for model in (models["action"], models["blind"], random_model, OracleModel(cartpole)):
        out += run_closed_loop(cartpole, model, ExhaustivePlanner(6), seeds=SEEDS, max_steps=150)
    return out


def test_action_model_balances_and_blind_model_falls(runs: list[Any]) -> None:
    steps = {(r.record["model_id"], r.record["seed"]): len(r.episode) for r in runs}
    assert all(steps[("bayes-linear/v1", s)] == 150 for s in SEEDS)
    assert all(steps[("bayes-linear-blind/v1", s)] < 60 for s in SEEDS)
    assert all(r.record["budget"] == {"planner": "exhaustive", "length": 6} for r in runs)


def test_summary_normalizes_between_random_and_oracle(runs: list[Any]) -> None:
    rows = {
        r["model_id"]: r
        for r in closed_loop_summary(
            runs, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1", draws=200
        )
    }
    assert rows["oracle/CartPole-v1"]["normalized_score"] == 1.0
    assert rows["random-walk/v1"]["normalized_score"] == 0.0
    assert rows["bayes-linear/v1"]["reached_cap"] == len(SEEDS)
    low, high = rows["bayes-linear-blind/v1"]["return_ci"]
    assert low <= rows["bayes-linear-blind/v1"]["mean_return"] <= high < 150


def test_summary_refuses_unpaired_budgets(
    cartpole: Simulator, runs: list[Any], models: dict[str, Any]
) -> None:
    other = run_closed_loop(
        cartpole, models["persistence"], ExhaustivePlanner(4), seeds=SEEDS, max_steps=20
    )
    with pytest.raises(InputError, match="every run must share its budget"):
        closed_loop_summary(
            [*runs, *other], random_model="random-walk/v1", oracle_model="oracle/CartPole-v1"
        )


def test_decision_records_round_trip_by_episode_digest(tmp_path: Any, runs: list[Any]) -> None:
    path = tmp_path / "runs.jsonl"
    save_runs(path, runs)
    episodes = {r.episode.digest: r.episode for r in runs}
    assert [r.digest for r in load_runs(path, episodes)] == [r.digest for r in runs]
    path.write_bytes(path.read_bytes().replace(b'"seed":60000', b'"seed":60002', 1))
    with pytest.raises(DigestMismatch):
        load_runs(path, episodes)


@pytest.mark.parametrize("planner", [CrossEntropyPlanner(), RandomShootingPlanner()])
def test_sampling_planners_record_their_budget_and_use_the_model(
    cartpole: Simulator, planner: Any
) -> None:
    state = np.array([0.0, 0.0, 0.05, 0.0])  # leaning right: pushing right helps
    choice = planner.plan(OracleModel(cartpole), cartpole, state, np.random.default_rng(0))
    assert choice.action == 1
    assert choice.predicted_return > 0
    assert planner.budget["planner"] == planner.name


def test_matched_interventions_and_state_persistence(
    cartpole: Simulator, models: dict[str, Any], training: Transitions
) -> None:
    starts = training.states[::40][:6].tolist()
    action_pairs = capture_pairs(cartpole, starts, kind="action", length=4, seed=1)
    offset_pairs = capture_pairs(
        cartpole, starts, kind="offset", length=4, seed=2, offset=[0.0, 0.0, 0.01, 0.0]
    )
    assert action_pairs[0].base.initial["state"] == action_pairs[0].variant.initial["state"]

    def table(pairs: list[Any], model: Any) -> Any:
        arms = [
            capture_forecasts(
                [getattr(p, arm) for p in pairs],
                model,
                model_id="m",
                contract=cartpole.contract,
                coordinates=cartpole.coordinates,
                horizons=[1, 2, 4],
                planned_actions=[getattr(p, f"{arm}_plan") for p in pairs],
            )
            for arm in ("base", "variant")
        ]
        return effect_table(*arms)

    action, blind = table(action_pairs, models["action"]), table(action_pairs, models["blind"])
    # Cart velocity responds at h=1, cart position only from h=2 on.
    assert action.real_effect[0, 0] == 0
    assert action.real_effect[1, 0] > 0
    assert blind.effect_error[0, 1] > 100 * action.effect_error[0, 1]
    persistence = table(offset_pairs, models["persistence"])
    np.testing.assert_allclose(persistence.predicted_effect[:, 2], 0.01)
    # The real offset grows with the horizon; persistence keeps it constant and misses that.
    assert persistence.real_effect[2, 2] > persistence.real_effect[0, 2]
    assert persistence.effect_error[2, 2] > 10 * persistence.effect_error[0, 2]
