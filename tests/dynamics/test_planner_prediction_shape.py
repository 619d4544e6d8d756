"""A planner refuses a model's prediction of the wrong shape, naming the shape expected,
instead of scoring plans over the wrong number of steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    ExhaustivePlanner,
    OracleModel,
    Prediction,
    get_simulator,
    run_closed_loop,
)

Reshape = Callable[[np.ndarray], np.ndarray]


class ReshapedOracle:
    """The real simulator's forecast, passed through ``reshape`` before it is returned."""

    model_id = "reshaped-oracle/v1"

    def __init__(self, env_id: str, reshape: Reshape) -> None:
        self.oracle = OracleModel(get_simulator(env_id))
        self.reshape = reshape

    def fit(self, transitions: Any) -> None:
        """Nothing to learn."""

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Any:
        mean = self.oracle.predict(initial_states, actions, uncertainty=False).mean
        return Prediction(self.reshape(mean))

    def describe(self) -> dict[str, Any]:
        return {"kind": "reshaped-oracle"}


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize(
    "reshape",
    [
        lambda m: m[:, :-1],  # one step short: before, silently scored over 2 steps
        lambda m: np.concatenate([m, m[:, -1:]], axis=1),  # one step long: likewise
        lambda m: m[:1],  # one plan only
        lambda m: m[..., 0],  # coordinates dropped
    ],
)
def test_a_prediction_of_the_wrong_shape_is_the_models_error(env_id: str, reshape: Reshape) -> None:
    simulator = get_simulator(env_id)
    model = ReshapedOracle(env_id, reshape)
    run = run_closed_loop(simulator, model, ExhaustivePlanner(3), seeds=[0], max_steps=5)[0]
    error = run.record["model_error"]
    assert error is not None
    assert error["step"] == 0
    assert "must return [plans, actions, coordinates]" in error["message"]
    assert error["type"].endswith("ModelError")
    assert run.failed


def test_the_right_shape_still_plans() -> None:
    simulator = get_simulator("CartPole-v1")
    model = ReshapedOracle("CartPole-v1", lambda m: m.astype(np.float32))
    run = run_closed_loop(simulator, model, ExhaustivePlanner(3), seeds=[0], max_steps=5)[0]
    assert run.record["model_error"] is None
    assert len(run.episode.transitions()) == 5
