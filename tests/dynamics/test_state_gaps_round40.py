"""Round 40: a reference state that is not observed names its step and cause; partial
tolerances are listed in the lock; an angle's printed interval holds the actual value
whenever it is ``covered``. Real Pendulum and CartPole references throughout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord._canonical import canonical_bytes, digest_bytes
from onrecord.dynamics import (
    ForecastEvidence,
    capture_forecast,
    capture_forecasts,
    capture_plan,
    get_simulator,
    load_forecasts,
    save_forecasts,
)
from onrecord.dynamics_metrics import forecast_case_result, forecast_metrics, forecast_report
from onrecord.errors import ConsistencyError, SchemaError
from onrecord.integrations.gymnasium import capture_episode

TORQUES = [[1.0]] * 6
PENDULUM = {"theta": "rad", "theta_dot": "rad/s"}


def pendulum_reference(glitch: str | None, at_read: int = 4) -> Any:
    """A real Pendulum episode whose observer misbehaves on its ``at_read``-th read
    (1 is after reset, so 4 is the state after action 3)."""
    holder: dict[str, Any] = {"reads": 0}

    def factory() -> Any:
        holder["env"] = gym.make("Pendulum-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for torque in TORQUES:
            env.step(np.asarray(torque, dtype=np.float32))
        return "plan sent"

    def observe() -> dict[str, Any]:
        holder["reads"] += 1
        state = [float(v) for v in holder["env"].unwrapped.state]
        if holder["reads"] == at_read:
            if glitch == "drops":
                return {"state": state[:1]}
            if glitch == "raises":
                raise RuntimeError("encoder glitch")
            if glitch == "reshaped":
                return {"theta": state[0], "theta_dot": state[1]}
        return {"state": state}

    return capture_episode(
        factory,
        interact,
        case=EvalCase("Swing", case_id=f"pendulum/{glitch}"),
        environment_id="Pendulum-v1",
        observer_id="internal-state/v1",
        observe=observe,
        seed=3,
        max_steps=len(TORQUES),
    )


def persistence(request: dict[str, Any]) -> dict[str, Any]:
    steps = len(request["actions"])
    states, deviations = [request["initial_state"]] * steps, [[1.0, 1.0]] * steps
    return {"states": states, "standard_deviation": deviations}


def forecast_of(
    reference: Any, horizons: list[int] | None = None, plan: list[list[float]] = TORQUES
) -> ForecastEvidence:
    """Persistence's forecast of a Pendulum ``reference`` that followed ``plan``."""
    return capture_forecast(
        reference,
        persistence,
        model_id="persistence/v1",
        contract="pendulum-state/v1",
        coordinates=PENDULUM,
        angular=("theta",),
        horizons=horizons or [1, 3, 6],
        planned_actions=plan,
    )


@pytest.mark.parametrize(
    ("glitch", "cause"),
    [
        ("drops", "the observer's 'state' holds 1 number, but 2 coordinates are declared"),
        ("reshaped", "the observer's output has no 'state' (its keys: ['theta', 'theta_dot'])"),
        ("raises", "the observer failed: RuntimeError: encoder glitch"),
    ],
)
def test_an_unobserved_state_names_its_step_and_cause(glitch: str, cause: str) -> None:
    forecast = forecast_of(pendulum_reference(glitch))
    assert forecast.status == "ok"
    if glitch == "raises":  # named with the observer's line (since round 51)
        with open(__file__, encoding="utf-8") as source:
            line = (
                source.read()
                .splitlines()
                .index('                raise RuntimeError("encoder glitch")')
            )
        cause += f" (at {__file__}:{line + 1} in observe)"
    assert forecast.unobserved == {3: cause}
    trial = forecast_case_result(forecast, {"theta": 10, "theta_dot": 100})
    results = {r.name: r for r in trial.results}
    for name in ("theta", "theta_dot"):
        assert results[f"dynamics/{name}/h3"].status == "not_measured"
        assert results[f"dynamics/{name}/h3"].reason == (
            f"the reference's state after action 3 was not observed: {cause}"
        )
        assert results[f"dynamics/{name}/h1"].status == "pass"
    printed = str(forecast_metrics(forecast))
    assert f"theta h3: not observed: {cause}" in printed
    assert forecast_metrics(forecast).unobserved == {3: cause}


def test_the_batched_capture_keeps_the_same_reasons() -> None:
    episodes = [pendulum_reference("drops"), pendulum_reference(None)]
    forecasts = capture_forecasts(
        episodes,
        lambda states, actions: {"mean": np.repeat(states[:, None], actions.shape[1], 1)},
        model_id="persistence/v1",
        contract="pendulum-state/v1",
        coordinates=PENDULUM,
        horizons=[1, 3, 6],
        planned_actions=[TORQUES, TORQUES],
    )
    assert forecasts[0].unobserved == {
        3: "the observer's 'state' holds 1 number, but 2 coordinates are declared"
    }
    assert forecasts[1].unobserved == {}


