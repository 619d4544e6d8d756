"""Adversarial capture inputs: misbehaving models stay model errors, bad arguments are
clear ``InputError``s, never a silent reinterpretation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import Coordinate, capture_forecasts
from onrecord.errors import InputError
from tests.dynamics.test_capture import ACTIONS, COORDS, capture, persistence, seed_reference


@pytest.fixture(scope="module")
def reference() -> Any:
    return seed_reference()


class RaisingArray:
    """An array-like whose conversion fails, as a broken tensor wrapper might."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise RuntimeError("device lost")


class RaisingMapping(dict[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"states": [[10**400] * 4] * 4}, "OverflowError"),
        ({"states": RaisingArray()}, "device lost"),
        (RaisingMapping(states=[[0.0] * 4] * 4), "KeyError"),
    ],
)
def test_unreadable_answers_are_model_errors(reference: Any, answer: Any, message: str) -> None:
    forecast = capture(reference, lambda request: answer)
    assert forecast.status == "model_error"
    assert forecast.error is not None
    assert message in forecast.error["message"]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        # Read like "mean": text and ragged particles are "not numeric".
        ({"samples": "not numbers"}, "samples is not numeric"),
        ({"samples": [[1.0, [2.0]]]}, "samples is not numeric"),
        ({"mean": RaisingArray()}, "device lost"),
        ({"mean": [[[10**400] * 4] * 4] * 2}, "OverflowError"),
        ({"samples": np.zeros((2, 0, 4, 4))}, "no particles"),
    ],
)
def test_unreadable_batch_answers_are_model_errors(answer: Any, message: str) -> None:
    episodes = [seed_reference(seed=s) for s in (1, 2)]
    forecasts = capture_forecasts(
        episodes,
        lambda states, actions: answer,
        model_id="m/v1",
        contract="c/v1",
        coordinates=COORDS,
        horizons=[1, 4],
        planned_actions=[ACTIONS, ACTIONS],
    )
    assert [f.status for f in forecasts] == ["model_error", "model_error"]
    assert all(message in (f.error or {})["message"] for f in forecasts)


def test_angular_as_a_bare_string_is_refused(reference: Any) -> None:
    # "xa" used to be read as the characters "x" and "a", wrapping both silently.
    coords = {"x": "m", "v": "m/s", "a": "rad", "w": "rad/s"}
    with pytest.raises(InputError, match="angular must be a list"):
        capture(reference, persistence, coordinates=coords, angular="xa")
    forecast = capture(reference, persistence, coordinates=coords, angular=("a",))
    assert forecast.angular == ("a",)


@pytest.mark.parametrize("angular", [None, 3, [1]])
def test_malformed_angular_is_an_input_error(reference: Any, angular: Any) -> None:
    with pytest.raises(InputError, match="angular"):
        capture(reference, persistence, angular=angular)


def test_repeated_coordinate_names_are_refused(reference: Any) -> None:
    # Two components under one name used to collapse into one unit mapping entry.
    coords = [
        Coordinate("x", "m"),
        Coordinate("x", "m"),
        Coordinate("a", "rad"),
        Coordinate("w", "rad/s"),
    ]
    with pytest.raises(InputError, match=r"repeat the names \['x'\]"):
        capture(reference, persistence, coordinates=coords)


def test_horizons_may_be_any_iterable(reference: Any) -> None:
    forecast = capture(reference, persistence, horizons=(h for h in (4, 1)))
    assert forecast.horizons == (1, 4)
    assert capture(reference, persistence, horizons=np.array([1, 4])).horizons == (1, 4)


def test_an_empty_answer_to_an_empty_request_is_ok() -> None:
    # A reference whose observed prefix is empty asks for no actions; "states": [] is
    # exactly one vector per action, not a shape error.
    episode = seed_reference(actions=[], max_steps=1)
    forecast = capture(episode, persistence, planned_actions=None)
    assert forecast.data["request"]["actions"] == []
    assert forecast.status == "ok", forecast.error
    assert forecast.observed_steps == 0
