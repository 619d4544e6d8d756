"""A reference whose own ``interact`` raised part-way: the horizons it never executed are
the reference's error, not censored (censored means the episode ended), as ``capture_plan``
refuses a plan the environment would stop part-way. Real CartPole and Pendulum episodes."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord.dynamics import capture_forecast, capture_forecasts
from onrecord.dynamics_metrics import aggregate_metrics, forecast_case_result, forecast_metrics
from onrecord.integrations.gymnasium import capture_episode

PLAN = [0, 1, 0, 1, 1, 0, 0, 1]
HORIZONS = [1, 4, 8]
COORDS = {"x": "m", "velocity": "m/s", "angle": "rad", "angular_velocity": "rad/s"}


def cartpole_reference(executed: int, *, crash: bool = True, seed: int = 7) -> Any:
    """CartPole running the first ``executed`` actions of PLAN, then its interact raises
    (``crash``) or returns."""
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in PLAN[:executed]:
            env.step(action)
        if crash:
            raise RuntimeError("the agent's planner crashed")
        return "stopped"

    return capture_episode(
        factory,
        interact,
        case=EvalCase("Follow a fixed plan", case_id=f"cartpole/{executed}"),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},
        seed=seed,
        max_steps=len(PLAN),
    )


def persistence(request: dict[str, Any]) -> dict[str, Any]:
    return {"states": [request["initial_state"]] * len(request["actions"])}


def forecast(reference: Any, **kwargs: Any) -> Any:
    options: dict[str, Any] = {"planned_actions": PLAN, **kwargs}
    return capture_forecast(
        reference,
        persistence,
        model_id="persistence/v1",
        contract="cartpole-vector/v1",
        coordinates=COORDS,
        horizons=HORIZONS,
        **options,
    )


def test_horizons_after_an_interact_error_are_not_censored() -> None:
    reference = cartpole_reference(3)
    assert reference.ended == "interact_error"
    result = forecast(reference)
    # Before: status "ok" with h4 and h8 censored, as if CartPole had ended the episode.
    assert result.status == "simulator_error"
    assert "interact failed after 3 actions, before horizon 8" in result.error["message"]
    assert "RuntimeError: the agent's planner crashed" in result.error["message"]
    metrics = forecast_metrics(result)
    assert not metrics.censored.any()
    assert "censored" not in str(metrics)
    summary = aggregate_metrics([result, forecast(cartpole_reference(8, crash=False))])
    assert summary.censored.tolist() == [0, 0, 0]
    assert summary.simulator_errors == 1


def test_the_observed_prefix_of_a_crashed_reference_is_not_censored_either() -> None:
    result = forecast(cartpole_reference(3), planned_actions=None)
    assert result.action_scope == "observed_prefix"
    assert result.status == "simulator_error"


def test_a_batched_capture_treats_it_alike() -> None:
    crashed, complete = cartpole_reference(3), cartpole_reference(8, crash=False)
    results = capture_forecasts(
        [crashed, complete],
        lambda states, actions: {"mean": np.repeat(states[:, None], actions.shape[1], axis=1)},
        model_id="persistence/v1",
        contract="cartpole-vector/v1",
        coordinates=COORDS,
        horizons=HORIZONS,
        planned_actions=[PLAN, PLAN],
    )
    assert [r.status for r in results] == ["simulator_error", "ok"]
    assert results[0].error == forecast(crashed).error


def test_the_release_check_blames_the_reference() -> None:
    trial = forecast_case_result(forecast(cartpole_reference(3)), {"x": 0.1})
    statuses = {result.status for result in trial.results}
    assert statuses == {"evaluator_error"}


@settings(max_examples=9, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(executed=st.integers(0, len(PLAN)))
def test_only_unexecuted_horizons_make_a_crash_the_references_error(executed: int) -> None:
    result = forecast(cartpole_reference(executed))
    if executed >= max(HORIZONS):  # every declared horizon ran before the crash
        assert result.status == "ok"
        assert forecast_metrics(result).measured.all()
    else:
        assert result.status == "simulator_error"
    assert not forecast_metrics(result).censored.any()


def test_environment_endings_still_censor() -> None:
    # CartPole falls within the plan: the environment ended it, so later horizons are
    # censored, as before.
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(40):
            _, _, terminated, _, _ = env.step(0)
            if terminated:
                return

    reference = capture_episode(
        factory,
        interact,
        case=EvalCase("push left until it falls", case_id="cartpole/fall"),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},
        seed=0,
        max_steps=40,
    )
    assert reference.ended == "terminated"
    result = capture_forecast(
        reference,
        persistence,
        model_id="persistence/v1",
        contract="cartpole-vector/v1",
        coordinates=COORDS,
        horizons=[1, 32],
        planned_actions=[0] * 40,
    )
    assert result.status == "ok"
    assert forecast_metrics(result).censored.tolist() == [False, True]


@pytest.mark.parametrize("executed", [2])
def test_an_action_the_environment_refuses_mid_plan(executed: int) -> None:
    # A hand-built Pendulum interact sending a float64 torque: Gymnasium refuses it.
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("Pendulum-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(executed):
            env.step(np.array([0.5], dtype=np.float32))
        env.step(np.array([5.0]))  # outside the space: refused mid-plan

    reference = capture_episode(
        factory,
        interact,
        case=EvalCase("torques", case_id="pendulum/refused"),
        environment_id="Pendulum-v1/native",
        observer_id="native-state/v1",
        observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},
        seed=0,
        max_steps=8,
    )
    result = capture_forecast(
        reference,
        persistence,
        model_id="persistence/v1",
        contract="pendulum-state/v1",
        coordinates={"theta": "rad", "theta_dot": "rad/s"},
        horizons=[1, 4],
    )
    assert reference.ended == "interact_error", reference.coverage_issues
    assert result.status == "simulator_error"
    assert not forecast_metrics(result).censored.any()
