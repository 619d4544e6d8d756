"""The planners' reward rules follow the simulator they belong to: its actions and its
``make_kwargs``, checked against the rewards the real Gymnasium environment paid."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    ExhaustivePlanner,
    OracleModel,
    Simulator,
    get_simulator,
    run_closed_loop,
)
from onrecord.errors import InputError


def _predicted_and_paid(simulator: Simulator, steps: int = 12) -> tuple[Any, Any]:
    # With a one-step plan and the oracle, the predicted return of each decision is the
    # reward the environment pays for it: any difference is the reward rule's.
    run = run_closed_loop(
        simulator, OracleModel(simulator), ExhaustivePlanner(1), seeds=[3], max_steps=steps
    )[0]
    assert run.record["model_error"] is None
    paid = [t["reward"] for t in run.episode.transitions()]
    return np.array(run.record["predicted_returns"]), np.array(paid)


@pytest.mark.parametrize(
    "actions", [([-1.0], [0.0], [1.0]), ([-0.5], [0.5]), ([0.25], [-2.0], [1.5])]
)
def test_pendulum_reward_uses_the_simulators_own_torques(actions: tuple[Any, ...]) -> None:
    simulator = dataclasses.replace(get_simulator("Pendulum-v1"), actions=actions)
    predicted, paid = _predicted_and_paid(simulator)
    assert len(predicted) == len(paid) == 12
    np.testing.assert_allclose(predicted, paid, rtol=0, atol=1e-6)


def test_pendulum_reward_with_another_gravity_matches_the_environment() -> None:
    simulator = dataclasses.replace(get_simulator("Pendulum-v1"), make_kwargs={"g": 4.0})
    predicted, paid = _predicted_and_paid(simulator)
    np.testing.assert_allclose(predicted, paid, rtol=0, atol=1e-6)


def test_cartpole_sutton_barto_reward_is_the_environments() -> None:
    simulator = dataclasses.replace(
        get_simulator("CartPole-v1"), make_kwargs={"sutton_barto_reward": True}
    )
    predicted, paid = _predicted_and_paid(simulator, steps=30)
    assert set(paid.tolist()) <= {0.0, -1.0}
    np.testing.assert_array_equal(predicted, paid)


def test_default_simulators_keep_their_rewards() -> None:
    for env_id in ("CartPole-v1", "Pendulum-v1"):
        simulator = get_simulator(env_id)
        assert dataclasses.replace(simulator) == simulator
        predicted, paid = _predicted_and_paid(simulator)
        np.testing.assert_allclose(predicted, paid, rtol=0, atol=1e-6)


@pytest.mark.parametrize("action", [[1.0, 0.0], "left", [float("nan")]])
def test_pendulum_action_that_is_not_one_torque_is_refused_naming_it(action: Any) -> None:
    with pytest.raises(InputError, match=r"actions\[1\].*one finite torque"):
        dataclasses.replace(get_simulator("Pendulum-v1"), actions=([0.0], action))
