"""docs/world-models.md, annotated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_type

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase, EvaluationReport
from onrecord.dynamics import (
    ForecastEvidence,
    Prediction,
    Transitions,
    WorldModel,
    capture_forecast,
    capture_forecasts,
    capture_plan,
    get_simulator,
)
from onrecord.dynamics_metrics import (
    AggregateMetrics,
    ForecastMetrics,
    aggregate_metrics,
    forecast_case_result,
    forecast_metrics,
    forecast_report,
)
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode
from onrecord.report import Trial

actions = [0, 1, 0, 1, 1, 0, 0, 1]
holder: dict[str, gym.Env[Any, Any]] = {}


def factory() -> gym.Env[NDArray[np.float32], np.int64]:
    env: gym.Env[NDArray[np.float32], np.int64] = gym.make("CartPole-v1")
    holder["env"] = env
    return env


def interact(
    env: gym.Env[NDArray[np.float32], np.int64],
    observation: NDArray[np.float32],
    info: dict[str, Any],
) -> str:
    for action in actions:
        env.step(np.int64(action))
    return "planned actions sent"


reference: EpisodeEvidence = capture_episode(
    factory,
    interact,
    case=EvalCase("Follow a fixed plan", case_id="cartpole/plan"),
    environment_id="CartPole-v1/native",
    observer_id="native-state/v1",
    observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},  # type: ignore[attr-defined]
    seed=7,
    max_steps=len(actions),
)


def persistence(request: dict[str, Any]) -> dict[str, list[list[float]]]:
    return {"states": [request["initial_state"]] * len(request["actions"])}


forecast: ForecastEvidence = capture_forecast(
    reference,
    persistence,
    model_id="persistence/v1",
    contract="cartpole-vector/v1",
    coordinates={"x": "m", "velocity": "m/s", "angle": "rad", "angular_velocity": "rad/s"},
    horizons=[1, 4],
    planned_actions=actions,
)
metrics = forecast_metrics(forecast)
print(metrics)
assert_type(metrics, ForecastMetrics)
assert_type(metrics.unobserved, Mapping[int, str])

pendulum = get_simulator("Pendulum-v1")


def torque_plan(seed: int, length: int) -> list[NDArray[np.float32]]:
    return list(np.random.default_rng(seed).uniform(-2, 2, (length, 1)).astype(np.float32))


train: list[EpisodeEvidence] = [
    capture_plan(pendulum, torque_plan(s, 50), case_id=f"train-{s}", seed=s) for s in range(3)
]
plans = [torque_plan(100 + s, 12) for s in range(2)]
held_out: list[EpisodeEvidence] = [
    capture_plan(pendulum, plan, case_id=f"held-{s}", seed=100 + s) for s, plan in enumerate(plans)
]


class LeastSquares:
    model_id = "least-squares/v1"

    def __init__(self) -> None:
        self.weights: NDArray[np.float64] = np.zeros((5, 2))

    def fit(self, transitions: Transitions) -> None:
        inputs = self.features(transitions.states, transitions.actions)
        change = transitions.next_states - transitions.states
        self.weights = np.linalg.lstsq(inputs, change, rcond=None)[0].astype(np.float64)

    def predict(
        self,
        initial_states: NDArray[np.float64],
        actions: NDArray[Any],
        *,
        uncertainty: bool = True,
    ) -> Prediction:
        state, states = initial_states, []
        for step in range(actions.shape[1]):
            state = state + self.features(state, actions[:, step]) @ self.weights
            states.append(state)
        return Prediction(np.stack(states, axis=1))

    def describe(self) -> dict[str, Any]:
        return {"kind": "least-squares", "weights": self.weights.tolist()}

    @staticmethod
    def features(state: NDArray[np.float64], torque: NDArray[Any]) -> NDArray[np.float64]:
        theta = state[:, :1]
        return np.hstack([state, np.sin(theta), np.cos(theta), torque, np.ones_like(theta)])


model: WorldModel = LeastSquares()
model.fit(Transitions.from_episodes(train))
forecasts: list[ForecastEvidence] = capture_forecasts(
    held_out,
    model,
    model_id=model.model_id,
    contract=pendulum.contract,
    coordinates=pendulum.coordinates,
    horizons=[1, 10],
    planned_actions=plans,
)
aggregate = aggregate_metrics(forecasts)
print(aggregate.mae[:, 0])
assert_type(aggregate.mae, NDArray[np.float64])
assert_type(aggregate, AggregateMetrics)
tolerances: dict[str, float | dict[str, float]] = {
    "theta": {"h1": 0.001, "*": 0.05},
    "theta_dot": 0.5,
}
report: EvaluationReport = forecast_report(forecasts, tolerances)
trial: Trial = forecast_case_result(forecasts[0], {"theta": 0.05})
assert_type(forecast_report(forecasts, tolerances), EvaluationReport)
assert_type(capture_plan(pendulum, plans[0], case_id="x", seed=1), EpisodeEvidence)
print(AcceptancePolicy((CheckRequirement("dynamics/theta/*"),)).evaluate(report).decision)


def batched(
    initial_states: NDArray[np.float64], actions: NDArray[Any]
) -> dict[str, NDArray[np.float64]]:
    n, h = actions.shape[0], actions.shape[1]
    return {
        "mean": np.repeat(initial_states[:, None, :], h, axis=1),
        "standard_deviation": np.ones((n, h, initial_states.shape[1])),
    }


batch = capture_forecasts(
    held_out,
    batched,
    model_id="persist/v1",
    contract=pendulum.contract,
    coordinates=pendulum.coordinates,
    horizons=[1],
    planned_actions=plans,
)
print(len(batch))
