"""Round 38 probe of world-model evaluation on environments the docs do not use.

Numbers are checked against independent NumPy computations written here, never
against the library's own helpers.
"""

from __future__ import annotations

import numpy as np
import pytest

from onrecord.dynamics import (
    OracleModel,
    PersistenceModel,
    Prediction,
    RandomModel,
    Transitions,
    capture_forecasts,
    capture_plan,
    get_simulator,
)
from onrecord.dynamics_metrics import forecast_metrics, forecast_report
from onrecord.errors import InputError


def _wrapped(values: np.ndarray) -> np.ndarray:
    return np.arctan2(np.sin(values), np.cos(values))


def test_random_model_spread_of_acrobot_angles_is_wrapped() -> None:
    # A resonant bang-bang plan swings Acrobot's second link through ±pi, where the
    # environment wraps the angle: the change across the seam is small, not ~2*pi.
    acrobot = get_simulator("Acrobot-v1")
    episode = capture_plan(acrobot, ([2] * 10 + [0] * 10) * 20, case_id="swing", seed=0)
    states = [episode.initial["state"]["state"]]
    states += [step["state"]["state"] for step in episode.transitions()]
    raw = np.diff(np.array(states), axis=0)
    assert np.abs(raw[:, 1]).max() > 5  # the plan does cross the seam
    expected = raw.copy()
    expected[:, :2] = _wrapped(raw[:, :2])

    model = RandomModel(acrobot)
    model.fit(Transitions.from_episodes([episode]))
    scale = np.array(model.describe()["scale"])
    np.testing.assert_allclose(scale, expected.std(axis=0), rtol=1e-12)
    assert scale[1] < 0.6 * raw[:, 1].std()


def test_forecast_report_refuses_forecasts_of_two_models() -> None:
    # Pooled, the persistence model's forecasts became "repeats" of the oracle's trials
    # and one policy decided on the mixture.
    cartpole = get_simulator("CartPole-v1")
    plans = [[0, 1, 0, 1, 0, 1, 0, 1]] * 2
    episodes = [
        capture_plan(cartpole, plan, case_id=f"cp-{n}", seed=n) for n, plan in enumerate(plans)
    ]
    common = {
        "contract": cartpole.contract,
        "coordinates": cartpole.coordinates,
        "horizons": [1, 4],
        "planned_actions": plans,
    }
    oracle = capture_forecasts(episodes, OracleModel(cartpole), model_id="oracle/v1", **common)
    still = capture_forecasts(
        episodes, PersistenceModel(cartpole), model_id="persistence/v1", **common
    )
    assert len(forecast_report(oracle, {"pole_angle": 0.01}).trials) == 2
    with pytest.raises(InputError, match=r"'persistence/v1'.*'oracle/v1'.*one forecast_report"):
        forecast_report(oracle + still, {"pole_angle": 0.01})


@pytest.mark.parametrize("form", ["mapping", "prediction"])
def test_particles_that_agree_exactly_are_a_point_mass(form: str) -> None:
    # Three particles at 0.1 average to 0.1 + 1e-17 with a spread of 1e-17 in floating
    # point: the forecast kept that "deviation" and an NLL of ~1e31.
    pendulum = get_simulator("Pendulum-v1")
    plan = [np.array([1.0], dtype=np.float32)] * 3
    episode = capture_plan(pendulum, plan, case_id="pend", seed=4)

    def predict(initial: np.ndarray, actions: np.ndarray) -> object:
        samples = np.full((len(initial), 3, actions.shape[1], 2), 0.1)
        return {"samples": samples} if form == "mapping" else Prediction.from_samples(samples)

    (forecast,) = capture_forecasts(
        [episode],
        predict,
        model_id="constant/v1",
        contract=pendulum.contract,
        coordinates=pendulum.coordinates,
        horizons=[1, 3],
        planned_actions=[plan],
    )
    assert forecast.status == "ok"
    metrics = forecast_metrics(forecast)
    assert metrics.std is None
    assert metrics.nll is None
    truth = np.array([episode.transitions()[h - 1]["state"]["state"] for h in (1, 3)])
    expected = 0.1 - truth
    expected[:, 0] = _wrapped(expected[:, 0])
    np.testing.assert_array_equal(metrics.error, expected)


def test_straddling_angle_particles_beside_an_exact_coordinate_keep_their_angle_mean() -> None:
    # Particles that agree exactly in one coordinate give it a spread of exactly 0; the
    # re-summarizing of a Prediction's angles stopped at that 0 ("not positive"), and
    # an angle whose particles straddle +-pi kept the plain mean, half a turn off.
    acrobot = get_simulator("Acrobot-v1")
    plan = [0, 0, 0]
    episode = capture_plan(
        acrobot, plan, case_id="near-pi", seed=0, start_state=[np.pi - 0.001, np.pi - 0.001, 0, 0]
    )
    oracle = OracleModel(acrobot)
    offsets = np.array([-0.02, -0.01, 0.01, 0.02])

    def predict(initial: np.ndarray, actions: np.ndarray) -> Prediction:
        samples = oracle.predict(initial, actions).mean[:, None] + offsets[None, :, None, None]
        samples[..., :2] = _wrapped(samples[..., :2])
        samples[..., 3] = samples[:, :1, :, 3]  # every particle agrees on one velocity
        assert (np.ptp(samples[..., 0], axis=1) > np.pi).any(), "no particles straddle +-pi"
        return Prediction.from_samples(samples)

    (forecast,) = capture_forecasts(
        [episode],
        predict,
        model_id="straddling/v1",
        contract=acrobot.contract,
        coordinates=acrobot.coordinates,
        horizons=[1, 2, 3],
        planned_actions=[plan],
    )
    metrics = forecast_metrics(forecast)
    assert metrics.status == "ok"
    assert np.abs(metrics.error[:, :2]).max() < 1e-9  # not ~pi
    assert metrics.std is None  # a coordinate without spread: a point mass, as documented
