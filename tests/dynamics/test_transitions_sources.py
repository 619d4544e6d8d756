"""``Transitions.from_episodes`` pools only episodes of one environment and observer, and
refuses unlike state layouts with an ``InputError`` instead of a NumPy error."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord.dynamics import Transitions, capture_plan, get_simulator, random_plan
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode


def _plan_episode(env_id: str, seed: int) -> Any:
    simulator = get_simulator(env_id)
    plan = random_plan(simulator, 6, np.random.default_rng(seed))
    return capture_plan(simulator, plan, case_id=f"{env_id}-{seed}", seed=seed)


@pytest.mark.parametrize("other", ["Acrobot-v1", "Pendulum-v1"])
def test_episodes_of_two_environments_are_refused(other: str) -> None:
    # Before: CartPole and Acrobot states (4 numbers each) were pooled silently, and
    # CartPole with Pendulum raised a bare NumPy ValueError.
    episodes = [_plan_episode("CartPole-v1", 0), _plan_episode(other, 1)]
    with pytest.raises(InputError, match=r"2 environment/observer pairs.*one environment"):
        Transitions.from_episodes(episodes)


def test_episodes_of_one_environment_still_pool() -> None:
    episodes = [_plan_episode("CartPole-v1", seed) for seed in range(3)]
    transitions = Transitions.from_episodes(episodes)
    assert transitions.states.shape == (sum(len(e.transitions()) for e in episodes), 4)


def test_an_observer_whose_state_changes_length_is_an_input_error() -> None:
    holder: dict[str, Any] = {}
    reads = iter(range(100))

    def factory() -> Any:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in (0, 1, 0):
            env.step(action)
        return "done"

    def observe() -> dict[str, Any]:
        state = [float(v) for v in holder["env"].unwrapped.state]
        return {"state": state if next(reads) % 2 else state[:3]}

    episode = capture_episode(
        factory,
        interact,
        case=EvalCase("ragged", case_id="ragged"),
        environment_id="CartPole-v1",
        observer_id="ragged/v1",
        observe=observe,
        seed=0,
        max_steps=3,
    )
    with pytest.raises(InputError, match="'state' vectors or actions differ in length"):
        Transitions.from_episodes([episode])
