"""Review round 56: Gymnasium capture across the breadth of Gymnasium.

- A step observation the record cannot hold (a complex number, an int beyond 64 bits, a
  longdouble a double would round, an object, a datetime64, a lone surrogate) is kept
  as that step's environment error, as a NaN is, instead of losing the episode.
- An action its space contains but JSON cannot hold (an infinity in a OneOf, Sequence or
  Graph, a lone surrogate in a Text action) is refused before execution.
- A reward a double cannot hold exactly is an environment error, never rounded; one that
  takes the return beyond the largest double too, and no OverflowError escapes.
- A refused part of a Dict or Tuple action is named with its reason; a uint64 for a
  Discrete is told about its dtype.
- A big-endian Box of blob-sized samples is a blob whatever its number of steps.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.wrappers import TransformObservation, TransformReward
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError, InvalidActionError
from onrecord.integrations.gymnasium import decode_sample
from tests.core.envs import capture_from

_UNBOUNDED = spaces.Box(-np.inf, np.inf, (2,), np.float32)
_INF = np.array([np.inf, 0.0], np.float32)


def _run_to_end(env: Any, observation: Any, info: Any) -> str:
    while True:
        *_, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            return "done"


def _verified(episode: EpisodeEvidence, tmp_path: Path | None = None) -> EpisodeEvidence:
    """The episode as a reader gets it: from its data, and saved and loaded."""
    again = EpisodeEvidence.from_dict(episode.data, episode.blobs)
    assert again.digest == episode.digest
    if tmp_path is not None:
        loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
        assert loaded.digest == episode.digest
    return again


class _ScriptedEnv(gym.Env[Any, Any]):
    """Returns ``observations[t]`` and ``rewards[t]`` at step ``t + 1``; ends after the
    last one."""

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        reset_observation: Any,
        observations: list[Any],
        rewards: list[Any] | None = None,
    ) -> None:
        self.observation_space = observation_space
        self.action_space = spaces.Discrete(2)
        self._reset, self._observations = reset_observation, observations
        self._rewards = rewards or [1.0] * len(observations)
        self.t = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._reset, {}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        self.t += 1
        index = self.t - 1
        done = self.t >= len(self._observations)
        return self._observations[index], self._rewards[index], done, False, {}


# -- 1. an unstorable step observation ------------------------------------------------

_BOX64 = spaces.Box(-np.inf, np.inf, (2,), np.float64)
_TEXT = spaces.Text(5, charset="a\udcff")


@pytest.mark.parametrize(
    ("space", "good", "bad", "named"),
    [
        (_BOX64, np.zeros(2), np.array([1j, 0]), "dtype complex128"),
        (_BOX64, np.zeros(2), [2**70, 0.5], "beyond the 64-bit range"),
        (_BOX64, np.zeros(2), np.array([1, 1], np.longdouble) / 3, "cannot hold exactly"),
        (_BOX64, np.zeros(2), np.array([object(), 1], dtype=object), "dtype object"),
        (_BOX64, np.zeros(2), np.array(["2020-01-01", "2020-01-02"], "M8[D]"), "datetime64"),
        (_BOX64, np.zeros(2), object(), "builtins.object"),
        (_TEXT, "a", "a\udcff", "lone surrogate"),
    ],
    ids=[
        "complex",
        "int-beyond-64-bits",
        "longdouble",
        "object-array",
        "datetime64",
        "object",
        "lone-surrogate",
    ],
)
def test_an_unstorable_step_observation_is_kept_as_an_environment_error(
    space: spaces.Space[Any], good: Any, bad: Any, named: str, tmp_path: Path
) -> None:
    env = _ScriptedEnv(space, good, [good, bad, good])
    episode = capture_from(lambda: env, _run_to_end, max_steps=5)
    steps = episode.data["steps"]
    assert steps["status"] == ["ok", "env_error", "ok"]
    message = steps["error"][1]["message"]
    assert message.startswith("the environment returned an observation at attempt 1 that JSON")
    assert "($.observation" in message
    assert named in message
    assert episode.ended == "terminated"
    assert len(steps["observation"]) == 2
    _verified(episode, tmp_path)


def test_a_real_environment_whose_observation_turns_complex_keeps_its_other_steps() -> None:
    calls = iter(range(10**6))

    def turn(observation: np.ndarray) -> Any:
        return observation.astype(np.complex128) if next(calls) == 2 else observation

    def factory() -> gym.Env[Any, Any]:
        env = gym.make("CartPole-v1")
        return TransformObservation(env, turn, env.observation_space)

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(3):
            env.step(0)

    episode = capture_from(factory, interact, max_steps=3)
    assert episode.data["steps"]["status"] == ["ok", "env_error", "ok"]
    assert "complex128" in episode.data["steps"]["error"][1]["message"]
    _verified(episode)


def test_an_all_longdouble_box_column_is_never_rounded_silently() -> None:
    """A longdouble Box's column matched its space and was cast to doubles in one go,
    rounding 1/3 with status ok; an exact longdouble is still kept."""
    space = spaces.Box(-1, 1, (2,), np.longdouble)
    exact = np.array([0.5, 0.25], np.longdouble)
    inexact = np.array([1, 1], np.longdouble) / 3
    env = _ScriptedEnv(space, exact, [exact, inexact])
    episode = capture_from(lambda: env, _run_to_end, max_steps=5)
    steps = episode.data["steps"]
    assert steps["status"] == ["ok", "env_error"]
    assert "cannot hold exactly" in steps["error"][1]["message"]
    assert steps["observation"] == [[0.5, 0.25]]
    _verified(episode)


# -- 2. an action the space contains but JSON cannot hold -----------------------------


class _Receiving(gym.Env[Any, Any]):
    def __init__(self, action_space: spaces.Space[Any]) -> None:
        self.observation_space = spaces.Discrete(2)
        self.action_space = action_space
        self.received: list[Any] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.received.append(action)
        return 0, 0.0, False, False, {}


_GRAPH_EDGES = spaces.Graph(spaces.Discrete(3), spaces.Box(-np.inf, np.inf, (1,), np.float32))


@pytest.mark.parametrize(
    ("space", "action", "reason"),
    [
        (spaces.OneOf((spaces.Discrete(3), _UNBOUNDED)), (1, _INF), "action[1]: it holds a NaN"),
        (spaces.Sequence(_UNBOUNDED), (_INF,), "action[0]: it holds a NaN"),
        (
            spaces.Sequence(_UNBOUNDED, stack=True),
            np.array([_INF]),
            "action[0, 0] is np.float32(inf); non-finite numbers have no JSON form",
        ),
        (
            spaces.Graph(_UNBOUNDED, None),
            spaces.GraphInstance(np.array([_INF]), None, None),
            "action.nodes[0]: it holds a NaN",
        ),
        (
            _GRAPH_EDGES,
            spaces.GraphInstance(
                np.array([0, 1]), np.array([[np.inf]], np.float32), np.array([[0, 1]])
            ),
            "action.edges[0]: it holds a NaN",
        ),
        (_TEXT, "a\udcff", "lone surrogate"),
        (
            spaces.Box(-1, 1, (2,), np.longdouble),
            np.array([1, 1], np.longdouble) / 3,
            "cannot hold exactly",
        ),
    ],
    ids=[
        "oneof",
        "sequence",
        "stacked-sequence",
        "graph-nodes",
        "graph-edges",
        "text",
        "longdouble-box",
    ],
)
def test_an_action_json_cannot_hold_is_refused_before_execution(
    space: spaces.Space[Any], action: Any, reason: str
) -> None:
    env = _Receiving(space)
    refused: list[InvalidActionError] = []

    def interact(env: Any, observation: Any, info: Any) -> None:
        try:
            env.step(action)
        except InvalidActionError as exc:
            refused.append(exc)

    episode = capture_from(lambda: env, interact, max_steps=3)
    assert env.received == []
    assert episode.data["steps"]["status"] == ["invalid_action"]
    assert episode.data["steps"]["action"] == []
    assert len(refused) == 1
    assert "refused before execution" in str(refused[0])
    assert reason in episode.data["steps"]["error"][0]["message"]
    _verified(episode)


# -- 3. rewards whose sum overflows a double, or beyond a double ----------------------


def _rewarded(rewards: list[Any]) -> EpisodeEvidence:
    env = _ScriptedEnv(spaces.Discrete(2), 0, [0] * len(rewards), rewards)
    return capture_from(lambda: env, _run_to_end, max_steps=len(rewards) + 1)


@pytest.mark.parametrize(
    ("rewards", "status", "kept", "total"),
    [
        ([1e308, 1e308], ["ok", "env_error"], [1e308], 1e308),
        ([1e308, 9e307], ["ok", "env_error"], [1e308], 1e308),
        (
            [1e308, 1e308, -1e308, 1e308],
            ["ok", "env_error", "ok", "ok"],
            [1e308, -1e308, 1e308],
            1e308,
        ),
        ([-1e308, -1e308, 5.0], ["ok", "env_error", "ok"], [-1e308, 5.0], -1e308 + 5.0),
        ([10**400, 2.0], ["env_error", "ok"], [2.0], 2.0),
    ],
    ids=["constant", "varying", "back-and-beyond", "negative", "int-beyond-a-double"],
)
def test_a_return_beyond_a_double_keeps_the_episode(
    rewards: list[Any], status: list[str], kept: list[float], total: float, tmp_path: Path
) -> None:
    episode = _rewarded(rewards)
    steps = episode.data["steps"]
    assert steps["status"] == status
    assert steps["reward"] == kept
    assert episode.measures["return"] == total
    refused = next(error for error in steps["error"] if error)
    assert "largest number a double" in refused["message"]
    _verified(episode, tmp_path)


def test_a_real_environment_whose_return_overflows_keeps_every_step() -> None:
    def factory() -> gym.Env[Any, Any]:
        return TransformReward(gym.make("CartPole-v1"), lambda reward: reward * 1e308)

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(3):
            env.step(0)

    episode = capture_from(factory, interact, max_steps=3)
    steps = episode.data["steps"]
    assert steps["status"] == ["ok", "env_error", "env_error"]
    assert steps["reward"] == [1e308]
    assert "the sum of the rewards before it, 1e+308" in steps["error"][1]["message"]
    _verified(episode)


def test_the_verifier_refuses_rewards_beyond_a_double_naming_them() -> None:
    episode = _rewarded([1.0, 2.0])
    data = copy.deepcopy(episode.data)
    data.pop("digest")
    data["steps"]["reward"] = [1e308, 1e308]
    data["digest"] = content_digest(data)
    with pytest.raises(ConsistencyError, match=r"steps\.reward sums beyond the largest"):
        EpisodeEvidence.from_dict(data)


def test_a_return_within_a_double_is_kept_whole_though_fsum_overflows_on_the_way(
    tmp_path: Path,
) -> None:
    """math.fsum raises on 1e308 + 1e308 - 1e308 (its partial sums overflow), though the
    exact sum is 1e308: every step is kept, and the verifier agrees on the return."""
    with pytest.raises(OverflowError):
        math.fsum([1e308, 1e308, -1e308])
    episode = _rewarded([1e308, 1e308, -1e308])
    assert episode.data["steps"]["status"] == ["ok", "ok", "ok"]
    assert episode.measures["return"] == 1e308
    _verified(episode, tmp_path)


# -- 4. a reward a double would round ---------------------------------------------------


@pytest.mark.parametrize(
    ("reward", "nearest"),
    [
        (2**53 + 1, "9007199254740992.0"),
        (np.int64(2**62 + 1), "4.611686018427388e+18"),
        (np.array(2**62 + 1), "4.611686018427388e+18"),
        (np.longdouble(1) / 3, "0.3333333333333333"),
        (Fraction(1, 3), "0.3333333333333333"),
    ],
    ids=["int", "int64", "0-d-int64", "longdouble", "fraction"],
)
def test_a_reward_a_double_would_round_is_an_environment_error(reward: Any, nearest: str) -> None:
    episode = _rewarded([np.float32(0.1), reward, True, Fraction(1, 2), 2**53, np.int64(-3)])
    steps = episode.data["steps"]
    assert steps["status"] == ["ok", "env_error", "ok", "ok", "ok", "ok"]
    # The others exactly as given: a float32's own value, a bool as 1.0, ints to 2**53.
    assert steps["reward"] == [float(np.float32(0.1)), 1.0, 0.5, 2.0**53, -3.0]
    message = steps["error"][1]["message"]
    assert "cannot hold exactly: the nearest double, " + nearest in message
    assert message.startswith("the environment returned the reward ")
    _verified(episode)


@pytest.mark.parametrize("narrow", [np.float32, np.float16])
def test_a_narrow_numpy_reward_equal_in_its_own_dtype_keeps_its_value(narrow: Any) -> None:
    """NumPy compares ``np.float32(0.1) == 0.1`` in float32: the column looked constant,
    and each reward was written as 0.1 beside a return summed from the real values, a
    record that then failed verification."""
    episode = _rewarded([0.1, narrow(0.1), 0.1])
    assert episode.data["steps"]["status"] == ["ok", "ok", "ok"]
    assert episode.data["steps"]["reward"] == [0.1, float(narrow(0.1)), 0.1]
    _verified(episode)


def test_a_real_environment_giving_fractions_is_never_rounded() -> None:
    def factory() -> gym.Env[Any, Any]:
        return TransformReward(gym.make("CartPole-v1"), lambda reward: Fraction(int(reward), 3))

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    episode = capture_from(factory, interact, max_steps=1)
    assert episode.data["steps"]["status"] == ["env_error"]
    assert "Fraction(1, 3)" in episode.data["steps"]["error"][0]["message"]


_REWARDS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([1e308, -1e308, 10**400, Fraction(1, 3), np.longdouble(1) / 3]),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(np.int64),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(np.float32),
)


def _exact_double(reward: Any) -> bool:
    try:
        number = float(reward)
    except OverflowError:
        return False
    if isinstance(reward, np.integer):
        reward = int(reward)  # NumPy compares an int64 with a float through a float64
    return bool(number == reward)


def _expected_statuses(rewards: list[Any]) -> tuple[list[str], Fraction]:
    """The model: a reward is kept when a double holds it exactly. When the exact sum of
    those is beyond a double, each that takes the exact sum of the rewards kept before
    it there is refused too."""
    exact = [_exact_double(reward) for reward in rewards]
    total = sum(
        (Fraction(float(r)) for r, ok in zip(rewards, exact, strict=True) if ok), Fraction(0)
    )
    if _fits(total):
        return ["ok" if ok else "env_error" for ok in exact], total
    statuses, total = [], Fraction(0)
    for reward, ok in zip(rewards, exact, strict=True):
        candidate = total + Fraction(float(reward)) if ok else None
        fits = candidate is not None and _fits(candidate)
        statuses.append("ok" if fits else "env_error")
        if fits and candidate is not None:
            total = candidate
    return statuses, total


def _fits(number: Fraction) -> bool:
    try:
        return math.isfinite(float(number))
    except OverflowError:
        return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rewards=st.lists(_REWARDS, min_size=1, max_size=6))
def test_every_episode_seals_and_keeps_each_reward_exactly(rewards: list[Any]) -> None:
    episode = _rewarded(rewards)
    steps = episode.data["steps"]
    statuses, total = _expected_statuses(rewards)
    assert steps["status"] == statuses
    kept = [r for r, status in zip(rewards, statuses, strict=True) if status == "ok"]
    assert steps["reward"] == [float(reward) for reward in kept]
    assert episode.measures["return"] == float(total)
    _verified(episode)


_GOOD_OBSERVATIONS = st.one_of(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=2, max_size=2).map(
        np.array
    ),
    st.lists(st.integers(-(2**53), 2**53), min_size=2, max_size=2),
    st.just(np.array([0.5, 0.25], np.longdouble)),
)
_BAD_OBSERVATIONS = st.sampled_from(
    [
        np.array([np.nan, 0.0]),
        np.array([1j, 0]),
        [2**70, 0.5],
        np.array([1, 1], np.longdouble) / 3,
        np.array([object(), 1], dtype=object),
        np.array(["2020-01-01", "2020-01-02"], "M8[D]"),
        "a\udcff",
        np.ma.masked_array(np.zeros(2), [1, 0]),
    ]
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.one_of(
            _GOOD_OBSERVATIONS.map(lambda value: (value, "ok")),
            _BAD_OBSERVATIONS.map(lambda value: (value, "env_error")),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_an_episode_with_unstorable_observations_seals_with_each_one_named(
    steps: list[tuple[Any, str]],
) -> None:
    observations = [value for value, _ in steps]
    env = _ScriptedEnv(_BOX64, np.zeros(2), observations)
    episode = capture_from(lambda: env, _run_to_end, max_steps=len(steps) + 1)
    recorded = episode.data["steps"]
    assert recorded["status"] == [status for _, status in steps]
    for index, (_, status) in enumerate(steps):
        if status != "ok":
            assert (
                f"observation at attempt {index} that JSON" in recorded["error"][index]["message"]
            )
    assert len(recorded["observation"]) == recorded["status"].count("ok")
    _verified(episode)


# -- 5. refusal messages ----------------------------------------------------------------

_F32 = spaces.Box(-1, 1, (2,), np.float32)
_F64 = np.array([0.1, 0.2])


@pytest.mark.parametrize(
    ("space", "action", "reason"),
    [
        (
            spaces.Dict({"arm": _F32}),
            {"arm": _F64},
            "action['arm']: its dtype float64 does not cast safely to the space's float32: "
            "send action['arm'].astype(np.float32)",
        ),
        (
            spaces.Tuple((spaces.Discrete(2), _F32)),
            (1, _F64),
            "action[1]: its dtype float64 does not cast safely to the space's float32: "
            "send action[1].astype(np.float32)",
        ),
        (
            spaces.Tuple((spaces.Dict({"a": _F32}),)),
            ({"a": np.array([0.1, 5.0], np.float32)},),
            "action[0]['a']: it lies outside the space's bounds: "
            "clip it with np.clip(action[0]['a'], low, high)",
        ),
        (
            spaces.Discrete(3),
            np.uint64(2),
            "its dtype uint64 does not cast safely to the space's int64: send int(action)",
        ),
        (
            spaces.Dict({"n": spaces.Discrete(3)}),
            {"n": 7},
            "action['n']: an action of this space is an int from 0 to 2",
        ),
    ],
    ids=["dict-dtype", "tuple-dtype", "nested-bounds", "uint64-discrete", "dict-discrete"],
)
def test_a_refusal_names_the_refused_part_and_its_reason(
    space: spaces.Space[Any], action: Any, reason: str
) -> None:
    env = _Receiving(space)

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(action)

    episode = capture_from(lambda: env, interact, max_steps=2)
    message = episode.data["steps"]["error"][0]["message"]
    assert f": {reason}; it was refused before execution" in message


# -- 6. a big-endian Box of blob-sized samples ------------------------------------------


class _BigEndian(gym.Env[Any, Any]):
    def __init__(self, steps: int) -> None:
        self.observation_space = spaces.Box(-10, 10, (400,), np.dtype(">f4"))
        self.action_space = spaces.Discrete(2)
        self.steps, self.t = steps, 0
        self.sent: list[np.ndarray] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return np.full(400, 0.1, ">f4"), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        observation = (np.arange(400) * 0.37 + self.t).astype(">f4")
        self.sent.append(observation.copy())
        return observation, 0.0, self.t >= self.steps, False, {}


def test_a_big_endian_box_column_is_a_blob_whatever_its_length(tmp_path: Path) -> None:
    """One step was a blob already; two or more went to JSON lists (39 KB for five)."""
    dtypes = []
    for count in (1, 2, 5):
        env = _BigEndian(count)
        episode = capture_from(lambda env=env: env, _run_to_end, max_steps=10)
        column = episode.data["steps"]["observation"]
        assert set(column) == {"$blob"}, count
        assert column["$blob"]["shape"] == [count, 400]
        dtypes.append(column["$blob"]["dtype"])
        loaded = _verified(episode, tmp_path)
        for sent, transition in zip(env.sent, loaded.transitions(), strict=True):
            decoded = decode_sample(env.observation_space, transition["observation"])
            assert decoded.dtype == np.dtype(">f4")  # the space's own, as documented
            assert decoded.tobytes() == sent.tobytes()
    assert dtypes == [np.dtype("f4").newbyteorder("=").str] * 3  # every length alike
