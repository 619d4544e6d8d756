"""Models, the oracle and the simulators' state setters, on real environments."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord.dynamics import (
    SIMULATORS,
    BayesianLinearModel,
    OracleModel,
    Prediction,
    Simulator,
    Transitions,
    WorldModel,
    capture_forecasts,
    get_simulator,
)
from onrecord.dynamics._references import capture_plan, random_plan
from onrecord.errors import InputError


@pytest.mark.parametrize("env_id", sorted(SIMULATORS))
def test_oracle_reproduces_captured_references_exactly(env_id: str) -> None:
    simulator = get_simulator(env_id)
    plans = [random_plan(simulator, 12, np.random.default_rng(s)) for s in range(3)]
    episodes = [capture_plan(simulator, p, case_id=f"o{s}", seed=s) for s, p in enumerate(plans)]
    forecasts = capture_forecasts(
        episodes,
        OracleModel(simulator),
        model_id="oracle",
        contract=simulator.contract,
        coordinates=simulator.coordinates,
        horizons=[1, 12],
        planned_actions=plans,
    )
    for forecast in forecasts:
        steps = forecast.observed_steps
        np.testing.assert_array_equal(forecast.mean[:steps], forecast.truth)


@pytest.mark.parametrize("env_id", sorted(SIMULATORS))
def test_state_setter_matches_the_declared_observation(env_id: str) -> None:
    simulator = get_simulator(env_id)
    env = simulator.make()
    state = [0.1, -0.2, 0.05, 0.3][: simulator.dimension]
    observation, _ = env.reset(seed=0, options={"state": state})
    assert simulator.get_state(env) == state
    np.testing.assert_allclose(observation, simulator.observation_of(np.array(state)), rtol=1e-6)
    with pytest.raises(InputError, match=f"must be {simulator.dimension} finite numbers"):
        simulator.set_state(env.unwrapped, [np.nan] * simulator.dimension)
    env.close()


def test_action_conditioned_model_separates_actions(
    models: dict[str, Any], training: Transitions
) -> None:
    state = training.states[:50]
    push_left = models["action"].predict(state, np.zeros((50, 1), np.int64)).mean
    push_right = models["action"].predict(state, np.ones((50, 1), np.int64)).mean
    effect = (push_right - push_left)[:, 0, 1]
    np.testing.assert_allclose(effect, 0.39, atol=0.01)  # 2 * 10 N * tau / mass, roughly
    blind = models["blind"]
    np.testing.assert_array_equal(
        blind.predict(state, np.zeros((50, 1), np.int64)).mean,
        blind.predict(state, np.ones((50, 1), np.int64)).mean,
    )


def test_propagated_uncertainty_grows_with_horizon(
    models: dict[str, Any], training: Transitions
) -> None:
    prediction = models["action"].predict(training.states[:5], np.zeros((5, 10), np.int64))
    assert prediction.std is not None
    assert (np.diff(prediction.std[:, :, 0], axis=1) > 0).all()
    ensemble = models["ensemble"].predict(training.states[:5], np.zeros((5, 10), np.int64))
    assert ensemble.samples is not None
    assert ensemble.samples.shape == (5, 8, 10, 4)
    assert (ensemble.std > 0).all()  # type: ignore[operator]


def test_models_satisfy_the_protocol(models: dict[str, Any], cartpole: Simulator) -> None:
    for model in [*models.values(), OracleModel(cartpole)]:
        assert isinstance(model, WorldModel)
        assert model.describe()["model_id"] == model.model_id


def test_unfitted_model_and_bad_shapes_are_clear_errors(cartpole: Simulator) -> None:
    model = BayesianLinearModel(cartpole)
    with pytest.raises(InputError, match="is not fitted: call fit"):
        model.predict(np.zeros((1, 4)), np.zeros((1, 2), np.int64))
    with pytest.raises(InputError, match=r"initial_states must be \[N, 4\]"):
        OracleModel(cartpole).predict(np.zeros((1, 3)), np.zeros((1, 2), np.int64))
    with pytest.raises(InputError, match="at least one transition"):
        Transitions(np.zeros((0, 4)), np.zeros(0), np.zeros((0, 4)))


def test_pendulum_model_learns_with_angle_features() -> None:
    pendulum = get_simulator("Pendulum-v1")
    rng = np.random.default_rng(0)
    episodes = [
        capture_plan(pendulum, random_plan(pendulum, 50, rng), case_id=f"p{s}", seed=s)
        for s in range(10)
    ]
    data = Transitions.from_episodes(episodes)
    model = BayesianLinearModel(pendulum)
    model.fit(data)
    prediction: Prediction = model.predict(data.states[:100], data.actions[:100, None])
    error = np.abs(prediction.mean[:, 0] - data.next_states[:100]).mean(axis=0)
    persistence = np.abs(data.states[:100] - data.next_states[:100]).mean(axis=0)
    assert error[1] < persistence[1] / 5
    assert gym.make("Pendulum-v1").spec.id == pendulum.env_id  # type: ignore[union-attr]
