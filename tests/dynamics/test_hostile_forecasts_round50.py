"""A learned model's hostile answers, taken in by forecasts and by planning alike.

Real CartPole and Pendulum. Forecasts already refused a deviation <= 0, NaN, text and the
wrong shape as the model's error, but planning (which asks ``uncertainty=False``) read
only the mean: a model whose every forecast was refused for its negative deviations
still balanced the pole and got a closed-loop score. A masked array was recorded ``ok``
with ``null`` states (the record then failed to load), an object array of text or dates
became numbers, and an ``async def`` predict failed every forecast one at a time.
"""

from __future__ import annotations

import asyncio
import datetime
import gc
import json
import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onrecord.cli._worldmodel_failures import failure_lines
from onrecord.dynamics import (
    BayesianLinearModel,
    ExhaustivePlanner,
    ForecastEvidence,
    OracleModel,
    Prediction,
    RandomModel,
    Simulator,
    Transitions,
    capture_forecast,
    capture_forecasts,
    closed_loop_summary,
    get_simulator,
    request_predictor,
    run_closed_loop,
)
from onrecord.errors import InputError
from tests.cli_process import onrecord
from tests.dynamics.conftest import references

Answer = Callable[[Prediction, np.ndarray], Any]


class Wrapped:
    """A fitted Bayesian linear model whose answer ``change(prediction, actions)`` spoils
    (its prediction always carries the deviation, whatever ``uncertainty`` asks)."""

    def __init__(self, simulator: Simulator, training: Transitions, change: Answer) -> None:
        self.model_id = "hostile/v1"
        self.inner = BayesianLinearModel(simulator)
        self.inner.fit(training)
        self.change = change

    def fit(self, transitions: Transitions) -> None:
        """Fitted when built."""

    def predict(
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> Any:
        return self.change(self.inner.predict(initial_states, actions), actions)

    def describe(self) -> dict[str, Any]:
        return {"kind": "hostile"}


@pytest.fixture(scope="module")
def pendulum() -> Simulator:
    return get_simulator("Pendulum-v1")


@pytest.fixture(scope="module")
def pendulum_training(pendulum: Simulator) -> Transitions:
    return Transitions.from_episodes(references(pendulum, range(300, 310), 40)[0])


def _forecasts(simulator: Simulator, model: Any, count: int = 3) -> list[ForecastEvidence]:
    episodes, plans = references(simulator, range(50, 50 + count), 8)
    return capture_forecasts(
        episodes,
        model,
        model_id=model.model_id,
        contract=simulator.contract,
        coordinates=simulator.coordinates,
        horizons=[1, 4],
        planned_actions=plans,
    )


def _loop(simulator: Simulator, model: Any, seeds: tuple[int, ...] = (0,)) -> list[Any]:
    return run_closed_loop(simulator, model, ExhaustivePlanner(2), seeds=list(seeds), max_steps=6)


def _negative(prediction: Prediction, actions: np.ndarray) -> Prediction:
    return Prediction(prediction.mean, -prediction.std)


# --- negative deviations: the known issue --------------------------------------------


@pytest.mark.parametrize("env", ["CartPole-v1", "Pendulum-v1"])
def test_a_negative_deviation_fails_the_closed_loop_as_it_fails_every_forecast(
    env: str, cartpole: Simulator, training: Transitions, pendulum_training: Transitions
) -> None:
    simulator = get_simulator(env)
    model = Wrapped(simulator, training if env == "CartPole-v1" else pendulum_training, _negative)
    first = simulator.coordinates[0].name
    for forecast in _forecasts(simulator, model):
        assert forecast.status == "model_error"
        assert forecast.error is not None
        message = forecast.error["message"]
        assert message.startswith("standard_deviation is -"), message
        assert f"at horizon 1, coordinate '{first}'" in message, message
        assert "must be finite and positive" in message, message
    runs = _loop(simulator, model, seeds=(0, 1))
    for run in runs:
        # Before: failed=False, the planner never looked at the deviation.
        assert run.failed
        error = run.record["model_error"]
        assert error["step"] == 0
        assert error["type"].endswith("ModelError")
        message = error["message"]
        assert message.startswith("standard_deviation is -"), message
        assert f"at plan 0, horizon 1, coordinate '{first}'" in message, message
        assert (
            "or return none (Prediction(mean)) when predict is called with uncertainty=False"
            in (message)
        )
    if env == "CartPole-v1":
        others = [
            *_loop(simulator, RandomModel(simulator), seeds=(0, 1)),
            *_loop(simulator, OracleModel(simulator), seeds=(0, 1)),
        ]
        rows = closed_loop_summary(
            [*runs, *others], random_model="random-walk/v1", oracle_model="oracle/CartPole-v1"
        )
        row = next(r for r in rows if r["model_id"] == "hostile/v1")
        assert row["failed_runs"] == 2
        assert row["mean_return"] is None, row
        assert row["normalized_score"] is None, row


def _std(values: Callable[[np.ndarray], Any]) -> Answer:
    return lambda prediction, actions: Prediction(prediction.mean, values(prediction.std))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_std(np.zeros_like), "standard_deviation is 0 at plan 0, horizon 1, coordinate"),
        (_std(lambda s: s * np.nan), "standard_deviation is nan at plan 0, horizon 1"),
        (_std(lambda s: s * np.inf), "standard_deviation is inf at plan 0, horizon 1"),
        (
            _std(lambda s: s[..., :1]),
            "the model predicted standard_deviation of shape [4, 2, 1] for 4 plans of 2 "
            "actions from a 4-number state",
        ),
        (_std(lambda s: 0.1), "the model predicted standard_deviation of shape []"),
        (_std(lambda s: s.astype(str)), "standard_deviation is not numeric"),
        (
            _std(lambda s: np.ma.masked_array(s, mask=np.arange(s.size).reshape(s.shape) == 0)),
            "standard_deviation is a masked array with",
        ),
        (
            lambda p, a: {"mean": p.mean, "std": p.std},
            "predict returned unknown fields ['std']",
        ),
        (lambda p, a: Prediction(p.mean > 0), "mean is not numeric: it holds bool values"),
        (lambda p, a: Prediction(p.mean + 0j), "mean is not numeric: it holds complex128"),
        (
            lambda p, a: {"samples": p.mean},
            "samples has shape [4, 2, 4], expected [4, S, 2, 4] (plans, particles, actions,",
        ),
        (
            lambda p, a: Prediction(np.full(p.mean.shape, 10**400, dtype=object)),
            "the model's answer could not be read: OverflowError",
        ),
    ],
)
def test_planning_refuses_what_forecasts_refuse(
    cartpole: Simulator, training: Transitions, change: Answer, expected: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # complex to float would warn and be planned on
        (run,) = _loop(cartpole, Wrapped(cartpole, training, change))
    assert run.failed
    assert expected in run.record["model_error"]["message"], run.record["model_error"]
    assert run.record["predicted_returns"] == []


def test_particles_that_agree_are_a_point_mass_not_an_error(
    cartpole: Simulator, training: Transitions
) -> None:
    def agreeing(prediction: Prediction, actions: np.ndarray) -> Prediction:
        return Prediction.from_samples(np.stack([prediction.mean, prediction.mean], axis=1))

    model = Wrapped(cartpole, training, agreeing)
    (run,) = _loop(cartpole, model)
    assert not run.failed, run.record["model_error"]
    assert all(f.status == "ok" for f in _forecasts(cartpole, model))


def test_a_nan_deviation_of_a_plan_never_chosen_is_not_looked_at(
    cartpole: Simulator, training: Transitions
) -> None:
    """A plan whose states are NaN is skipped (never chosen), its deviation with it; the
    run goes on with the other plans, as it did before deviations were read."""

    def diverging(prediction: Prediction, actions: np.ndarray) -> Prediction:
        mean, std = prediction.mean.copy(), prediction.std.copy()
        left = actions[:, 0] == 0
        mean[left], std[left] = np.nan, -1.0
        return Prediction(mean, std)

    (run,) = _loop(cartpole, Wrapped(cartpole, training, diverging))
    assert not run.failed, run.record["model_error"]
    assert set(run.episode.actions()) == {1}


# --- forecasts: masked values, object arrays, where the bad value is -----------------


def _masked(prediction: Prediction, actions: np.ndarray) -> Prediction:
    mask = np.zeros(prediction.mean.shape, dtype=bool)
    mask[:, 0, 0] = True
    return Prediction(np.ma.masked_array(prediction.mean, mask=mask), prediction.std)


def _object_with(value: Any) -> Answer:
    def answer(prediction: Prediction, actions: np.ndarray) -> Prediction:
        mean = prediction.mean.astype(object)
        mean[0, 0, 0] = value
        return Prediction(mean, prediction.std)

    return answer


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_masked, "mean is a masked array with 3 masked values; a masked value is no prediction"),
        (_object_with("0.5"), "mean is not numeric: its object array holds str values ('0.5')"),
        (_object_with(True), "mean is not numeric: its object array holds booleans (True)"),
        (_object_with(np.datetime64("2020")), "its object array holds datetime64 values"),
        (_object_with(datetime.date(2020, 1, 1)), "its object array holds date values"),
        (_object_with(1 + 0j), "its object array holds complex values"),
    ],
)
def test_forecasts_refuse_masked_values_and_non_numbers_in_object_arrays(
    cartpole: Simulator, training: Transitions, change: Answer, expected: str
) -> None:
    model = Wrapped(cartpole, training, change)
    forecasts = _forecasts(cartpole, model)
    # Before: "ok", with null (masked) or 0.5, 1.0 and 50.0 as predicted states.
    assert [f.status for f in forecasts] == ["model_error"] * 3
    assert forecasts[0].error is not None
    assert expected in forecasts[0].error["message"], forecasts[0].error
    episodes, plans = references(cartpole, range(50, 51), 8)
    one = capture_forecast(
        episodes[0],
        model,
        model_id=model.model_id,
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 4],
        planned_actions=plans[0],
    )
    assert one.status == "model_error"
    assert one.error is not None
    assert expected.replace("3 masked values", "1 masked value") in one.error["message"]
    (run,) = _loop(cartpole, model)
    assert run.failed


