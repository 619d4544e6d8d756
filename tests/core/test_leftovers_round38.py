"""Round 38 leftovers in the evidence core: a NumPy masked array is refused on every
path (its data alone would record masked values as real ones), and a list sample mixing
integers beyond 2**53 with floats is kept exactly (np.asarray rounded it to a float64)."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord._canonical import state_bytes, to_portable
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode

BIG = 2**60 + 1  # a float64 holds 2**60 exactly, not 2**60 + 1
FIX = "array.filled(value)"


def _masked() -> np.ma.MaskedArray[Any, Any]:
    return np.ma.masked_array([1.0, 2.0], mask=[False, True])


class _Env(gym.Env[Any, Any]):
    """A real Gymnasium env returning the observation and info it is given."""

    def __init__(self, *, step_obs: Any = None, info: Any = None, reset_info: Any = None):
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = spaces.Discrete(2)
        self.step_obs, self.info, self.reset_info = step_obs, info or {}, reset_info or {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return np.zeros(2), self.reset_info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs = np.zeros(2) if self.step_obs is None else self.step_obs
        return obs, 0.0, False, False, self.info


def _capture(env: gym.Env[Any, Any], observe: Any = dict, **kwargs: Any) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        # An unstorable info is raised to interact, and recorded.
        with contextlib.suppress(PortabilityError):
            env.step(0)

    return capture_episode(
        lambda: env,
        interact,
        case=EvalCase("x", case_id="masked"),
        environment_id="probe",
        observer_id="probe/v1",
        observe=observe,
        seed=0,
        max_steps=3,
        **kwargs,
    ).data


@pytest.mark.parametrize("state", [_masked(), {"m": _masked()}, [1, _masked()]])
def test_state_bytes_refuses_a_masked_array_though_orjson_would_write_its_data(
    state: Any,
) -> None:
    with pytest.raises(PortabilityError, match=re.escape(FIX)) as caught:
        state_bytes(state, "$.state")
    assert "masked array" in str(caught.value)
    assert str(caught.value).startswith("$.state")


def test_to_portable_refuses_a_masked_array_naming_the_field() -> None:
    with pytest.raises(PortabilityError, match=r"^\$\.info\.m holds a numpy masked array"):
        to_portable({"m": _masked()}, "$.info")


def test_masked_observer_state_is_an_observer_error_at_every_read() -> None:
    data = _capture(_Env(), observe=lambda: {"m": _masked()})
    prefix = "PortabilityError: $.state.m holds a numpy masked array"
    assert data["initial"]["observer_error"].startswith(prefix)
    assert data["steps"]["observer_error"][0].startswith(prefix)
    assert data["final_observer_error"].startswith(prefix)
    assert FIX in data["final_observer_error"]


def test_a_masked_info_makes_the_step_an_environment_error() -> None:
    data = _capture(_Env(info={"m": _masked()}))
    assert data["steps"]["status"] == ["env_error"]
    assert data["steps"]["error"][0]["message"].startswith("$.info[0].m holds a numpy masked")


def test_a_masked_reset_info_or_option_is_refused_naming_it() -> None:
    with pytest.raises(PortabilityError, match=r"\$\.initial\.info\.m holds a numpy masked"):
        _capture(_Env(reset_info={"m": _masked()}))
    with pytest.raises(PortabilityError, match=r"\$\.options\.m holds a numpy masked"):
        _capture(_Env(), options={"m": _masked()})


def test_a_masked_observation_is_kept_as_an_environment_error() -> None:
    data = _capture(_Env(step_obs=_masked()))
    assert data["steps"]["status"] == ["env_error"]
    assert "masked array" in data["steps"]["error"][0]["message"]
    assert data["steps"]["observation"] == []  # never [1.0, 2.0] as if both were real


class _ListEnv(gym.Env[Any, Any]):
    def __init__(self, space: spaces.Space[Any], observations: list[Any]) -> None:
        self.observation_space, self.action_space = space, spaces.Discrete(2)
        self.observations = observations

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.observations[0], {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.observations[1], 0.0, False, False, {}


@pytest.mark.parametrize(
    "space",
    [spaces.Box(-np.inf, np.inf, (2,), np.float64), spaces.Box(-1, 1, (3,), np.float32)],
    ids=["in-space-shape", "off-space"],
)
def test_a_list_observation_with_a_huge_int_among_floats_is_kept_exactly(
    space: spaces.Space[Any],
) -> None:
    data = _capture(_ListEnv(space, [[BIG, 0.5], [BIG, 0.25]]))
    assert data["initial"]["observation"] == [BIG, 0.5]
    assert data["steps"]["observation"] == [[BIG, 0.25]]


def test_a_huge_int_list_beside_arrays_of_another_shape_is_kept_exactly() -> None:
    space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
    data = _capture(_ListEnv(space, [np.zeros(2), [BIG, 0.5, 1.0]]))
    assert data["steps"]["observation"] == [[BIG, 0.5, 1.0]]
