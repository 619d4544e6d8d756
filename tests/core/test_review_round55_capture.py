"""Review round 55: an empty ``info`` that is not a dict (``[]``, ``""``, ``0``) makes
its step malformed as a non-empty one does; only ``None`` reads as ``{}``. A non-finite
observation is named within the observation, not within a batch of one. A call capture
refused is a lifecycle error in the coverage issues, not a failure (records with the old
wording still verify)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from onrecord._canonical import content_digest
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError, LifecycleError, MalformedStepError
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


def _refused_reset(env: Any, observation: Any, info: Any) -> None:
    env.step(0)
    with pytest.raises(LifecycleError):
        env.reset()


def _resealed(data: dict[str, Any]) -> EpisodeEvidence:
    body = {key: value for key, value in data.items() if key != "digest"}
    return EpisodeEvidence.from_dict({**body, "digest": content_digest(body)})


def test_a_refused_call_is_a_lifecycle_error_not_a_failure() -> None:
    episode = capture_generic(GenericEnv(_ok_step), _refused_reset, max_steps=3)
    [issue] = [i for i in episode.coverage_issues if "LifecycleError" in i]
    assert issue.startswith("lifecycle error at reset: onrecord.errors.LifecycleError: reset()")
    assert not any("reset failed" in i for i in episode.coverage_issues)
    assert episode.failures() == []  # the environment's own reset never failed


def test_a_record_saved_with_the_old_wording_still_verifies_and_an_edit_is_refused() -> None:
    data = capture_generic(GenericEnv(_ok_step), _refused_reset, max_steps=3).data
    index = next(i for i, text in enumerate(data["coverage_issues"]) if "LifecycleError" in text)
    old = data["coverage_issues"][index].replace("lifecycle error at reset", "reset failed")
    legacy = {**data, "coverage_issues": [*data["coverage_issues"]]}
    legacy["coverage_issues"][index] = old
    assert _resealed(legacy).coverage_issues[index].startswith("reset failed: ")
    legacy["coverage_issues"][index] = old.replace("reset failed", "step failed")
    with pytest.raises(ConsistencyError, match="coverage_issues do not match"):
        _resealed(legacy)


def _ok_step(env: GenericEnv, action: Any) -> Any:
    return env.observation_space.sample(), 1.0, False, False, {}