def test_a_partly_masked_forecast_no_longer_saves_a_record_that_cannot_be_loaded(
    cartpole: Simulator, training: Transitions
) -> None:
    (forecast,) = _forecasts(cartpole, Wrapped(cartpole, training, _masked), count=1)
    assert ForecastEvidence.from_dict(forecast.data).status == "model_error"


def test_an_object_array_of_real_numbers_is_still_read(
    cartpole: Simulator, training: Transitions
) -> None:
    def exact(prediction: Prediction, actions: np.ndarray) -> Prediction:
        mean = prediction.mean.astype(object)
        mean[0, 0, 0] = Fraction(1, 4)
        return Prediction(mean, prediction.std.astype(object))

    forecasts = _forecasts(cartpole, Wrapped(cartpole, training, exact))
    assert [f.status for f in forecasts] == ["ok"] * 3
    assert forecasts[0].data["response"]["states"][0][0] == 0.25


def test_a_refused_value_is_named_by_its_horizon_and_coordinate(
    pendulum: Simulator, pendulum_training: Transitions
) -> None:
    def one_bad(prediction: Prediction, actions: np.ndarray) -> Prediction:
        std = prediction.std.copy()
        std[:, 3, 1] = -0.25
        return Prediction(prediction.mean, std)

    (forecast,) = _forecasts(pendulum, Wrapped(pendulum, pendulum_training, one_bad), count=1)
    assert forecast.error == {
        "type": "ModelError",
        "message": "standard_deviation is -0.25 at horizon 4, coordinate 'theta_dot'; a "
        "standard deviation must be finite and positive: fix the model's uncertainty, or "
        "return no standard_deviation (None) if it has none",
    }


