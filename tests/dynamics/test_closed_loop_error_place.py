"""A closed-loop run ended by the user's model or planner keeps the line that raised;
onrecord's own refusal of a model's answer is kept as worded, with no place."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from onrecord.dynamics import get_simulator
from onrecord.dynamics._closed_loop import load_runs, run_closed_loop, save_runs
from onrecord.dynamics._planners import ExhaustivePlanner, PlanChoice

SIM = get_simulator("CartPole-v1")


class BrokenCheckpoint:
    """A world model whose weights never loaded."""

    model_id = "broken/v1"

    def fit(self, transitions: Any) -> None:
        """Nothing to learn."""

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Any:
        weights = None
        return weights.forward(initial_states, actions)  # type: ignore[attr-defined]

    def describe(self) -> dict[str, Any]:
        return {"kind": "broken"}


class NanModel(BrokenCheckpoint):
    """A model whose every mean is NaN: onrecord refuses the answer itself."""

    model_id = "nan/v1"

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Any:
        states = np.asarray(initial_states, dtype=float)
        horizon = np.asarray(actions).shape[1]
        return {"mean": np.full((len(states), horizon, states.shape[1]), np.nan)}


class OffByOnePlanner(ExhaustivePlanner):
    """A user's planner with its own bug, raised before the model is asked."""

    def plan(self, model: Any, simulator: Any, state: Any, rng: Any) -> PlanChoice:
        candidates: list[int] = []
        return PlanChoice(candidates[len(candidates)], (0,), 0.0)


def _line_of(function: Any, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _error(model: Any, planner: Any) -> dict[str, Any]:
    (run,) = run_closed_loop(SIM, model, planner, seeds=[3], max_steps=5)
    assert run.failed
    error = run.record["model_error"]
    assert error is not None
    assert error["step"] == 0
    return dict(error)


def test_a_raising_predict_is_kept_with_its_file_line_and_function() -> None:
    error = _error(BrokenCheckpoint(), ExhaustivePlanner(2))
    line = _line_of(BrokenCheckpoint.predict, "weights.forward")
    assert error["type"] == "builtins.AttributeError"
    assert error["message"].endswith(f"(at {__file__}:{line} in predict)"), error["message"]


def test_a_raising_planner_is_kept_with_its_own_line() -> None:
    error = _error(BrokenCheckpoint(), OffByOnePlanner(2))
    line = _line_of(OffByOnePlanner.plan, "candidates[len(candidates)]")
    assert error["type"] == "builtins.IndexError"
    assert error["message"].endswith(f"(at {__file__}:{line} in plan)"), error["message"]


def test_onrecords_refusal_of_an_answer_names_no_place() -> None:
    error = _error(NanModel(), ExhaustivePlanner(2))
    assert error["type"] == "onrecord.dynamics._planners.NonFinitePrediction"
    assert "(at " not in error["message"]


def test_the_place_survives_saving_and_loading(tmp_path: Any) -> None:
    runs = run_closed_loop(SIM, BrokenCheckpoint(), ExhaustivePlanner(2), seeds=[3, 4], max_steps=5)
    path = tmp_path / "runs.jsonl"
    save_runs(path, runs, episodes=True)
    again = run_closed_loop(
        SIM, BrokenCheckpoint(), ExhaustivePlanner(2), seeds=[3, 4], max_steps=5
    )
    # The same bug reads the same: no address or time in the kept text.
    assert [r.record["model_error"] for r in again] == [r.record["model_error"] for r in runs]
    loaded = [run.record for run in load_runs(path)]
    assert [record["model_error"] for record in loaded] == [r.record["model_error"] for r in runs]
