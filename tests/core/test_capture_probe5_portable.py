"""Probe 5: ``numpy.longdouble`` values in ``info``, observer state and options. Before,
each path failed with a misleading error ("nested more than 200 levels ... flatten it",
or a bare RecursionError as an observer error): ``item()`` and ``tolist()`` give a
longdouble back, so the walk recursed. A longdouble a double holds exactly is stored as
that double (an array keeps its dtype); any other is refused with its path and the fix."""

from __future__ import annotations

import collections
import types
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import from_portable, state_bytes, to_portable
from onrecord.episode import EpisodeEvidence
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode

WIDE = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant
needs_wide = pytest.mark.skipif(not WIDE, reason="longdouble is a double on this platform")
DOUBLES = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(value=DOUBLES, size=st.integers(0, 4))
def test_a_longdouble_a_double_holds_round_trips_on_every_path(value: float, size: int) -> None:
    scalar = np.longdouble(value)
    assert to_portable({"x": scalar}) == {"x": value}
    assert state_bytes({"x": scalar}) == state_bytes({"x": value})
    array = np.full(size, value, np.longdouble)
    back = from_portable(to_portable({"a": array}))["a"]
    assert back.dtype == np.longdouble
    assert np.array_equal(back, array)
    assert state_bytes(array) == state_bytes(array.astype(np.float64))


@needs_wide
@given(value=DOUBLES.filter(lambda v: v != 0 and abs(v) < 1e300))
def test_a_longdouble_a_double_would_round_is_refused_with_its_path(value: float) -> None:
    scalar = np.longdouble(value) * (1 + np.longdouble(np.finfo(np.longdouble).eps))
    assert float(scalar) != scalar
    for encode in (to_portable, state_bytes):
        with pytest.raises(PortabilityError, match=r"\$\.s\.x holds a numpy float128 value .*"):
            encode({"x": scalar}, "$.s")
        with pytest.raises(PortabilityError, match=r"astype\(np\.float64\)"):
            encode({"x": np.array([1.0, scalar])}, "$.s")


def test_a_longdouble_in_info_and_state_is_recorded(tmp_path: Any) -> None:
    holder: dict[str, Any] = {}

    class Energy(gym.Wrapper[Any, Any, Any, Any]):
        """Reports the cart's kinetic energy in extended precision."""

        def step(self, action: Any) -> Any:
            observation, reward, terminated, truncated, info = self.env.step(action)
            info["energy"] = np.longdouble(0.5) * np.longdouble(2.0)
            return observation, reward, terminated, truncated, info

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = Energy(gym.make("CartPole-v1"))
        return holder["env"]

    episode = _two_steps(
        factory,
        lambda: {"total": np.longdouble(0.25), "cells": np.full(2, 0.5, np.longdouble)},
        "probe5-longdouble",
        options={"low": np.longdouble(-0.05)},
    )
    assert episode.failures() == []
    assert [t["info"] for t in episode.transitions()] == [{"energy": 1.0}] * 2
    assert episode.states()[1] == {"total": 0.25, "cells": [0.5, 0.5]}
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
    assert loaded == episode


@needs_wide
def test_an_observer_returning_an_inexact_longdouble_names_it() -> None:
    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    episode = capture_episode(
        lambda: gym.make("CartPole-v1"),
        interact,
        case=EvalCase("probe", case_id="probe5-longdouble"),
        environment_id="e",
        observer_id="o",
        observe=lambda: {"third": np.longdouble(1) / 3},
        seed=0,
        max_steps=5,
    )
    errors = [failure["message"] for failure in episode.failures()]
    assert errors
    assert all("$.state.third holds a numpy float128" in e for e in errors)
    assert not any("Recursion" in e or "nested" in e for e in errors)


def test_a_complex_array_is_refused_naming_its_dtype() -> None:
    with pytest.raises(PortabilityError, match=r"numpy array of dtype complex128"):
        to_portable({"x": np.array([1j])})


Pose = collections.namedtuple("Pose", "x theta")


class Meters(float):
    """A float subclass, as unit libraries make them."""


