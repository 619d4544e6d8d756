"""Values nested deeper than a record can hold are refused where they enter, with their
path — not when the record is sealed (orjson writes at most 254 levels), and never as
a RecursionError."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import MAX_NESTING, canonical_bytes, to_portable
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode

CASE = EvalCase("nesting", case_id="nesting")


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@settings(max_examples=60, deadline=None)
@given(
    depth=st.integers(1, 400),
    leaf=st.sampled_from([1, 2.5, "x", None, np.int64(3), np.float32(0.5), (1, 2)]),
)
def test_accepted_exactly_up_to_the_limit(depth: int, leaf: Any) -> None:
    value = _nested(depth, leaf)
    if depth <= MAX_NESTING - 1:  # a tuple leaf adds one level
        copy = to_portable(value, "$.v")
        # what is accepted can be written inside a record a few levels down
        assert canonical_bytes({"a": {"b": [{"c": copy}]}})
    elif depth > MAX_NESTING:
        with pytest.raises(PortabilityError) as caught:
            to_portable(value, "$.v")
        assert caught.value.path == "$.v"
        assert "flatten" in str(caught.value)


def test_far_too_deep_is_a_portability_error_not_a_recursion_error() -> None:
    for leaf in (1, np.int64(1), 1.5j):  # the C copy, the fast walk, the explaining walk
        with pytest.raises(PortabilityError, match="nested more than"):
            to_portable(_nested(5000, leaf), "$.deep")


class _DeepInfo(gym.Env[Any, Any]):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, where: str) -> None:
        self.where = where

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, Any]:
        super().reset(seed=seed)
        return 0, ({"deep": _nested(230, 1)} if self.where == "reset" else {})

    def step(self, action: int) -> tuple[int, float, bool, bool, Any]:
        return 0, 0.0, False, False, {"deep": _nested(230, 1)}


def _capture(where: str, options: Any = None, made: list[int] | None = None) -> Any:
    def factory() -> gym.Env[Any, Any]:
        if made is not None:
            made.append(1)
        return _DeepInfo(where)

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    return capture_episode(
        factory,
        interact,
        case=CASE,
        environment_id="deep-v1",
        observer_id="none",
        observe=dict,
        seed=0,
        max_steps=3,
        options=options,
    )


def test_a_deep_reset_info_is_refused_naming_it() -> None:
    # Before: accepted by to_portable, then sealing the record raised an error with no
    # path telling the user to "pass it through to_portable first".
    with pytest.raises(PortabilityError) as caught:
        _capture("reset")
    assert caught.value.path == "$.initial.info"


def test_a_deep_step_info_is_a_recorded_environment_error() -> None:
    episode = _capture("step")
    attempt = episode.attempts()[0]
    assert attempt["status"] == "env_error"
    assert "nested more than" in attempt["error"]["message"]


def test_deep_options_are_refused_before_the_environment_is_made() -> None:
    made: list[int] = []
    with pytest.raises(PortabilityError) as caught:
        _capture("none", options={"deep": _nested(5000, 1)}, made=made)
    assert caught.value.path.startswith("$.options")
    assert not made
