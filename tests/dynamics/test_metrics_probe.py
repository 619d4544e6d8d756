"""Metrics against independent SciPy/NumPy computations, and their limits: tiny
deviations, half-turn angular errors, mixed uncertainty, gaps and odd arguments."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from scipy import stats

from onrecord import EvalCase
from onrecord._canonical import canonical_bytes
from onrecord.cli.main import main
from onrecord.dynamics import capture_forecasts
from onrecord.dynamics._angles import wrap_angles
from onrecord.dynamics_metrics import (
    aggregate_metrics,
    forecast_case_result,
    forecast_metrics,
    forecast_report,
)
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode
from tests.dynamics.test_capture import ACTIONS, COORDS, capture, persistence, seed_reference

SEEDS = range(8)


@pytest.fixture(scope="module")
def episodes() -> list[Any]:
    return [seed_reference(seed=s) for s in SEEDS]


def gaussian(episodes: list[Any], mean: np.ndarray, std: np.ndarray) -> list[Any]:
    return capture_forecasts(
        episodes,
        lambda states, actions: {
            "mean": states[:, None, :] + mean,
            "standard_deviation": std,
        },
        model_id="gauss/v1",
        contract="c/v1",
        coordinates=COORDS,
        horizons=[1, 2, 3, 4],
        planned_actions=[ACTIONS] * len(episodes),
    )


def test_aggregate_matches_scipy_on_random_forecasts(episodes: list[Any]) -> None:
    rng = np.random.default_rng(5)
    shape = (len(episodes), 4, 4)
    forecasts = gaussian(episodes, rng.normal(0, 0.1, shape), rng.uniform(0.01, 0.3, shape))
    agg = aggregate_metrics(forecasts)
    truth = np.stack([f.truth for f in forecasts])
    mean = np.stack([f.mean for f in forecasts])
    std = np.stack([f.std for f in forecasts])
    error = mean - truth
    np.testing.assert_allclose(agg.rmse, np.sqrt((error**2).mean(0)))
    np.testing.assert_allclose(agg.nll, -stats.norm.logpdf(truth, mean, std).mean(0))
    z = (truth - mean) / std
    crps = std * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))
    np.testing.assert_allclose(agg.crps, crps.mean(0))
    pit = stats.norm.cdf(truth, mean, std)
    for i in range(4):
        for j in range(4):
            counts = np.histogram(pit[:, i, j], bins=10, range=(0, 1))[0]
            assert agg.pit is not None
            assert agg.pit[i, j].tolist() == counts.tolist()
    single = forecast_metrics(forecasts[0])
    np.testing.assert_allclose(single.nll, -stats.norm.logpdf(truth[0], mean[0], std[0]))


def test_crps_tends_to_the_absolute_error_as_the_deviation_vanishes(
    episodes: list[Any],
) -> None:
    # 5e-324 makes error / std overflow; the score used to be std * inf = inf.
    shape = (2, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forecasts = gaussian(episodes[:2], np.full(shape, 0.5), np.full(shape, 5e-324))
        agg = aggregate_metrics(forecasts)
        single = forecast_metrics(forecasts[0])
    assert agg.crps is not None
    assert agg.nll is not None
    # The limit, computed here from the forecasts themselves: the mean absolute error.
    error = np.stack([f.mean - f.truth for f in forecasts])
    assert (np.abs(error) > 0).all()
    np.testing.assert_allclose(agg.crps, np.abs(error).mean(0), rtol=1e-12)
    np.testing.assert_allclose(agg.crps, agg.mae)
    assert np.isinf(agg.nll).all()
    assert np.isinf(single.nll).all()


def test_half_turn_errors_wrap_into_the_documented_range() -> None:
    errors = np.array([[np.pi, -np.pi, 3 * np.pi, 0.5, -3.0]])
    mask = np.ones(5, bool)
    wrapped = wrap_angles(errors.copy(), mask)
    assert wrapped[0, :3].tolist() == [np.pi] * 3  # (-pi, pi], never -pi
    np.testing.assert_allclose(wrapped[0, 3:], [0.5, -3.0])


def test_with_std_counts_the_forecasts_that_carried_deviations(episodes: list[Any]) -> None:
    with_std = gaussian(episodes[:2], np.zeros((2, 4, 4)), np.full((2, 4, 4), 0.1))
    point = capture(
        episodes[2], persistence, model_id="gauss/v1", contract="c/v1", horizons=[1, 2, 3, 4]
    )
    mixed = aggregate_metrics([*with_std, point])
    assert mixed.with_std == 2  # used to say 0
    assert mixed.crps is None  # uncertainty stats need every forecast to carry them
    assert aggregate_metrics(with_std).with_std == 2


def test_same_cohort_must_be_a_bool(episodes: list[Any]) -> None:
    forecast = capture(episodes[0], persistence)
    with pytest.raises(InputError, match="same_cohort"):
        aggregate_metrics([forecast], same_cohort="no")  # type: ignore[arg-type]


def _gappy_episode() -> Any:
    holder: dict[str, Any] = {}
    calls = {"n": 0}

    def factory() -> Any:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in ACTIONS:
            env.step(action)

    def observe() -> dict[str, Any]:
        calls["n"] += 1
        state = list(holder["env"].unwrapped.state)
        return {"state": None if calls["n"] == 3 else state}  # state after step 2 lost

    return capture_episode(
        factory,
        interact,
        case=EvalCase("gap", case_id="gap"),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=observe,
        seed=3,
        max_steps=len(ACTIONS),
    )


def test_same_cohort_leaves_out_forecasts_with_an_unobserved_horizon(
    episodes: list[Any],
) -> None:
    options = {"horizons": [1, 2, 3, 4]}
    gap = capture(_gappy_episode(), persistence, **options)
    full = capture(episodes[0], persistence, **options)
    assert gap.status == "ok"
    assert np.isnan(gap.truth[1]).all()
    agg = aggregate_metrics([gap, full], same_cohort=True)
    assert agg.cohort == 1
    assert agg.measured.tolist() == [[1] * 4] * 4  # one denominator at every horizon


def test_tolerances_accept_numpy_scalars(episodes: list[Any]) -> None:
    forecast = capture(episodes[0], persistence)
    trial = forecast_case_result(forecast, {"x": np.float32(0.5), "angle": np.int64(1)})
    assert trial.settings["tolerances"]["x"] == {"h1": pytest.approx(0.5), "h4": 0.5}


@pytest.mark.parametrize(
    ("per_horizon", "message"),
    [
        ({True: 0.1, 4: 0.1}, "does not declare"),
        ({4: 0.1, "h4": 5.0, "*": 1.0}, "more than once"),
        ({"h٤": 0.1, "*": 1.0}, "does not declare"),
    ],
)
def test_ambiguous_tolerance_keys_are_refused(
    episodes: list[Any], per_horizon: dict[Any, float], message: str
) -> None:
    forecast = capture(episodes[0], persistence)
    with pytest.raises(InputError, match=message):
        forecast_case_result(forecast, {"x": per_horizon})


def test_forecast_report_refuses_other_objects(episodes: list[Any]) -> None:
    forecast = capture(episodes[0], persistence)
    with pytest.raises(InputError, match="forecast_report takes ForecastEvidence"):
        forecast_report([forecast, {"digest": "x"}], {"x": 0.1})


@pytest.mark.parametrize("manifest", [{}, {"schema": "onrecord.manifest/v1", "files": [1]}])
def test_replay_of_a_malformed_manifest_is_an_error_exit(
    tmp_path: Path, manifest: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "manifest.json").write_bytes(canonical_bytes(manifest) + b"\n")
    assert main(["worldmodel", "analyze", "--replay", str(tmp_path)]) == 3
    assert "manifest" in capsys.readouterr().err