def test_a_request_callback_gets_the_same_words(cartpole: Simulator) -> None:
    episodes, plans = references(cartpole, range(50, 51), 8)

    def predict(request: dict[str, Any]) -> dict[str, Any]:
        states = [request["initial_state"]] * len(request["actions"])
        return {"states": states, "standard_deviation": [[0.1, 0.1, float("nan"), 0.1]] * 8}

    forecast = capture_forecast(
        episodes[0],
        predict,
        model_id="callback/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1],
        planned_actions=plans[0],
    )
    assert forecast.error is not None
    assert forecast.error["message"] == (
        "standard_deviation holds non-finite values: nan at horizon 1, coordinate "
        "'pole_angle' (8 such values); return finite floats"
    )


# --- raising, coroutines, generators -----------------------------------------------


def test_a_raising_predict_is_recorded_for_forecasts_and_runs(
    cartpole: Simulator, training: Transitions
) -> None:
    def raises(prediction: Prediction, actions: np.ndarray) -> Prediction:
        raise RuntimeError("checkpoint missing")

    model = Wrapped(cartpole, training, raises)
    forecast = _forecasts(cartpole, model, count=1)[0]
    assert forecast.status == "model_error"
    assert forecast.error is not None
    assert forecast.error["message"].startswith("the model raised RuntimeError: checkpoint")
    (run,) = _loop(cartpole, model)
    assert run.failed
    assert run.record["model_error"]["type"] == "builtins.RuntimeError"


