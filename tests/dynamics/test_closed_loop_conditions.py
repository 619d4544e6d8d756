"""``closed_loop_summary`` compares runs only under the same conditions: environment,
planner budget, step cap, and one run per model and seed."""

from __future__ import annotations

from typing import Any

import pytest

from onrecord.dynamics import (
    ExhaustivePlanner,
    OracleModel,
    PersistenceModel,
    RandomModel,
    Simulator,
    closed_loop_summary,
    get_simulator,
    run_closed_loop,
)
from onrecord.errors import InputError


def _loop(simulator: Simulator, model: Any, seeds: list[int], steps: int) -> list[Any]:
    return run_closed_loop(simulator, model, ExhaustivePlanner(2), seeds=seeds, max_steps=steps)


def test_summary_refuses_runs_with_different_step_caps() -> None:
    # Before: a model capped at 5 steps was scored against an oracle capped at 40
    # (normalized -1.33, "reached_cap" on every seed) as if both had the same chance.
    cartpole = get_simulator("CartPole-v1")
    runs = _loop(cartpole, OracleModel(cartpole), [0, 1], 40)
    runs += _loop(cartpole, RandomModel(cartpole), [0, 1], 40)
    runs += _loop(cartpole, PersistenceModel(cartpole), [0, 1], 5)
    with pytest.raises(InputError, match="every run must share its max_steps"):
        closed_loop_summary(runs, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1")


def test_summary_refuses_runs_of_two_environments_under_one_model_id() -> None:
    # Before: random-walk/v1's Pendulum runs silently replaced its CartPole runs seed by
    # seed, and normalized every CartPole model against Pendulum returns.
    cartpole, pendulum = get_simulator("CartPole-v1"), get_simulator("Pendulum-v1")
    runs = _loop(cartpole, OracleModel(cartpole), [0, 1], 20)
    runs += _loop(cartpole, RandomModel(cartpole), [0, 1], 20)
    runs += _loop(pendulum, RandomModel(pendulum), [0, 1], 20)
    with pytest.raises(InputError, match="every run must share its env_id"):
        closed_loop_summary(runs, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1")


def test_summary_refuses_two_runs_of_one_model_on_one_seed() -> None:
    cartpole = get_simulator("CartPole-v1")
    runs = _loop(cartpole, OracleModel(cartpole), [0, 1], 20)
    runs += _loop(cartpole, RandomModel(cartpole), [0, 1], 20)
    runs += _loop(cartpole, RandomModel(cartpole), [1], 20)
    with pytest.raises(InputError, match="two runs of 'random-walk/v1' on seed 1"):
        closed_loop_summary(runs, random_model="random-walk/v1", oracle_model="oracle/CartPole-v1")