SUBCLASSED = st.recursive(
    st.one_of(st.integers(-(2**63), 2**63), DOUBLES.map(Meters), st.text(max_size=3)),
    lambda parts: st.one_of(
        st.builds(Pose, parts, parts),
        st.lists(parts, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), parts, max_size=3).map(types.MappingProxyType),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(value=SUBCLASSED)
def test_observer_state_keeps_what_info_keeps(value: Any) -> None:
    # Before: a namedtuple, a float subclass or a MappingProxyType in observer state was
    # refused ("$.state could not be serialized", no path), though info kept it.
    portable = to_portable({"v": value})
    assert orjson.loads(state_bytes({"v": value})) == portable


def test_a_namedtuple_observer_state_is_recorded(tmp_path: Any) -> None:
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def observe() -> Any:
        x, _, theta, _ = holder["env"].unwrapped.state
        return {"pose": Pose(Meters(x), float(theta))}

    episode = _two_steps(factory, observe, "probe5-namedtuple")
    assert episode.failures() == []
    bare = gym.make("CartPole-v1")
    bare.reset(seed=0)
    states = [bare.unwrapped.state.tolist()]
    for action in (0, 1):
        bare.step(action)
        states.append(bare.unwrapped.state.tolist())
    states.append(states[-1])  # the read before cleanup
    assert episode.states() == [{"pose": [s[0], s[2]]} for s in states]
    assert EpisodeEvidence.load(episode.save_json(tmp_path / "e.json")) == episode


ORDERS = st.sampled_from(["<", ">", "="])
KINDS = st.sampled_from(["i2", "i8", "u4", "f4", "f8"])


@settings(max_examples=100, deadline=None)
@given(order=ORDERS, kind=KINDS, values=st.lists(st.integers(0, 200), min_size=1, max_size=5))
def test_arrays_of_either_byte_order_get_the_same_answer_on_every_path(
    order: str, kind: str, values: list[int]
) -> None:
    # Before: a big-endian array in observer state was refused ("$.state could not be
    # serialized", no path): orjson writes native byte order only. info kept it.
    array = np.array(values, dtype=order + kind)
    assert orjson.loads(state_bytes({"a": array})) == {"a": array.tolist()}
    assert orjson.loads(state_bytes({"a": array[::-1]})) == {"a": array[::-1].tolist()}
    assert from_portable(to_portable({"a": array}))["a"].tolist() == array.tolist()


class _WireFormat(gym.Env[Any, Any]):
    """A simulator whose observations are read off a big-endian wire format, declared so."""

    observation_space = gym.spaces.Box(0, 100, (2,), np.dtype(">i8"))
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.position = 0
        return self._packet(0), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.position += int(action)
        return self._packet(action), 1.0, self.position >= 4, False, {}

    def _packet(self, action: int) -> np.ndarray:
        return np.frombuffer(np.array([self.position, action], ">i8").tobytes(), ">i8")


def test_a_big_endian_box_is_recorded(tmp_path: Any) -> None:
    # Before: sealing raised "TypeError: numpy array is not native-endianness" and the
    # whole episode was lost.
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = _WireFormat()
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in (2, 1, 1):
            env.step(action)

    episode = capture_episode(
        factory,
        interact,
        case=EvalCase("probe", case_id="probe5-wire"),
        environment_id="e",
        observer_id="o",
        observe=lambda: {"last": holder["env"]._packet(0)},
        seed=0,
        max_steps=5,
    )
    assert episode.failures() == []
    assert episode.ended == "terminated"
    assert [t["observation"] for t in episode.transitions()] == [[2, 2], [3, 1], [4, 1]]
    assert [s["last"] for s in episode.states()] == [[0, 0], [2, 0], [3, 0], [4, 0], [4, 0]]
    assert EpisodeEvidence.load(episode.save_json(tmp_path / "e.json")) == episode


def _two_steps(
    factory: Any, observe: Any, case_id: str, options: dict[str, Any] | None = None
) -> EpisodeEvidence:
    """A capture of actions 0 then 1, seed 0, with ``observe``."""

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)
        env.step(1)

    return capture_episode(
        factory,
        interact,
        case=EvalCase("probe", case_id=case_id),
        environment_id="e",
        observer_id="o",
        observe=observe,
        seed=0,
        max_steps=5,
        options=options,
    )