class AsyncModel:
    model_id = "async/v1"

    def fit(self, transitions: Transitions) -> None:
        """Nothing to learn."""

    async def predict(
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> Prediction:
        return Prediction(np.repeat(initial_states[:, None], actions.shape[1], axis=1))

    def describe(self) -> dict[str, Any]:
        return {}


class YieldingModel(AsyncModel):
    model_id = "yielding/v1"

    def predict(  # type: ignore[override]
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> Any:
        yield Prediction(np.repeat(initial_states[:, None], actions.shape[1], axis=1))


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (AsyncModel(), "AsyncModel.predict is an async function (async def)"),
        (YieldingModel(), "YieldingModel.predict is a generator function (it yields)"),
    ],
)
def test_an_async_or_generator_predict_is_refused_before_anything_runs(
    cartpole: Simulator, model: Any, problem: str
) -> None:
    episodes, _ = references(cartpole, range(50, 51), 8)
    shared = {
        "model_id": model.model_id,
        "contract": cartpole.contract,
        "coordinates": cartpole.coordinates,
        "horizons": [1],
    }
    calls: list[Callable[[], Any]] = [
        lambda: capture_forecasts(episodes, model, **shared),
        lambda: capture_forecast(episodes[0], model, **shared),
        lambda: request_predictor(model),
        lambda: _loop(cartpole, model),
    ]
    for call in calls:
        with pytest.raises(
            InputError, match=r"\b" + problem.replace("(", r"\(").replace(")", r"\)")
        ):
            call()


def test_an_async_request_callback_is_refused(cartpole: Simulator) -> None:
    episodes, _ = references(cartpole, range(50, 51), 8)

    async def predict(request: dict[str, Any]) -> dict[str, Any]:
        return {"states": []}

    with pytest.raises(InputError, match=r"^predict is an async function .*asyncio\.run"):
        capture_forecast(
            episodes[0],
            predict,
            model_id="async/v1",
            contract=cartpole.contract,
            coordinates=cartpole.coordinates,
            horizons=[1],
        )


def test_a_coroutine_returned_anyway_says_so_and_is_never_left_unawaited(
    cartpole: Simulator, training: Transitions
) -> None:
    async def later(prediction: Prediction) -> Prediction:
        return prediction

    model = Wrapped(cartpole, training, lambda prediction, actions: later(prediction))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forecast = _forecasts(cartpole, model, count=1)[0]
        (run,) = _loop(cartpole, model)
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)], caught
    assert forecast.error is not None
    assert forecast.error["message"].startswith(
        "the model returned coroutine (predict is an async function"
    )
    assert run.record["model_error"]["message"].startswith("predict returned coroutine (")
    asyncio.run(asyncio.sleep(0))  # an event loop still works: nothing was left pending


# --- the command ---------------------------------------------------------------------

