"""forecast_metrics and aggregate_metrics against independent computations."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from scipy import integrate, stats

from onrecord.dynamics import Simulator, capture_forecasts, get_simulator
from onrecord.dynamics._references import capture_plan
from onrecord.dynamics_metrics import LEVELS, aggregate_metrics, forecast_metrics
from onrecord.errors import InputError


def test_per_forecast_numbers_match_a_direct_computation(forecasts: dict[str, Any]) -> None:
    forecast = forecasts["action"][0]
    metrics = forecast_metrics(forecast)
    rows = [h - 1 for h in forecast.horizons if h <= forecast.observed_steps]
    error = forecast.mean[rows] - forecast.truth[rows]
    std = forecast.std[rows]  # type: ignore[index]
    np.testing.assert_array_equal(metrics.error[: len(rows)], error)
    z90 = NormalDist().inv_cdf(0.95)
    np.testing.assert_allclose(
        metrics.upper[2, : len(rows)],  # type: ignore[index]
        forecast.mean[rows] + z90 * std,
    )
    expected_nll = -stats.norm.logpdf(forecast.truth[rows], forecast.mean[rows], std)
    np.testing.assert_allclose(metrics.nll[: len(rows)], expected_nll)  # type: ignore[index]
    cell = metrics.to_dict()["coordinates"]["pole_angle"]["horizons"]["h1"]
    assert cell["intervals"]["90"]["covered"] == bool(abs(error[0, 2]) <= z90 * std[0, 2])


def test_censored_horizons_are_never_filled(forecasts: dict[str, Any]) -> None:
    short = [f for f in forecasts["action"] if f.observed_steps < 32]
    assert short, "random 32-step plans should end some references early"
    metrics = forecast_metrics(short[0])
    assert metrics.censored[-1]
    assert np.isnan(metrics.error[-1]).all()
    assert metrics.to_dict()["coordinates"]["cart_position"]["horizons"]["h32"] == {
        "censored": True,
        "measured": False,
    }


def test_aggregate_matches_numpy_and_counts_denominators(forecasts: dict[str, Any]) -> None:
    items = forecasts["action"]
    table = aggregate_metrics(items)
    errors = [forecast_metrics(f).error[:, 1] for f in items]  # cart_velocity
    for i, h in enumerate((1, 4, 8, 16, 32)):
        values = np.array([e[i] for e in errors if not np.isnan(e[i])])
        assert table.measured[i, 1] == len(values)
        assert table.censored[i] == sum(f.observed_steps < h for f in items)
        np.testing.assert_allclose(table.mae[i, 1], np.abs(values).mean())
        np.testing.assert_allclose(table.rmse[i, 1], np.sqrt((values**2).mean()))
    assert table.censored[-1] > 0
    assert table.cohort == len(items)
    cohort = aggregate_metrics(items, same_cohort=True)
    assert cohort.cohort == sum(f.observed_steps >= 32 for f in items)
    assert (cohort.measured == cohort.cohort).all()


def test_crps_closed_form_matches_numerical_integration(forecasts: dict[str, Any]) -> None:
    forecast = forecasts["blind"][0]
    table = aggregate_metrics([forecast])
    mean, sd, actual = forecast.mean[0, 1], forecast.std[0, 1], forecast.truth[0, 1]  # type: ignore[index]

    def integrand(x: float) -> float:
        return float((stats.norm.cdf(x, mean, sd) - (x >= actual)) ** 2)

    numeric = sum(
        integrate.quad(integrand, a, b, limit=200)[0]
        for a, b in ((mean - 12 * sd, actual), (actual, mean + 12 * sd))
    )
    np.testing.assert_allclose(table.crps[0, 1], numeric, rtol=1e-6)  # type: ignore[index]


def test_coverage_is_reported_beside_width(forecasts: dict[str, Any]) -> None:
    action, blind = aggregate_metrics(forecasts["action"]), aggregate_metrics(forecasts["blind"])
    velocity_h1 = (slice(None), 0, 1)
    # The action-blind model's errors are two-valued (about ±0.195 m/s), so its 90%
    # interval covers everything while its 50% interval covers nothing: the PIT and the
    # calibration error show what a single coverage number hides.
    assert blind.coverage[2, 0, 1] >= 0.9
    assert blind.coverage[0, 0, 1] < 0.2
    assert blind.calibration_error[0, 1] > 0.1  # type: ignore[index]
    # The blind model's intervals only cover because they are hundreds of times wider.
    assert (blind.width[velocity_h1] > 100 * action.width[velocity_h1]).all()  # type: ignore[index]
    assert len(LEVELS) == action.coverage.shape[0]  # type: ignore[union-attr]
    assert action.pit.sum(axis=2)[0, 0] == action.measured[0, 0]  # type: ignore[union-attr]
    assert 0 <= action.calibration_error[0, 1] <= 1  # type: ignore[index]


def test_point_forecasts_have_no_uncertainty_numbers(forecasts: dict[str, Any]) -> None:
    table = aggregate_metrics(forecasts["persistence"])
    assert table.coverage is None
    assert table.crps is None
    assert table.with_std == 0
    row = table.rows()[0]
    assert row["coverage_90"] is None
    assert row["nll"] is None
    np.testing.assert_allclose(table.skill, 0.0)  # persistence against itself


def test_units_are_never_pooled(forecasts: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="unlike units are never pooled"):
        aggregate_metrics([forecasts["action"][0], forecasts["blind"][0]])


def test_angular_errors_wrap() -> None:
    pendulum = get_simulator("Pendulum-v1")
    reference = capture_plan(
        pendulum, [[2.0]] * 3, case_id="p", seed=1, start_state=[np.pi - 0.01, 0.0]
    )

    def across_the_cut(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        mean = np.repeat(initial[:, None], actions.shape[1], axis=1)
        mean[..., 0] -= 2 * np.pi  # the same angle, one turn away
        return {"mean": mean}

    forecast = capture_forecasts(
        [reference],
        across_the_cut,
        model_id="w",
        contract=pendulum.contract,
        coordinates=pendulum.coordinates,
        horizons=[1],
    )[0]
    error = forecast_metrics(forecast).error[0, 0]
    raw = forecast.mean[0, 0] - forecast.truth[0, 0]
    assert abs(raw) > 6
    assert abs(error) < 0.1


def test_model_errors_are_counted_not_scored(cartpole: Simulator, heldout: Any) -> None:
    episodes, plans = heldout
    broken = capture_forecasts(
        episodes[:3],
        lambda i, a: 1 / 0,
        model_id="b",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1],
        planned_actions=plans[:3],
    )
    table = aggregate_metrics(broken)
    assert (table.model_errors, table.cohort) == (3, 0)
    assert np.isnan(table.mae).all()


def test_the_density_is_the_formula_to_the_last_bit(forecasts: dict[str, Any]) -> None:
    # forecast_metrics computes it in place (fewer arrays); (0.5 z) z in that order,
    # as written, so a huge z overflows where the formula does and nowhere else.
    for forecast in forecasts["action"]:
        metrics = forecast_metrics(forecast)
        rows = [h - 1 for h in forecast.horizons if h <= forecast.observed_steps]
        std = forecast.std[rows]  # type: ignore[index]
        z = (forecast.mean[rows] - forecast.truth[rows]) / std
        formula = 0.5 * math.log(2 * math.pi) + np.log(std) + 0.5 * z * z
        assert np.array_equal(metrics.nll[: len(rows)], formula)  # type: ignore[index]
