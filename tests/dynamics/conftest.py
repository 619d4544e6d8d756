"""Shared fixtures: real CartPole references and fitted models (built once per session)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    BayesianLinearModel,
    BootstrapEnsembleModel,
    PersistenceModel,
    Simulator,
    Transitions,
    capture_forecasts,
    get_simulator,
)
from onrecord.dynamics._references import capture_plan, random_plan


@pytest.fixture(scope="session")
def cartpole() -> Simulator:
    return get_simulator("CartPole-v1")


def references(
    simulator: Simulator, seeds: range, length: int
) -> tuple[list[Any], list[list[Any]]]:
    plans = [random_plan(simulator, length, np.random.default_rng(s)) for s in seeds]
    episodes = [
        capture_plan(simulator, plan, case_id=f"ref-{s}", seed=s)
        for s, plan in zip(seeds, plans, strict=True)
    ]
    return episodes, plans


@pytest.fixture(scope="session")
def training(cartpole: Simulator) -> Transitions:
    episodes, _ = references(cartpole, range(1000, 1030), 60)
    return Transitions.from_episodes(episodes)


@pytest.fixture(scope="session")
def heldout(cartpole: Simulator) -> tuple[list[Any], list[list[Any]]]:
    return references(cartpole, range(2000, 2030), 32)


@pytest.fixture(scope="session")
def models(cartpole: Simulator, training: Transitions) -> dict[str, Any]:
    fitted: dict[str, Any] = {
        "persistence": PersistenceModel(cartpole),
        "action": BayesianLinearModel(cartpole),
        "blind": BayesianLinearModel(cartpole, action_conditioned=False),
        "ensemble": BootstrapEnsembleModel(cartpole, members=4, particles=2),
    }
    for model in fitted.values():
        model.fit(training)
    return fitted


@pytest.fixture(scope="session")
def forecasts(cartpole: Simulator, heldout: Any, models: dict[str, Any]) -> dict[str, Any]:
    """Every model's forecasts of the held-out references, horizons 1 to 32."""
    episodes, plans = heldout
    return {
        name: capture_forecasts(
            episodes,
            model,
            model_id=name,
            contract=cartpole.contract,
            coordinates=cartpole.coordinates,
            horizons=[1, 4, 8, 16, 32],
            planned_actions=plans,
        )
        for name, model in models.items()
    }
