"""A researcher's walkthrough on Pendulum and Acrobot: angles that wrap at +-pi.

An angle's error is wrapped, so pi - 0.01 against -pi + 0.01 is 0.02 off. These tests
check that the same holds where angles are *combined* before the error is taken: the
difference of two effects (matched pairs) and the particles of a sampling model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    OracleModel,
    Prediction,
    capture_forecast,
    capture_forecasts,
    capture_pairs,
    capture_plan,
    effect_table,
    get_simulator,
    request_predictor,
)
from onrecord.dynamics_metrics import forecast_metrics

# Particles 0.01 and 0.02 either side of the true state: a tight, honest cloud.
OFFSETS = np.array([-0.02, -0.01, 0.01, 0.02])


def _wrap(values: np.ndarray) -> np.ndarray:
    return (values + np.pi) % (2 * np.pi) - np.pi


def test_effect_error_of_an_angle_wraps_like_any_angular_error() -> None:
    pendulum = get_simulator("Pendulum-v1")
    # The variant starts almost half a turn away, so the real effect on theta is near pi.
    [pair] = capture_pairs(
        pendulum, [[0.0, 0.0]], kind="offset", length=3, seed=3, offset=[np.pi - 0.01, 0.0]
    )
    exact = request_predictor(OracleModel(pendulum))

    def off_by_002(request: dict[str, Any]) -> dict[str, Any]:
        states = np.array(exact(request)["states"])
        states[:, 0] += 0.02  # the variant's theta 0.02 rad too far: effect off by 0.02
        return {"states": states.tolist()}

    spec: dict[str, Any] = {
        "model_id": "off-by-0.02/v1",
        "contract": pendulum.contract,
        "coordinates": pendulum.coordinates,
        "horizons": [1, 2],
    }
    base = capture_forecast(pair.base, exact, planned_actions=pair.base_plan, **spec)
    variant = capture_forecast(pair.variant, off_by_002, planned_actions=pair.variant_plan, **spec)
    real = np.array(variant.truth)[:2, 0] - np.array(base.truth)[:2, 0]
    assert (np.abs(real) > np.pi - 0.02).all()  # the predicted effect crosses +-pi

    table = effect_table([base], [variant])

    assert forecast_metrics(variant).error[:, 0] == pytest.approx([0.02, 0.02])
    assert table.effect_error[:, 0] == pytest.approx([0.02, 0.02])  # not 2*pi - 0.02
    assert table.effect_error[:, 1] == pytest.approx([0.0, 0.0])


def _acrobot_near_pi() -> tuple[Any, Any, list[int]]:
    acrobot = get_simulator("Acrobot-v1")
    plan = [0, 0, 0]
    # theta1 just below pi (theta2 folds the arm back down, so it does not terminate):
    # after one step theta1 has wrapped to about -pi + 0.005.
    episode = capture_plan(
        acrobot, plan, case_id="near-pi", seed=0, start_state=[np.pi - 0.001, np.pi - 0.001, 0, 0]
    )
    return acrobot, episode, plan


def _wrapped_particles(oracle: OracleModel, initial: Any, actions: Any) -> np.ndarray:
    """A cloud around the true states whose angles are wrapped as Acrobot wraps them."""
    samples = oracle.predict(initial, actions).mean[:, None] + OFFSETS[None, :, None, None]
    samples[..., :2] = _wrap(samples[..., :2])
    # The branch these tests are about: at some step theta1's particles lie on both
    # sides of +-pi (a spread over a half turn as numbers, 0.04 rad as angles).
    assert (np.ptp(samples[..., 0], axis=1) > np.pi).any(), "no particles straddle +-pi"
    return samples


def test_angle_particles_that_straddle_pi_are_summarized_as_angles() -> None:
    acrobot, episode, plan = _acrobot_near_pi()
    oracle = OracleModel(acrobot)

    def particles(initial: Any, actions: Any) -> dict[str, Any]:
        return {"samples": _wrapped_particles(oracle, initial, actions)}

    [forecast] = capture_forecasts(
        [episode],
        particles,
        model_id="wrapped-particles/v1",
        contract=acrobot.contract,
        coordinates=acrobot.coordinates,
        horizons=[1, 2, 3],
        planned_actions=[plan],
    )
    metrics = forecast_metrics(forecast)
    spread = OFFSETS.std(ddof=1)  # 0.0183: what the cloud's deviation is

    assert metrics.status == "ok"
    assert np.abs(metrics.error[:, :2]).max() < 1e-9  # not pi, the plain mean's error
    assert metrics.std[:, :2] == pytest.approx(np.full((3, 2), spread))  # not ~3.6


class _WrappingEnsemble:
    """A WorldModel returning Prediction.from_samples of angle-wrapped particles."""

    model_id = "wrapping-ensemble/v1"

    def __init__(self, oracle: OracleModel) -> None:
        self.oracle = oracle

    def fit(self, transitions: Any) -> None:
        del transitions

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Prediction:
        return Prediction.from_samples(_wrapped_particles(self.oracle, initial_states, actions))

    def describe(self) -> dict[str, Any]:
        return {"kind": "wrapping-ensemble"}


@pytest.mark.parametrize("batched", [True, False])
def test_a_models_prediction_from_samples_is_summarized_as_angles(batched: bool) -> None:
    acrobot, episode, plan = _acrobot_near_pi()
    model = _WrappingEnsemble(OracleModel(acrobot))
    spec: dict[str, Any] = {
        "model_id": model.model_id,
        "contract": acrobot.contract,
        "coordinates": acrobot.coordinates,
        "horizons": [1, 3],
    }
    if batched:
        [forecast] = capture_forecasts([episode], model, planned_actions=[plan], **spec)
    else:
        forecast = capture_forecast(episode, model, planned_actions=plan, **spec)
    metrics = forecast_metrics(forecast)

    assert np.abs(metrics.error[:, :2]).max() < 1e-9
    assert metrics.std[:, :2] == pytest.approx(np.full((2, 2), OFFSETS.std(ddof=1)))


_WIDE = np.array([1.9, -1.9, 0.5, -0.5, 0.0])


@pytest.mark.parametrize(
    "cloud",
    [
        # angles near 0: nothing wraps
        np.random.default_rng(0).normal(0.0, 0.3, size=(1, 5, 3, 4)),
        # spread over more than half a turn but not reaching +-pi: turned relative to its
        # first particle (1.9 rad), the one at -1.9 was moved a whole turn, to 4.38, and
        # the mean of a cloud centred on 0 read about 1.5
        np.broadcast_to(_WIDE[None, :, None, None], (1, 5, 3, 4)).copy(),
    ],
    ids=["tight", "wide"],
)
def test_particles_that_need_no_turn_keep_their_plain_mean_exactly(cloud: np.ndarray) -> None:
    acrobot, episode, plan = _acrobot_near_pi()

    [forecast] = capture_forecasts(
        [episode],
        lambda initial, actions: {"samples": cloud},
        model_id="cloud/v1",
        contract=acrobot.contract,
        coordinates=acrobot.coordinates,
        horizons=[1, 2, 3],
        planned_actions=[plan],
    )

    assert np.array_equal(np.array(forecast.mean), cloud.mean(axis=1)[0])
    assert np.array_equal(np.array(forecast.std), cloud.std(axis=1, ddof=1)[0])
