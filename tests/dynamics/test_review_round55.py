"""Review round 55: a single forecast reads point-mass particles as a batch does; a
reference whose setup failed is a simulator error, not censored; planner and seed
settings are checked (and NumPy numbers made plain) before any run; answers with the
wrong key or metadata say what was found; an aggregate counts unobserved horizons."""

from __future__ import annotations

import io
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from rich.console import Console

from onrecord import EvalCase
from onrecord.dynamics import (
    CrossEntropyPlanner,
    ExhaustivePlanner,
    OracleModel,
    Prediction,
    RandomShootingPlanner,
    capture_forecast,
    capture_forecasts,
    capture_pairs,
    capture_plan,
    get_simulator,
    random_plan,
    run_closed_loop,
)
from onrecord.dynamics_metrics import aggregate_metrics, forecast_metrics
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode

COORDINATES = {"x": "m", "v": "m/s", "a": "rad", "w": "rad/s"}


@pytest.fixture(scope="module")
def cartpole() -> Any:
    return get_simulator("CartPole-v1")


class _OneCoordinateSpread:
    """Particles that agree exactly on every coordinate but the velocity."""

    model_id = "spread/v1"

    def fit(self, transitions: Any) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {}

    def predict(self, states: Any, actions: Any, *, uncertainty: bool = True) -> Prediction:
        samples = np.repeat(states[:, None, None, :], 5, 1).repeat(actions.shape[1], 2).copy()
        samples[..., 1] += np.random.default_rng(0).normal(0, 0.1, samples[..., 1].shape)
        return Prediction.from_samples(samples)


def test_single_forecast_keeps_point_mass_particles_as_a_batch_does(cartpole: Any) -> None:
    plan = random_plan(cartpole, 5, np.random.default_rng(0))
    reference = capture_plan(cartpole, plan, case_id="c", seed=1)
    settings: dict[str, Any] = {
        "model_id": "spread/v1",
        "contract": cartpole.contract,
        "coordinates": cartpole.coordinates,
        "horizons": [1, 5],
    }
    model = _OneCoordinateSpread()
    single = capture_forecast(reference, model, planned_actions=plan, **settings)
    [batched] = capture_forecasts([reference], model, planned_actions=[plan], **settings)
    assert single.status == batched.status == "ok"
    assert single.data["response"]["states"] == batched.data["response"]["states"]
    assert single.data["response"]["standard_deviation"] is None


def _failed_setup_reference() -> Any:
    def factory() -> gym.Env[Any, Any]:
        env = gym.make("CartPole-v1")

        def broken_reset(**_: Any) -> Any:
            raise RuntimeError("reset broke")

        env.reset = broken_reset  # type: ignore[method-assign]
        return env

    return capture_episode(
        factory,
        lambda env, observation, info: "ok",
        case=EvalCase("x", case_id="c"),
        environment_id="CartPole-v1/native",
        observer_id="n/v1",
        observe=lambda: {"state": [0.0] * 4},
        seed=7,
        max_steps=4,
    )


def test_a_reference_whose_reset_failed_is_a_simulator_error_not_censored() -> None:
    reference = _failed_setup_reference()
    assert reference.ended == "setup_error"
    forecast = capture_forecast(
        reference,
        lambda request: {"states": [request["initial_state"]] * 4},
        model_id="p/v1",
        contract="c/v1",
        coordinates=COORDINATES,
        horizons=[1, 4],
        planned_actions=[0, 1, 0, 1],
    )
    metrics = forecast_metrics(forecast)
    assert forecast.status == "simulator_error"
    assert not metrics.censored.any()
    assert metrics.to_dict()["coordinates"]["x"]["horizons"]["h1"]["censored"] is False
    assert "x h1: simulator error" in str(metrics)
    assert "censored" not in str(metrics)


@pytest.mark.parametrize(
    "build",
    [
        lambda: ExhaustivePlanner(2.5),  # type: ignore[arg-type]
        lambda: RandomShootingPlanner(length=3.0),  # type: ignore[arg-type]
        lambda: RandomShootingPlanner(length=2, samples=True),
        lambda: CrossEntropyPlanner(length=2, elites=2.0),  # type: ignore[arg-type]
        lambda: CrossEntropyPlanner(length=2, smoothing=float("nan")),
        lambda: CrossEntropyPlanner(length=2, smoothing="0.1"),  # type: ignore[arg-type]
    ],
)
def test_planner_settings_that_are_not_whole_numbers_are_refused(build: Any) -> None:
    with pytest.raises(InputError, match=r"length|samples|elites|smoothing"):
        build()


