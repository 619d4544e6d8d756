"""Round 38 rare paths in the evidence core: a NumPy masked array inside a Dict or Tuple
observation is refused naming its path, as a masked Box observation is (``to_jsonable``
wrote ``null`` where it was masked), and a masked action in any space is refused before
the environment sees it (``contains`` passed it on its data alone)."""

from __future__ import annotations

import contextlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode

BOX = spaces.Box(-np.inf, np.inf, (2,), np.float64)


def _masked() -> np.ma.MaskedArray[Any, Any]:
    return np.ma.masked_array([1.0, 2.0], mask=[False, True])


class _Env(gym.Env[Any, Any]):
    """A real Gymnasium env returning the observations it is given; records actions."""

    def __init__(
        self,
        obs_space: spaces.Space[Any],
        act_space: spaces.Space[Any],
        step_obs: Any,
        reset_obs: Any,
    ) -> None:
        self.observation_space, self.action_space = obs_space, act_space
        self.step_obs, self.reset_obs = step_obs, reset_obs
        self.received: list[Any] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.reset_obs, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.received.append(action)
        return self.step_obs, 0.0, False, False, {}


def _capture(env: _Env, action: Any) -> dict[str, Any]:
    def interact(env: Any, observation: Any, info: Any) -> None:
        with contextlib.suppress(Exception):  # refusals are raised to interact, and recorded
            env.step(action)

    return capture_episode(
        lambda: env,
        interact,
        case=EvalCase("x", case_id="masked"),
        environment_id="probe",
        observer_id="probe/v1",
        observe=dict,
        seed=0,
        max_steps=3,
    ).data


DICT, TUPLE = spaces.Dict({"a": BOX}), spaces.Tuple((spaces.Discrete(2), BOX))


@pytest.mark.parametrize(
    ("space", "good", "bad", "path"),
    [
        (DICT, {"a": np.zeros(2)}, {"a": _masked()}, "$.observation.a"),
        (TUPLE, (0, np.zeros(2)), (0, _masked()), "$.observation[1]"),
        (
            spaces.Dict({"t": TUPLE}),
            {"t": (0, np.zeros(2))},
            {"t": (0, _masked())},
            "$.observation.t[1]",
        ),
    ],
    ids=["dict", "tuple", "nested"],
)
def test_a_masked_part_of_an_observation_is_an_environment_error_naming_it(
    space: spaces.Space[Any], good: Any, bad: Any, path: str
) -> None:
    data = _capture(_Env(space, spaces.Discrete(2), bad, good), 0)
    assert data["steps"]["status"] == ["env_error"]
    message = data["steps"]["error"][0]["message"]
    assert f"{path} holds a numpy masked array" in message
    assert "null" not in repr(data["steps"]["observation"])  # never [1.0, None] as recorded


def test_a_masked_part_of_the_reset_observation_is_refused_naming_it() -> None:
    env = _Env(DICT, spaces.Discrete(2), {"a": np.zeros(2)}, {"a": _masked()})
    with pytest.raises(PortabilityError, match=r"\$\.initial\.observation\.a holds a numpy"):
        _capture(env, 0)


def test_a_masked_multidiscrete_observation_is_an_environment_error() -> None:
    space = spaces.MultiDiscrete([3, 3])
    bad = np.ma.masked_array([1, 2], mask=[False, True])
    data = _capture(_Env(space, spaces.Discrete(2), bad, np.zeros(2, np.int64)), 0)
    assert data["steps"]["status"] == ["env_error"]
    assert "masked array" in data["steps"]["error"][0]["message"]


@pytest.mark.parametrize(
    ("space", "action", "where"),
    [
        (BOX, _masked(), "action is a numpy masked array"),
        (DICT, {"a": _masked()}, "action['a'] is a numpy masked array"),
        (TUPLE, (0, _masked()), "action[1] is a numpy masked array"),
        (
            spaces.MultiDiscrete([3, 3]),
            np.ma.masked_array([1, 2], mask=[False, True]),
            "action is a numpy masked array",
        ),
    ],
    ids=["box", "dict", "tuple", "multidiscrete"],
)
def test_a_masked_action_is_refused_before_the_environment_sees_it(
    space: spaces.Space[Any], action: Any, where: str
) -> None:
    env = _Env(BOX, space, np.zeros(2), np.zeros(2))
    data = _capture(env, action)  # before: the episode was lost, or [1.0, None] recorded
    assert env.received == []
    assert data["steps"]["status"] == ["invalid_action"]
    message = data["steps"]["error"][0]["message"]
    assert where in message
    assert "array.filled(value)" in message


def test_an_unmasked_dict_observation_and_action_are_still_recorded() -> None:
    env = _Env(DICT, DICT, {"a": np.ones(2)}, {"a": np.zeros(2)})
    data = _capture(env, {"a": np.array([0.5, 0.25])})
    assert data["steps"]["status"] == ["ok"]
    assert data["steps"]["observation"] == {"a": [[1.0, 1.0]]}
    assert data["steps"]["action"] == {"a": [[0.5, 0.25]]}