ASYNC_MODELS = """
import numpy as np
from onrecord.dynamics import Prediction


class Async:
    model_id = "async-cli/v1"

    def __init__(self, simulator):
        pass

    def fit(self, transitions):
        pass

    async def predict(self, initial_states, actions, *, uncertainty=True):
        return Prediction(np.repeat(initial_states[:, None], actions.shape[1], axis=1))

    def describe(self):
        return {}
"""


def test_worldmodel_run_refuses_an_async_model_before_writing(tmp_path: Path) -> None:
    (tmp_path / "async_models.py").write_text(ASYNC_MODELS)
    out = tmp_path / "run"
    done = onrecord(
        "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", out,
        "--model", "async_models:Async", pythonpath=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert (
        "--model async_models:Async returned Async for CartPole-v1, whose predict is an "
        "async function (async def)" in " ".join(done.stderr.split())
    )
    assert not out.exists()


NEGATIVE_MODELS = """
from onrecord.dynamics import BayesianLinearModel, Prediction


class NegativeStd:
    model_id = "negative-std/v1"

    def __init__(self, simulator):
        self.inner = BayesianLinearModel(simulator)

    def fit(self, transitions):
        self.inner.fit(transitions)

    def predict(self, initial_states, actions, *, uncertainty=True):
        prediction = self.inner.predict(initial_states, actions, uncertainty=True)
        return Prediction(prediction.mean, -prediction.std)

    def describe(self):
        return {"kind": "negative-std"}


def factory(simulator):
    return NegativeStd(simulator) if simulator.env_id == "CartPole-v1" else None
"""


@pytest.mark.slow
def test_worldmodel_run_gives_a_negative_deviation_model_no_closed_loop_score(
    tmp_path: Path,
) -> None:
    (tmp_path / "negative_models.py").write_text(NEGATIVE_MODELS)
    out = tmp_path / "run"
    done = onrecord(
        "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", out,
        "--model", "negative_models:factory", pythonpath=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    tables = json.loads((out / "tables.json").read_text())
    (row,) = [r for r in tables["closed_loop"] if r["model_id"] == "negative-std/v1"]
    assert row["failed_runs"] == row["seeds"] == 3, row
    why = done.stdout.split("why models failed", 1)[1]
    flat = " ".join(why.split())
    # Every forecast and run failed on its own value: one error, shown as an example.
    assert "negative-std/v1: 40 of 40 held-out forecasts failed, e.g.: standard_deviation is -" in (
        flat
    )
    assert "negative-std/v1: 3 of 3 closed-loop runs failed, e.g.: standard_deviation is -" in flat
    assert "with another error" not in flat


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_failure_lines_count_errors_that_differ_only_in_numbers_as_one(tmp_path: Path) -> None:
    messages = [
        "standard_deviation is -0.0123 at horizon 1, coordinate 'x1' (8 such values); fix it",
        "standard_deviation is -4.5e-05 at horizon 2, coordinate 'x1' (16 such values); fix it",
        "standard_deviation is nan at horizon 1, coordinate 'x1' (8 such values); fix it",
        "the model raised RuntimeError: out of memory",
    ]
    _write(
        tmp_path / "forecasts" / "heldout" / "m_v1.jsonl",
        [{"status": "model_error", "error": {"message": m}} for m in messages],
    )
    _write(
        tmp_path / "closed_loop" / "m_v1.jsonl",
        [{"model_error": {"message": "the model raised ValueError: bad"}}] * 2,
    )
    tables = {
        "heldout_metrics": {"m/v1": {"model_errors": 4, "forecasts": 4}},
        "closed_loop": [{"model_id": "m/v1", "failed_runs": 2, "seeds": 2}],
    }
    (forecasts, _), (runs, _) = failure_lines(tmp_path, tables)
    assert forecasts == (
        "m/v1: 4 of 4 held-out forecasts failed, e.g.: " + messages[0] + " (3 of them; 1 with "
        "another error)"
    )
    # Messages alike to the letter are not called an example.
    assert runs == "m/v1: 2 of 2 closed-loop runs failed: the model raised ValueError: bad"
