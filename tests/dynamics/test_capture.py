"""capture_forecast: the seed example, request detachment, scopes, and every failure kind."""

from __future__ import annotations

import math
import pickle
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord.dynamics import ForecastEvidence, capture_forecast, load_forecasts, save_forecasts
from onrecord.dynamics_metrics import forecast_metrics
from onrecord.errors import ConsistencyError, DigestMismatch, InputError, SchemaError
from onrecord.integrations.gymnasium import capture_episode

ACTIONS = [0, 1, 0, 1]
COORDS = {"x": "m", "velocity": "m/s", "angle": "rad", "angular_velocity": "rad/s"}


def seed_reference(
    actions: list[int] = ACTIONS,
    seed: int = 7,
    max_steps: int | None = None,
    factory_error: bool = False,
) -> Any:
    holder: dict[str, Any] = {}

    def factory() -> Any:
        if factory_error:
            raise RuntimeError("simulator licence expired")
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break

    return capture_episode(
        factory,
        interact,
        case=EvalCase(
            "Predict these CartPole actions", case_id=f"cartpole:{seed}", source_id=f"seed:{seed}"
        ),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=lambda: {"state": list(holder["env"].unwrapped.state)},
        seed=seed,
        max_steps=max_steps or len(actions),
    )


def persistence(request: dict[str, Any]) -> dict[str, Any]:
    return {"states": [list(request["initial_state"]) for _ in request["actions"]]}


def capture(reference: Any, predict: Any, **kwargs: Any) -> ForecastEvidence:
    options: dict[str, Any] = {
        "model_id": "m/v1",
        "contract": "cartpole-vector/v1",
        "coordinates": COORDS,
        "horizons": [1, 4],
        "planned_actions": ACTIONS,
    }
    options.update(kwargs)
    return capture_forecast(reference, predict, **options)


@pytest.fixture(scope="module")
def reference() -> Any:
    return seed_reference()


def test_seed_example_runs_and_scores(reference: Any) -> None:
    forecast = capture(reference, persistence, model_id="persistence/v1")
    metrics = forecast_metrics(forecast)
    truth = np.array([t["state"]["state"] for t in reference.transitions()])
    initial = np.array(reference.initial["state"]["state"])
    assert forecast.status == "ok"
    assert forecast.action_scope == "planned"
    np.testing.assert_array_equal(metrics.error, initial - truth[[0, 3]])
    assert "velocity h1: error" in str(metrics)


def test_model_sees_only_a_detached_request(reference: Any) -> None:
    seen: list[dict[str, Any]] = []

    def spy(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return persistence(request)

    capture(reference, spy)
    assert set(seen[0]) == {"initial_state", "actions"}
    assert seen[0]["actions"] == ACTIONS
    assert seen[0]["initial_state"] == reference.initial["state"]["state"]


def test_a_model_editing_its_own_request_is_scored_and_the_record_keeps_the_original(
    reference: Any,
) -> None:
    def editing(request: dict[str, Any]) -> dict[str, Any]:
        answer = persistence(request)
        request["actions"].append(1)
        request["initial_state"][0] += 100.0
        del request["actions"][0]
        return answer

    forecast = capture(reference, editing)
    untouched = capture(reference, persistence)
    assert forecast.status == "ok", forecast.error
    assert forecast.data["request"] == untouched.data["request"]
    assert forecast.data["request"]["actions"] == ACTIONS
    assert forecast.data["response"] == untouched.data["response"]
    np.testing.assert_array_equal(
        forecast_metrics(forecast).error, forecast_metrics(untouched).error
    )


def test_omitted_plan_records_observed_prefix(reference: Any) -> None:
    forecast = capture(reference, persistence, planned_actions=None)
    assert forecast.action_scope == "observed_prefix"


def test_plan_that_differs_from_execution_is_refused(reference: Any) -> None:
    with pytest.raises(InputError, match="differ from the executed actions at step 1"):
        capture(reference, persistence, planned_actions=[0, 0, 0, 1])


def test_horizon_beyond_the_plan_is_refused(reference: Any) -> None:
    with pytest.raises(InputError, match="horizon 8 exceeds the 4 planned actions"):
        capture(reference, persistence, horizons=[1, 8])


def test_terminated_reference_censors_later_horizons() -> None:
    plan = [1] * 40  # always push right: the pole falls within a few dozen steps
    reference = seed_reference(plan, seed=3, max_steps=40)
    forecast = capture(reference, persistence, planned_actions=plan, horizons=[1, 8, 40])
    metrics = forecast_metrics(forecast)
    assert reference.ended == "terminated"
    assert forecast.observed_steps < 40
    assert metrics.censored.tolist() == [False, False, True]
    assert np.isnan(metrics.error[2]).all()
    assert not metrics.measured[2].any()


def test_simulator_failure_means_the_model_is_never_called() -> None:
    calls: list[Any] = []
    reference = seed_reference(factory_error=True)
    forecast = capture(reference, lambda r: calls.append(r), planned_actions=None)
    assert forecast.status == "simulator_error"
    assert calls == []
    assert "licence expired" in forecast.error["message"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"states": [[0.0] * 4] * 3}, "shape [3, 4]"),
        ({"states": [[0.0] * 3] * 4}, "shape [4, 3]"),
        ({"states": [[math.nan] * 4] * 4}, "non-finite"),
        ({"states": [[0.0] * 4] * 4, "standard_deviation": [[0.0] * 4] * 4}, "positive"),
        ({"states": [[0.0] * 4] * 4, "standard_deviation": [[-1.0] * 4] * 4}, "positive"),
        ({"states": [[0.0] * 4] * 4, "confidence": 1}, "unknown fields ['confidence']"),
        ({"states": [[0.0] * 4] * 4, "metadata": {"f": object()}}, "metadata is not portable"),
        ([[0.0] * 4] * 4, "not a mapping"),
        ({"states": "fast"}, "not numeric"),
    ],
)
def test_malformed_answers_are_model_errors(reference: Any, answer: Any, message: str) -> None:
    forecast = capture(reference, lambda request: answer)
    assert forecast.status == "model_error"
    assert message in forecast.error["message"]  # type: ignore[index]
    assert forecast_metrics(forecast).measured.sum() == 0