def test_reasons_survive_saving_and_are_checked_against_the_episode(tmp_path: Path) -> None:
    reference = pendulum_reference("drops")
    forecast = forecast_of(reference)
    path = save_forecasts(tmp_path / "f.jsonl", [forecast])
    (loaded,) = load_forecasts(path)
    assert loaded == forecast
    assert loaded.unobserved == forecast.unobserved
    loaded.verify_reference(reference)


def test_a_complete_reference_records_no_reasons() -> None:
    # Records of fully observed references are byte for byte what they were, so the
    # digests of forecasts already saved stay reproducible.
    forecast = forecast_of(pendulum_reference(None))
    assert set(forecast.data["reference"]) == {"states", "ended"}
    assert forecast.unobserved == {}


def _resealed(data: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in data.items() if k != "digest"}
    return {**body, "digest": digest_bytes(canonical_bytes(body))}


def test_a_record_saved_before_reasons_still_loads_and_scores() -> None:
    data = forecast_of(pendulum_reference("drops")).data
    del data["reference"]["unobserved"]
    legacy = ForecastEvidence.from_dict(_resealed(data))
    assert legacy.unobserved == {}
    trial = forecast_case_result(legacy, {"theta": 10})
    reason = {r.name: r.reason for r in trial.results}["dynamics/theta/h3"]
    assert reason == "the actual state was not observed"


def test_reasons_that_do_not_match_the_missing_states_are_refused() -> None:
    data = forecast_of(pendulum_reference("drops")).data
    data["reference"]["unobserved"][0]["step"] = 2
    with pytest.raises(SchemaError, match=r"reference.unobserved .*steps \[3\]"):
        ForecastEvidence.from_dict(_resealed(data))


def test_partial_tolerances_list_the_unchecked_coordinates_in_the_lock() -> None:
    forecast = forecast_of(pendulum_reference(None))
    partial = forecast_case_result(forecast, {"theta": 1})
    assert {r.name for r in partial.results} == {
        "dynamics/theta/h1",
        "dynamics/theta/h3",
        "dynamics/theta/h6",
    }
    assert partial.settings["unchecked_coordinates"] == ["theta_dot"]
    report = forecast_report([forecast], {"theta": 1})
    (environment,) = report.lock["environments"]
    assert environment["unchecked_coordinates"] == ["theta_dot"]
    full = forecast_case_result(forecast, {"theta": 1, "theta_dot": 1})
    assert "unchecked_coordinates" not in full.settings


def test_an_angles_interval_holds_the_actual_value_when_covered() -> None:
    pendulum = get_simulator("Pendulum-v1")
    plan = [np.array([2.0], dtype=np.float32)] * 5
    # Spinning: the environment's theta grows past pi unwrapped (4.9 rad at step 5).
    reference = capture_plan(pendulum, plan, case_id="spin", seed=0, start_state=[3.0, 8.0])
    observed = [t["state"]["state"] for t in reference.transitions()]

    def wrapping_model(request: dict[str, Any]) -> dict[str, Any]:
        states = [[(s[0] + np.pi) % (2 * np.pi) - np.pi + 0.01, s[1]] for s in observed]
        return {"states": states, "standard_deviation": [[0.1, 0.1]] * len(states)}

    forecast = capture_forecast(
        reference,
        wrapping_model,
        model_id="wraps/v1",
        contract=pendulum.contract,
        coordinates=pendulum.coordinates,
        horizons=[1, 5],
        planned_actions=plan,
    )
    cell = forecast_metrics(forecast).to_dict()["coordinates"]["theta"]["horizons"]["h5"]
    actual = observed[4][0]
    assert actual > np.pi
    for interval in cell["intervals"].values():
        assert interval["covered"] is True
        assert interval["lower"] <= actual <= interval["upper"]
    assert cell["error"] == pytest.approx(0.01)


def test_a_plain_coordinates_interval_is_still_around_the_models_mean() -> None:
    forecast = forecast_of(pendulum_reference(None))
    metrics = forecast_metrics(forecast)
    assert metrics.lower is not None
    assert metrics.upper is not None
    mean = forecast.mean[[0, 2, 5], 1]
    assert np.array_equal((metrics.lower[2, :, 1] + metrics.upper[2, :, 1]) / 2, mean)


def test_reasons_edited_after_capture_fail_verify_reference() -> None:
    reference = pendulum_reference("drops")
    data = forecast_of(reference).data
    data["reference"]["unobserved"][0]["reason"] = "the sensor was unplugged"
    edited = ForecastEvidence.from_dict(_resealed(data))
    with pytest.raises(ConsistencyError, match=r"\(or why some were not observed\) differ"):
        edited.verify_reference(reference)
