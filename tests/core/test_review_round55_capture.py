"""Review round 55: an empty ``info`` that is not a dict (``[]``, ``""``, ``0``) makes
its step malformed as a non-empty one does; only ``None`` reads as ``{}``. A non-finite
observation is named within the observation, not within a batch of one."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from onrecord.errors import MalformedStepError
from tests.core.envs import GenericEnv, capture_generic


def _one_step(env: Any, observation: Any, info: Any) -> None:
    env.step(0)


def _capture_with_info(info: Any) -> tuple[Any, list[BaseException]]:
    def step(env: GenericEnv, action: Any) -> Any:
        return env.observation_space.sample(), 1.0, False, False, info

    raised: list[BaseException] = []

    def interact(env: Any, observation: Any, info: Any) -> None:
        try:
            env.step(1)
        except MalformedStepError as exc:
            raised.append(exc)

    return capture_generic(GenericEnv(step), interact), raised


@pytest.mark.parametrize("info", [[], "", 0, False, (), [1]])
def test_an_info_that_is_not_a_dict_is_malformed_even_when_empty(info: Any) -> None:
    episode, raised = _capture_with_info(info)
    assert len(raised) == 1
    assert f"an info of type {type(info).__name__}" in str(raised[0])
    steps = episode.data["steps"]
    assert steps["status"] == ["env_error"]
    assert steps["error"][0]["type"] == "onrecord.errors.MalformedStepError"
    assert episode.coverage_issues


@pytest.mark.parametrize("info", [None, {}, OrderedDict()])
def test_none_and_empty_mappings_are_an_empty_info(info: Any) -> None:
    episode, raised = _capture_with_info(info)
    assert raised == []
    assert episode.data["steps"]["status"] == ["ok"]
    assert episode.data["steps"]["info"] == [{}]


def test_a_non_empty_dict_subclass_is_kept() -> None:
    episode, raised = _capture_with_info(OrderedDict(b=2, a=1))
    assert raised == []
    assert episode.data["steps"]["info"] == [{"a": 1, "b": 2}]


@pytest.mark.parametrize(
    ("shape", "where", "path"),
    [((3,), (1,), r"$.observation[1] is"), ((2, 3), (1, 2), r"$.observation[1, 2] is")],
)
def test_a_non_finite_observation_is_named_within_the_observation(
    shape: tuple[int, ...], where: tuple[int, ...], path: str
) -> None:
    def step(env: GenericEnv, action: Any) -> Any:
        observation = np.zeros(shape)
        observation[where] = np.nan
        return observation, 0.0, False, False, {}

    box = spaces.Box(-np.inf, np.inf, shape, np.float64)
    episode = capture_generic(GenericEnv(step, observation_space=box), _one_step)
    message = episode.data["steps"]["error"][0]["message"]
    assert path in message
