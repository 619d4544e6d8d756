"""The oracle reproduces the simulator exactly: long horizons, wrapping, termination,
batch sizes, and the simulator's own ``make_kwargs``."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord.dynamics import OracleModel, get_simulator
from onrecord.dynamics._references import capture_plan


def _native(action: Any) -> Any:
    return np.asarray(action, dtype=np.float32) if isinstance(action, list) else action


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"])
def test_oracle_matches_a_free_running_simulator_over_300_steps(env_id: str) -> None:
    simulator = get_simulator(env_id)
    rng = np.random.default_rng(3)
    starts, plans, truths = [], [], []
    for n in range(3):
        env: Any = gym.make(env_id).unwrapped
        env.reset(seed=n)
        plan = [simulator.actions[i] for i in rng.integers(0, len(simulator.actions), 300)]
        starts.append(np.asarray(env.state, dtype=np.float64).copy())
        truth = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CartPole warns when stepped past its end
            for action in plan:
                env.step(_native(action))
                truth.append(np.asarray(env.state, dtype=np.float64).copy())
        plans.append(plan)
        truths.append(truth)
    oracle = OracleModel(simulator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = oracle.predict(np.array(starts), np.asarray(plans)).mean
        single = oracle.predict(np.array(starts[:1]), np.asarray(plans[:1])).mean
    assert np.array_equal(batch, np.array(truths))
    assert np.array_equal(single[0], batch[0])
    if env_id == "Acrobot-v1":  # Acrobot wraps its angles; the oracle keeps them wrapped
        assert np.abs(batch[..., :2]).max() <= np.pi
    if env_id == "CartPole-v1":  # the plans run well past termination
        assert np.abs(batch[..., 2]).max() > 12 * 2 * np.pi / 360


@pytest.mark.parametrize(
    ("env_id", "kwargs"), [("Pendulum-v1", {"g": 5.0}), ("CartPole-v1", {"render_mode": None})]
)
def test_oracle_builds_the_simulator_with_its_make_kwargs(
    env_id: str, kwargs: dict[str, Any]
) -> None:
    simulator = dataclasses.replace(get_simulator(env_id), make_kwargs=kwargs)
    plan = [simulator.actions[i % len(simulator.actions)] for i in range(12)]
    episode = capture_plan(simulator, plan, case_id="kw", seed=3)
    truth = np.array([step["state"]["state"] for step in episode.transitions()])
    start = np.array(episode.initial["state"]["state"])
    oracle = OracleModel(simulator)
    for count in (1, 2):
        mean = oracle.predict(np.repeat(start[None], count, 0), np.asarray([plan] * count)).mean
        assert np.array_equal(mean[0, : len(truth)], truth)
