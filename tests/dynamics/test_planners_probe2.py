"""Planner edge cases: zero budgets, NaN predictions, continuous (Box) action sets."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import OracleModel, Prediction, get_simulator
from onrecord.dynamics._planners import (
    CrossEntropyPlanner,
    ExhaustivePlanner,
    NonFinitePrediction,
    RandomShootingPlanner,
)
from onrecord.errors import InputError


class PartlyNaNModel:
    """The oracle, except that plans whose first action is ``bad`` come back as NaN."""

    model_id = "partly-nan/v1"

    def __init__(self, env_id: str, bad: Any) -> None:
        self.simulator = get_simulator(env_id)
        self.oracle = OracleModel(self.simulator)
        self.bad = bad

    def fit(self, transitions: Any) -> None:
        """Nothing to learn."""

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Any:
        mean = self.oracle.predict(initial_states, actions, uncertainty=False).mean.copy()
        first = np.asarray(actions)[:, 0]
        broken = np.array([np.array_equal(a, self.bad) for a in first])
        mean[broken] = np.nan
        return Prediction(mean)

    def describe(self) -> dict[str, Any]:
        return {"kind": "partly-nan"}


@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomShootingPlanner(3, samples=0),
        lambda: CrossEntropyPlanner(3, population=4, elites=2, iterations=0),
        lambda: CrossEntropyPlanner(3, smoothing=1.5),
        lambda: CrossEntropyPlanner(3, smoothing=-0.1),
    ],
)
def test_planner_refuses_an_empty_or_invalid_budget(make: Any) -> None:
    with pytest.raises(InputError):
        make()


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"])
@pytest.mark.parametrize(
    "planner",
    [ExhaustivePlanner(3), RandomShootingPlanner(3, samples=64), CrossEntropyPlanner(3)],
    ids=["exhaustive", "shooting", "cem"],
)
def test_nan_plans_are_never_chosen(env_id: str, planner: Any) -> None:
    simulator = get_simulator(env_id)
    bad = simulator.actions[0]
    model = PartlyNaNModel(env_id, bad)
    state = np.full(simulator.dimension, 0.01)
    choice = planner.plan(model, simulator, state, np.random.default_rng(0))
    assert not np.array_equal(choice.action, bad)
    assert np.isfinite(choice.predicted_return)


def test_all_nan_predictions_raise_a_named_error() -> None:
    simulator = get_simulator("CartPole-v1")

    class AllNaN(PartlyNaNModel):
        def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Any:
            shape = (len(actions), np.shape(actions)[1], self.simulator.dimension)
            return Prediction(np.full(shape, np.nan))

    with pytest.raises(NonFinitePrediction, match="non-finite"):
        ExhaustivePlanner(2).plan(
            AllNaN("CartPole-v1", 0), simulator, np.zeros(4), np.random.default_rng(0)
        )


def test_length_one_plans_on_a_box_action_space_return_environment_actions() -> None:
    simulator = get_simulator("Pendulum-v1")
    model = OracleModel(simulator)
    state = np.array([2.5, 0.0])
    for planner in (ExhaustivePlanner(1), RandomShootingPlanner(1, samples=1)):
        choice = planner.plan(model, simulator, state, np.random.default_rng(1))
        assert choice.action in simulator.actions
        assert len(choice.plan) == 1