def test_a_raising_model_is_a_model_error(reference: Any) -> None:
    def broken(request: dict[str, Any]) -> Any:
        raise ZeroDivisionError("checkpoint missing")

    forecast = capture(reference, broken)
    # Named with the line of the model that raised it (since round 51).
    with open(__file__, encoding="utf-8") as source:
        lines = source.read().splitlines()
    line = lines.index('        raise ZeroDivisionError("checkpoint missing")') + 1
    assert forecast.error == {
        "type": "ModelError",
        "message": "the model raised ZeroDivisionError: checkpoint missing"
        f" (at {__file__}:{line} in broken)",
    }


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20),
    std=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)
def test_arbitrary_answers_never_crash_and_never_score_garbage(
    reference: Any, values: list[float], std: float | None
) -> None:
    answer: dict[str, Any] = {"states": values}
    if std is not None:
        answer["standard_deviation"] = [[std] * 4] * 4
    forecast = capture(reference, lambda request: answer)
    # A flat list can never be four vectors of four numbers.
    assert forecast.status == "model_error"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    states=st.lists(st.lists(st.floats(-1e6, 1e6), min_size=4, max_size=4), min_size=4, max_size=4),
    std=st.floats(1e-6, 1e3),
)
def test_round_trip_keeps_the_digest(
    reference: Any, tmp_path_factory: Any, states: list[list[float]], std: float
) -> None:
    answer = {
        "states": states,
        "standard_deviation": [[std] * 4] * 4,
        "metadata": {"method": "hypothesis"},
    }
    forecast = capture(reference, lambda request: answer)
    assert forecast.status == "ok"
    path = tmp_path_factory.mktemp("rt") / "f.json"
    forecast.save_json(path)
    loaded = ForecastEvidence.load(path)
    assert loaded.digest == forecast.digest
    assert loaded.data == forecast.data
    assert ForecastEvidence.from_dict(forecast.data) == forecast
    np.testing.assert_array_equal(loaded.mean, np.array(states))


def test_tampering_is_detected(reference: Any, tmp_path: Any) -> None:
    forecast = capture(reference, persistence)
    data = forecast.data
    data["response"]["states"][0][0] += 1.0
    with pytest.raises(DigestMismatch, match="changed after capture"):
        ForecastEvidence.from_dict(data)
    with pytest.raises(SchemaError, match=re.escape("expected 'onrecord.forecast/v1'")):
        ForecastEvidence.from_dict({**forecast.data, "schema": "x"})
    path = tmp_path / "f.jsonl"
    save_forecasts(path, [forecast, forecast])
    assert [f.digest for f in load_forecasts(path)] == [forecast.digest] * 2
    path.write_bytes(path.read_bytes().replace(b'"model_id":"m/v1"', b'"model_id":"m/v2"'))
    with pytest.raises(DigestMismatch):
        load_forecasts(path)


def test_forecast_references_its_episode_by_digest(reference: Any) -> None:
    forecast = capture(reference, persistence)
    assert forecast.episode_digest == reference.digest
    assert "steps" not in forecast.data["reference"]  # never an embedded episode copy
    forecast.verify_reference(reference)
    with pytest.raises(ConsistencyError, match="references episode"):
        forecast.verify_reference(seed_reference(seed=8))


def test_forecast_evidence_is_immutable(reference: Any) -> None:
    forecast = capture(reference, persistence)
    with pytest.raises(AttributeError):
        forecast.status = "ok"  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        forecast.mean[0, 0] = 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"coordinates": {}}, "coordinates need at least one entry"),
        ({"coordinates": ["x"]}, "coordinates must map"),
        ({"horizons": [0]}, "distinct positive ints"),
        ({"horizons": [1, 1]}, "distinct positive ints"),
        ({"horizons": [1.5]}, "distinct positive ints"),
        ({"model_id": ""}, "model_id must be a non-empty string"),
        ({"angular": ["theta"]}, "angular names unknown coordinates ['theta']"),
    ],
)
def test_bad_capture_arguments_are_clear_errors(
    reference: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        capture(reference, persistence, **kwargs)


def test_forecast_pickles_as_its_bytes_and_is_verified_on_arrival(reference: Any) -> None:
    forecast = capture(reference, persistence)
    copy = pickle.loads(pickle.dumps(forecast))
    assert copy.digest == forecast.digest
    assert copy.to_bytes() == forecast.to_bytes()
    pickled = pickle.dumps(forecast).replace(b'"model_id":"m/v1"', b'"model_id":"m/v2"')
    with pytest.raises(DigestMismatch):
        pickle.loads(pickled)
