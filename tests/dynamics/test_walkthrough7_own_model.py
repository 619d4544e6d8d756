"""Walkthrough 7: a researcher's own model through the Python API, on real CartPole.

Each test is a problem met following docs/world-models.md with a model of one's own: a
model that raises on part of its inputs, a ``predict`` that returns a bare array, a
model handed to ``capture_forecast`` as to ``capture_forecasts``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    ExhaustivePlanner,
    Prediction,
    Simulator,
    Transitions,
    capture_forecast,
    capture_forecasts,
    request_predictor,
    run_closed_loop,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "world-models.md"


class RaisesOnLargeAngles:
    """Delegates to a fitted model, but raises on any initial pole angle beyond 0.03 rad."""

    model_id = "raises-on-angles/v1"

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def fit(self, transitions: Transitions) -> None:
        self.inner.fit(transitions)

    def predict(
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> Prediction:
        if np.any(np.abs(initial_states[:, 2]) > 0.03):
            raise ValueError("pole angle out of training range")
        prediction: Prediction = self.inner.predict(initial_states, actions)
        return prediction

    def describe(self) -> dict[str, Any]:
        return {"kind": "raises-on-angles"}


class BareArray(RaisesOnLargeAngles):
    """Returns the mean as a bare ndarray instead of a ``Prediction``."""

    model_id = "bare-array/v1"

    def predict(  # type: ignore[override]
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> np.ndarray:
        mean: np.ndarray = self.inner.predict(initial_states, actions).mean
        return mean


def _capture(cartpole: Simulator, heldout: Any, predict: Any) -> list[Any]:
    episodes, plans = heldout
    return capture_forecasts(
        episodes,
        predict,
        model_id="raises-on-angles/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 4],
        planned_actions=plans,
    )


def _capture_one(cartpole: Simulator, episode: Any, plan: Any, predict: Any) -> Any:
    return capture_forecast(
        episode,
        predict,
        model_id="raises-on-angles/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 4],
        planned_actions=plan,
    )


def test_a_batch_that_raises_fails_only_the_references_it_raises_on(
    cartpole: Simulator, heldout: Any, models: dict[str, Any]
) -> None:
    # Before: one raising row made every reference of the batch a model_error (a smoke
    # run printed "40 of 40 failed" for a model that failed on half of them).
    model = RaisesOnLargeAngles(models["action"])
    episodes, plans = heldout
    batch = _capture(cartpole, heldout, model)
    large = [abs(f.initial_state[2]) > 0.03 for f in batch]
    assert 0 < sum(large) < len(batch)  # the references really are mixed
    assert [f.status for f in batch] == ["model_error" if x else "ok" for x in large]
    for forecast, episode, plan in zip(batch, episodes, plans, strict=True):
        alone = _capture_one(cartpole, episode, plan, request_predictor(model))
        assert alone.status == forecast.status  # as if it had been asked on its own
        if forecast.status == "ok":
            np.testing.assert_allclose(forecast.mean, alone.mean, rtol=1e-12, atol=1e-15)
        else:
            assert forecast.error is not None
            assert "pole angle out of training range" in forecast.error["message"]


def test_a_model_that_always_raises_still_fails_every_reference(
    cartpole: Simulator, heldout: Any
) -> None:
    def broken(initial: np.ndarray, actions: np.ndarray) -> Any:
        raise RuntimeError("predict is broken")

    forecasts = _capture(cartpole, heldout, broken)
    assert {f.status for f in forecasts} == {"model_error"}
    assert all("RuntimeError: predict is broken" in f.error["message"] for f in forecasts)


def test_capture_forecast_takes_a_world_model_as_capture_forecasts_does(
    cartpole: Simulator, heldout: Any, models: dict[str, Any]
) -> None:
    # Before: "predict must be callable, got BayesianLinearModel", naming no fix.
    episodes, plans = heldout
    direct = _capture_one(cartpole, episodes[0], plans[0], models["action"])
    wrapped = _capture_one(cartpole, episodes[0], plans[0], request_predictor(models["action"]))
    assert direct.status == "ok"
    np.testing.assert_array_equal(direct.mean, wrapped.mean)
    assert direct.metadata == wrapped.metadata
    from onrecord.errors import InputError

    with pytest.raises(InputError, match="a callable or a WorldModel, got str"):
        _capture_one(cartpole, episodes[0], plans[0], "not a model")


def test_a_bare_array_answer_is_named_in_a_single_forecast(
    cartpole: Simulator, heldout: Any, models: dict[str, Any]
) -> None:
    # Before: "the model raised TypeError: 'builtin_function_or_method' object is not
    # subscriptable" (an ndarray's .mean is a method), naming neither cause nor fix.
    episodes, plans = heldout
    forecast = _capture_one(cartpole, episodes[0], plans[0], BareArray(models["action"]))
    assert forecast.status == "model_error"
    assert forecast.error is not None
    message = forecast.error["message"]
    assert "returned ndarray, not a Prediction" in message
    assert "raised" not in message  # the model did not raise: it answered wrongly


def test_a_bare_array_answer_is_named_in_the_closed_loop(
    cartpole: Simulator, models: dict[str, Any]
) -> None:
    # Before: the run's record said "float() argument must be a string or a real
    # number, not 'builtin_function_or_method'" (builtins.TypeError).
    (run,) = run_closed_loop(
        cartpole, BareArray(models["action"]), ExhaustivePlanner(2), seeds=[0], max_steps=5
    )
    error = run.record["model_error"]
    assert error["step"] == 0
    assert error["type"].endswith("ModelError")
    assert "predict returned ndarray" in error["message"]
    assert "must return a Prediction" in error["message"]


def test_a_mapping_answer_plans_as_it_forecasts(
    cartpole: Simulator, models: dict[str, Any]
) -> None:
    # capture_forecasts reads {"mean": ...}; the planner reads it the same way.
    class MappingModel(RaisesOnLargeAngles):
        model_id = "mapping/v1"

        def predict(  # type: ignore[override]
            self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
        ) -> dict[str, Any]:
            return {"mean": self.inner.predict(initial_states, actions).mean}

    (run,) = run_closed_loop(
        cartpole, MappingModel(models["action"]), ExhaustivePlanner(3), seeds=[0], max_steps=20
    )
    assert run.record["model_error"] is None
    assert len(run.episode.transitions()) == 20


def test_the_docs_say_where_forecast_case_result_is_imported_from() -> None:
    # Before: "Release evidence" named forecast_case_result without its module, and
    # `from onrecord.dynamics import forecast_case_result` is an ImportError.
    text = DOCS.read_text()
    section = text[text.index("## Release evidence") : text.index("## Models, controls")]
    assert re.search(r"from onrecord\.dynamics_metrics import forecast_case_result", section)
    from onrecord.dynamics_metrics import forecast_case_result, forecast_report

    assert callable(forecast_case_result)
    assert callable(forecast_report)


def test_saved_runs_carry_their_episodes_for_verify_show_and_load(
    cartpole: Simulator, models: dict[str, Any], tmp_path: Path
) -> None:
    # Before: the docs said `onrecord verify` checks each record against its episode
    # "when those are saved as NAME.episodes.jsonl", but no public function wrote that
    # file: verify said "their episodes not found beside them, so not checked".
    from onrecord.dynamics import load_runs, save_runs
    from onrecord.errors import InputError
    from tests.cli_process import onrecord

    runs = run_closed_loop(
        cartpole, models["action"], ExhaustivePlanner(2), seeds=[0, 1], max_steps=10
    )
    path = save_runs(tmp_path / "mine.jsonl", runs, episodes=True)
    assert (tmp_path / "mine.episodes.jsonl").is_file()
    loaded = load_runs(path)
    assert [run.record for run in loaded] == [run.record for run in runs]
    assert [run.episode.digest for run in loaded] == [run.episode.digest for run in runs]
    verified = onrecord("verify", path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "each references its episode in mine.episodes.jsonl" in verified.stdout
    bare = save_runs(tmp_path / "bare.jsonl", runs)  # the default writes the records only
    assert not (tmp_path / "bare.episodes.jsonl").exists()
    with pytest.raises(InputError, match=r"episodes: .*save_runs\(path, runs, episodes=True\)"):
        load_runs(bare)