def test_numpy_planner_settings_become_plain_numbers(cartpole: Any) -> None:
    planner = CrossEntropyPlanner(
        length=np.int64(2),  # type: ignore[arg-type]
        population=np.int64(8),  # type: ignore[arg-type]
        elites=np.int64(2),  # type: ignore[arg-type]
        iterations=np.int64(1),  # type: ignore[arg-type]
        smoothing=np.float64(0.1),  # type: ignore[arg-type]
    )
    numbers = [value for value in planner.budget.values() if not isinstance(value, str)]
    assert len(numbers) == 5
    assert all(type(value) in (int, float) for value in numbers)
    runs = run_closed_loop(
        cartpole, OracleModel(cartpole), planner, seeds=[np.int64(3)], max_steps=5
    )
    assert runs[0].record["seed"] == 3
    assert type(runs[0].record["seed"]) is int
    assert runs[0].record["model_error"] is None


def test_closed_loop_seeds_are_checked_before_any_run(cartpole: Any) -> None:
    started: list[Any] = []

    class Counting(OracleModel):
        def predict(self, *args: Any, **kwargs: Any) -> Any:
            started.append(1)
            return super().predict(*args, **kwargs)

    with pytest.raises(InputError, match=r"seeds\[1\] must be a whole number"):
        run_closed_loop(
            cartpole, Counting(cartpole), ExhaustivePlanner(1), seeds=[0, "a"], max_steps=3
        )
    with pytest.raises(InputError, match="seeds must be a sequence"):
        run_closed_loop(cartpole, Counting(cartpole), ExhaustivePlanner(1), seeds="01", max_steps=3)
    assert started == []


def test_capture_pairs_takes_a_numpy_seed_and_names_a_bad_one(cartpole: Any) -> None:
    start = [0.0, 0.0, 0.01, 0.0]
    plain = capture_pairs(cartpole, [start], kind="action", length=3, seed=1)
    numpy = capture_pairs(cartpole, [start], kind="action", length=3, seed=np.int64(1))  # type: ignore[arg-type]
    assert [p.base.states() for p in plain] == [p.base.states() for p in numpy]
    assert [p.variant.actions() for p in plain] == [p.variant.actions() for p in numpy]
    with pytest.raises(InputError, match=r"seed must be between 0 and \d+, got 184467440737095"):
        capture_pairs(cartpole, [start], kind="action", length=3, seed=2**64 // 100_000)
    with pytest.raises(InputError, match="seed must be a whole number"):
        capture_pairs(cartpole, [start], kind="action", length=3, seed=1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"state": [[0.0] * 4] * 5}, r"a mapping without 'states' \(its keys: \['state'\]\)"),
        ({"states": [[0.0] * 4] * 5, "metadata": "hi"}, "metadata is str, not a mapping"),
        ({"states": [[0.0] * 4] * 5, "metadata": [("a", 1)]}, "metadata is list, not a mapping"),
    ],
)
def test_a_wrong_answer_says_what_was_found(cartpole: Any, answer: Any, message: str) -> None:
    plan = random_plan(cartpole, 5, np.random.default_rng(0))
    reference = capture_plan(cartpole, plan, case_id="c", seed=1)
    forecast = capture_forecast(
        reference,
        lambda request: answer,
        model_id="p/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 5],
        planned_actions=plan,
    )
    assert forecast.status == "model_error"
    assert re.search(message, forecast.data["error"]["message"])


def test_aggregate_counts_a_horizon_whose_state_was_not_observed() -> None:
    holder: dict[str, Any] = {}
    reads = iter(range(100))

    def observe() -> Any:
        if next(reads) == 2:  # the read after the second step
            raise RuntimeError("camera dropped a frame")
        return {"state": [float(v) for v in holder["env"].unwrapped.state]}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in (0, 1, 0):
            env.step(action)
        return "done"

    reference = capture_episode(
        factory,
        interact,
        case=EvalCase({"plan": [0, 1, 0]}, case_id="gap"),
        environment_id="CartPole-v1/native",
        observer_id="state/v1",
        observe=observe,
        seed=3,
        max_steps=3,
    )
    forecast = capture_forecast(
        reference,
        lambda request: {"states": [request["initial_state"]] * 3},
        model_id="p/v1",
        contract="c/v1",
        coordinates=COORDINATES,
        horizons=[1, 2, 3],
        planned_actions=[0, 1, 0],
    )
    assert forecast.status == "ok"
    aggregate = aggregate_metrics([forecast])
    assert aggregate.unobserved[:, 0].tolist() == [0, 1, 0]
    assert aggregate.measured[:, 0].tolist() == [1, 0, 1]
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(aggregate)
    table = console.export_text()
    assert "unobserved" in table
    assert "not observed" in table
