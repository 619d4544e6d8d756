"""forecast_case_result: named checks, tolerances, statuses, and acceptance policies."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.dynamics import Simulator, capture_forecasts
from onrecord.dynamics_metrics import forecast_case_result, forecast_report
from onrecord.errors import InputError
from onrecord.report import EvaluationReport

HORIZONS = [1, 4, 8, 16, 32]
TOLERANCES = {"pole_angle": {1: 0.001, "h4": 0.005, "*": 0.05}, "cart_velocity": 0.05}


def test_checks_are_named_per_coordinate_and_horizon(forecasts: dict[str, Any]) -> None:
    trial = forecast_case_result(forecasts["action"][0], TOLERANCES)
    assert [r.name for r in trial.results] == [
        f"dynamics/{c}/h{h}" for c in ("pole_angle", "cart_velocity") for h in HORIZONS
    ]
    assert trial.source["kind"] == "forecast"
    assert trial.source["episode"] == forecasts["action"][0].episode_digest
    assert trial.settings["tolerances"]["pole_angle"] == {
        "h1": 0.001,
        "h4": 0.005,
        "h8": 0.05,
        "h16": 0.05,
        "h32": 0.05,
    }


def test_statuses_follow_the_errors(forecasts: dict[str, Any]) -> None:
    blind = forecast_case_result(forecasts["blind"][0], TOLERANCES)
    action = forecast_case_result(forecasts["action"][0], TOLERANCES)
    assert blind.result("dynamics/cart_velocity/h1").status == "fail"  # type: ignore[union-attr]
    assert action.result("dynamics/cart_velocity/h1").status == "pass"  # type: ignore[union-attr]
    error = blind.result("dynamics/cart_velocity/h1").evidence["error"]  # type: ignore[union-attr]
    assert abs(error) > 0.05


def test_censored_horizons_are_not_measured(forecasts: dict[str, Any]) -> None:
    short = next(f for f in forecasts["action"] if f.observed_steps < 16)
    result = forecast_case_result(short, TOLERANCES).result("dynamics/pole_angle/h32")
    assert result.status == "not_measured"  # type: ignore[union-attr]
    assert result.reason == f"censored: the reference ended after {short.observed_steps} steps"  # type: ignore[union-attr]


def test_glob_policy_is_indeterminate_when_horizons_are_missing(forecasts: dict[str, Any]) -> None:
    report = forecast_report(forecasts["action"], TOLERANCES)
    full = AcceptancePolicy((CheckRequirement("dynamics/pole_angle/*"),))
    next_step = AcceptancePolicy((CheckRequirement("dynamics/pole_angle/h1"),))
    assert full.evaluate(report).decision == "indeterminate"
    assert next_step.evaluate(report).decision == "accept"
    blind = forecast_report(forecasts["blind"], TOLERANCES)
    # Next-step angle error cannot tell the action-blind model apart...
    assert next_step.evaluate(blind).decision == "accept"
    # ...its velocity forecasts can.
    velocity = AcceptancePolicy((CheckRequirement("dynamics/cart_velocity/h1"),))
    assert velocity.evaluate(blind).decision == "reject"


def test_model_and_simulator_errors_stay_apart(
    cartpole: Simulator, heldout: Any, forecasts: dict[str, Any]
) -> None:
    episodes, plans = heldout
    broken = capture_forecasts(
        episodes[:1],
        lambda i, a: {"mean": "x"},
        model_id="b",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=HORIZONS,
        planned_actions=plans[:1],
    )[0]
    trial = forecast_case_result(broken, TOLERANCES)
    assert {r.status for r in trial.results} == {"model_error"}
    assert forecast_case_result(broken, TOLERANCES).outcome == "incomplete"


def test_report_round_trips_and_stays_small(tmp_path: Any, forecasts: dict[str, Any]) -> None:
    report = forecast_report(forecasts["ensemble"], TOLERANCES)
    path = tmp_path / "r.json"
    report.save_json(path)
    assert EvaluationReport.load(path).digest == report.digest
    # Episodes are referenced by digest: the report is a few hundred bytes per check.
    assert path.stat().st_size < 400 * len(report.trials) * len(report.check_names)


@pytest.mark.parametrize(
    ("tolerances", "message"),
    [
        ({"pole": 0.1}, "unknown coordinate 'pole'"),
        ({"pole_angle": {7: 0.1, "*": 0.1}}, "horizons [7] that the forecast does not declare"),
        ({"pole_angle": {1: 0.1}}, "no value for horizon 4"),
        ({"pole_angle": math.inf}, "finite non-negative number"),
        ({"pole_angle": -1.0}, "finite non-negative number"),
        ({"pole_angle": True}, "finite non-negative number"),
        ({}, "non-empty mapping"),
    ],
)
def test_bad_tolerances_are_clear_errors(
    forecasts: dict[str, Any], tolerances: Any, message: str
) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        forecast_case_result(forecasts["action"][0], tolerances)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.text(), st.none(), st.integers(-5, 5)
    )
)
def test_any_tolerance_value_is_accepted_or_refused_cleanly(
    forecasts: dict[str, Any], value: Any
) -> None:
    valid = isinstance(value, int | float) and math.isfinite(value) and value >= 0
    if valid:
        trial = forecast_case_result(forecasts["action"][0], {"pole_angle": value})
        assert len(trial.results) == len(HORIZONS)
    else:
        with pytest.raises(InputError):
            forecast_case_result(forecasts["action"][0], {"pole_angle": value})


def test_simulator_errors_become_evaluator_errors() -> None:
    # A reference whose environment could not be made. (A state that does not fit the
    # declared coordinates is the caller's InputError since round 39, not the reference's.)
    from onrecord import EvalCase
    from onrecord.integrations.gymnasium import capture_episode

    def factory() -> Any:
        raise RuntimeError("no display")

    reference = capture_episode(
        factory,
        lambda env, observation, info: None,
        case=EvalCase("bad", case_id="bad"),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=lambda: {"state": [0.0, 0.0, 0.0]},
        seed=1,
        max_steps=2,
    )
    forecast = capture_forecasts(
        [reference],
        lambda i, a: {"mean": i},
        model_id="m",
        contract="c",
        coordinates={"a": "m", "b": "m", "c": "m"},
        horizons=[1],
    )[0]
    trial = forecast_case_result(forecast, {"a": 1.0})
    assert forecast.status == "simulator_error"
    assert trial.results[0].status == "evaluator_error"
    assert reference.digest[:12] in trial.results[0].reason


def test_every_verdict_is_the_absolute_error_against_its_tolerance(
    forecasts: dict[str, Any],
) -> None:
    # Each check's pass or fail, recomputed from the forecast's own means and the
    # simulator's states: |mean - truth| <= tolerance passes, anything above fails.
    columns = {"pole_angle": 2, "cart_velocity": 1}  # CartPole's observation order
    tolerance = {"pole_angle": {1: 0.001, 4: 0.005}, "cart_velocity": {}}
    seen = {"pass": 0, "fail": 0}
    for forecast in forecasts["action"] + forecasts["blind"]:
        trial = forecast_case_result(forecast, TOLERANCES)
        for name, column in columns.items():
            for h in HORIZONS:
                result = trial.result(f"dynamics/{name}/h{h}")
                assert result is not None
                if h > forecast.observed_steps:
                    assert result.status == "not_measured"
                    continue
                error = float(forecast.mean[h - 1, column] - forecast.truth[h - 1, column])
                limit = tolerance[name].get(h, 0.05)
                expected = "pass" if abs(error) <= limit else "fail"
                assert result.status == expected, (name, h, error, limit)
                assert result.evidence["error"] == pytest.approx(error, rel=1e-12, abs=1e-15)
                seen[expected] += 1
    # Both verdicts occur, so the comparison above is tested in both directions.
    assert seen["pass"] > 0
    assert seen["fail"] > 0


def test_an_error_equal_to_its_tolerance_passes_and_one_above_fails(
    forecasts: dict[str, Any],
) -> None:
    forecast = forecasts["blind"][0]
    error = abs(float(forecast.mean[0, 1] - forecast.truth[0, 1]))
    assert error > 0
    at = forecast_case_result(forecast, {"cart_velocity": error})
    below = forecast_case_result(forecast, {"cart_velocity": math.nextafter(error, 0.0)})
    assert at.result("dynamics/cart_velocity/h1").status == "pass"  # type: ignore[union-attr]
    assert below.result("dynamics/cart_velocity/h1").status == "fail"  # type: ignore[union-attr]
