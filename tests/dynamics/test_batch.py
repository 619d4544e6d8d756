"""capture_forecasts: one vectorized call, records identical to the single form."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import Simulator, capture_forecast, capture_forecasts, request_predictor


def _capture_all(cartpole: Simulator, heldout: Any, predict: Any, **kwargs: Any) -> list[Any]:
    episodes, plans = heldout
    return capture_forecasts(
        episodes,
        predict,
        model_id="m/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 4, 8],
        planned_actions=plans,
        **kwargs,
    )


def test_batch_records_equal_single_captures(
    cartpole: Simulator, heldout: Any, models: dict[str, Any]
) -> None:
    model = models["action"]
    batch = _capture_all(cartpole, heldout, model)
    episodes, plans = heldout
    single = [
        capture_forecast(
            e,
            request_predictor(model),
            model_id="m/v1",
            contract=cartpole.contract,
            coordinates=cartpole.coordinates,
            horizons=[1, 4, 8],
            planned_actions=p,
        )
        for e, p in zip(episodes[:5], plans[:5], strict=True)
    ]
    for one, many in zip(single, batch[:5], strict=True):
        np.testing.assert_allclose(one.mean, many.mean, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(one.std, many.std, rtol=1e-12)  # type: ignore[arg-type]
        assert one.episode_digest == many.episode_digest


def test_one_call_per_request_length(cartpole: Simulator, heldout: Any) -> None:
    calls: list[tuple[int, ...]] = []

    def predict(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        calls.append(actions.shape)
        return {"mean": np.repeat(initial[:, None], actions.shape[1], axis=1)}

    forecasts = _capture_all(cartpole, heldout, predict)
    assert calls == [(30, 32)]
    assert all(f.status == "ok" for f in forecasts)
    episodes, _ = heldout
    prefix = capture_forecasts(
        episodes,
        predict,
        model_id="m/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1],
    )
    lengths = {len(e.actions()) for e in episodes}
    assert len(calls) - 1 == len(lengths)
    assert all(f.action_scope == "observed_prefix" for f in prefix)


def test_a_bad_row_spoils_only_itself(cartpole: Simulator, heldout: Any) -> None:
    def predict(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        mean = np.repeat(initial[:, None], actions.shape[1], axis=1)
        mean[3, 5, 1] = np.inf
        return {"mean": mean, "standard_deviation": np.ones_like(mean)}

    forecasts = _capture_all(cartpole, heldout, predict)
    statuses = [f.status for f in forecasts]
    assert statuses[3] == "model_error"
    assert statuses.count("ok") == len(statuses) - 1


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"mean": np.zeros((30, 32, 3))}, "shape [30, 32, 3]"),
        ({"samples": np.zeros((30, 32, 4))}, "samples has shape"),
        ({}, "neither 'mean' nor 'samples'"),
        ("nope", "not a Prediction or a mapping"),
    ],
)
def test_a_malformed_batch_is_a_model_error_for_every_row(
    cartpole: Simulator, heldout: Any, answer: Any, message: str
) -> None:
    forecasts = _capture_all(cartpole, heldout, lambda i, a: answer)
    assert {f.status for f in forecasts} == {"model_error"}
    assert message in forecasts[0].error["message"]  # type: ignore[index]


def test_samples_become_mean_and_deviation(cartpole: Simulator, heldout: Any) -> None:
    def predict(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        base = np.repeat(initial[:, None, None], actions.shape[1], axis=2)
        return {
            "samples": np.concatenate([base - 1.0, base + 1.0], axis=1),
            "metadata": {"particles": 2},
        }

    forecast = _capture_all(cartpole, heldout, predict)[0]
    np.testing.assert_allclose(forecast.std, np.sqrt(2.0))  # type: ignore[arg-type]
    np.testing.assert_allclose(forecast.mean[0], forecast.initial_state)
    assert forecast.metadata == {"particles": 2}


def test_the_model_cannot_change_the_record_through_its_inputs(
    cartpole: Simulator, heldout: Any
) -> None:
    def vandal(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        mean = np.repeat(initial[:, None], actions.shape[1], axis=1)
        initial[:] = 99.0
        actions[:] = 0
        return {"mean": mean}

    forecast = _capture_all(cartpole, heldout, vandal)[0]
    episodes, plans = heldout
    assert forecast.data["request"]["actions"] == plans[0]
    assert forecast.initial_state.tolist() == episodes[0].initial["state"]["state"]
