"""Actions the environment would refuse are refused up front, naming the action, instead
of ending real episodes part-way (blamed on the model, or read as censoring)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from onrecord.dynamics import (
    ExhaustivePlanner,
    OracleModel,
    capture_plan,
    get_simulator,
    run_closed_loop,
)
from onrecord.errors import InputError


@pytest.mark.parametrize(
    ("env_id", "actions"), [("Pendulum-v1", ([-3.0], [3.0])), ("CartPole-v1", (0, 1, 2))]
)
def test_closed_loop_refuses_actions_outside_the_action_space(
    env_id: str, actions: tuple[Any, ...]
) -> None:
    # Before: every run ended interact_error and counted as the model's failed run.
    simulator = dataclasses.replace(get_simulator(env_id), actions=actions)
    with pytest.raises(InputError, match=r"actions\[\d\].*not in its action space"):
        run_closed_loop(
            simulator, OracleModel(simulator), ExhaustivePlanner(1), seeds=[0], max_steps=3
        )


@pytest.mark.parametrize(
    ("env_id", "plan", "index"),
    [
        ("CartPole-v1", [0, 1, 0, 5, 1], 3),
        ("CartPole-v1", [0, "left"], 1),
        ("Pendulum-v1", [[1.0], [2.5]], 1),
        ("Pendulum-v1", [[1.0], [float("nan")]], 1),
        ("Acrobot-v1", [2, -1], 1),
    ],
)
def test_capture_plan_refuses_an_action_outside_the_space_naming_it(
    env_id: str, plan: list[Any], index: int
) -> None:
    # Before: the reference ended interact_error part-way, and a forecast of it called
    # the unexecuted horizons "censored", as if the environment had ended the episode.
    with pytest.raises(InputError, match=rf"action {index} of the plan.*not in the"):
        capture_plan(get_simulator(env_id), plan, case_id="bad-plan", seed=0)
