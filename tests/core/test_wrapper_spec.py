"""The wrappers put on after ``gymnasium.make`` are part of the recorded environment:
runs of one id under different wrapper stacks are different environments."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.wrappers import NormalizeObservation

from onrecord import EvalCase, compare_reports
from onrecord.episode import OutcomeCheck, OutcomeVerdict, evaluate_episode
from onrecord.errors import ComparisonRefused
from onrecord.integrations.gymnasium import capture_episode

CASE = EvalCase("balance", case_id="cartpole", completion="either")
ENDED = OutcomeCheck("ended", "v1", lambda e: OutcomeVerdict(e.ended != "returned", "", {}))


def _episode(make: Any) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(5):
            env.step(0)

    return capture_episode(
        make,
        interact,
        case=CASE,
        environment_id="CartPole-v1",
        observer_id="none",
        observe=dict,
        seed=0,
        max_steps=5,
    )


def test_a_wrapper_stack_is_recorded_and_refuses_a_comparison() -> None:
    plain = _episode(lambda: gym.make("CartPole-v1"))
    normalized = _episode(lambda: NormalizeObservation(gym.make("CartPole-v1")))
    assert "additional_wrappers" not in plain.environment["spec"]  # as before
    (wrapper,) = normalized.environment["spec"]["additional_wrappers"]
    assert wrapper["name"] == "NormalizeObservation"
    assert wrapper["entry_point"].endswith(":NormalizeObservation")
    assert wrapper["kwargs"] == {"epsilon": pytest.approx(1e-8)}
    # Before: both recorded the same spec, and compare paired them as one environment.
    with pytest.raises(ComparisonRefused, match="additional_wrappers"):
        compare_reports(evaluate_episode(plain, [ENDED]), evaluate_episode(normalized, [ENDED]))
