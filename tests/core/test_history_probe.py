"""Whole-history helpers give the same detached values on fresh, saved, rebuilt and
pickled evidence, over random small environments of many space types, with failing
steps; decoding a recorded observation with its space gives back what the environment
returned; and samples off their Dict, Tuple or Discrete space are never silently
changed."""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode, decode_sample

SPACES: dict[str, spaces.Space[Any]] = {
    "float16": spaces.Box(-2, 2, (3,), np.float16),
    "int8": spaces.Box(-5, 5, (2, 2), np.int8),
    "uint64": spaces.Box(0, 2**64 - 1, (3,), np.uint64),
    "float32 frame": spaces.Box(0, 1, (16, 17), np.float32),
    "uint8 frame": spaces.Box(0, 255, (32, 40), np.uint8),
    "unbounded": spaces.Box(-np.inf, np.inf, (2,), np.float64),
    "discrete": spaces.Discrete(5, start=-3),
    "multidiscrete": spaces.MultiDiscrete([[3, 4], [2, 2]], start=[[1, -1], [0, 0]]),
    "multibinary": spaces.MultiBinary([2, 3]),
    "dict": spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(-1, 1, (2,), np.float32)}),
    "tuple": spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (1,), np.float64))),
    "dict in tuple": spaces.Tuple(
        (
            spaces.Dict({"x": spaces.MultiBinary(2), "y": spaces.Discrete(4, start=2)}),
            spaces.Text(5),
        )
    ),
    "text": spaces.Text(6),
    "blob key": spaces.Dict({"$blob": spaces.Discrete(3)}),
}
ACTIONS = ("discrete", "multidiscrete", "dict", "float16", "uint8 frame", "dict in tuple")


class RandomEnv(gym.Env[Any, Any]):
    """Samples its observation space; ``fail_at`` makes that step raise."""

    def __init__(self, observation: str, action: str, length: int, fail_at: int) -> None:
        self.observation_space, self.action_space = SPACES[observation], SPACES[action]
        self.length, self.fail_at, self.t = length, fail_at, 0
        self.returned: list[Any] = []

    def _sample(self) -> Any:
        space = self.observation_space
        if isinstance(space, spaces.Box) and space.dtype == np.uint64:  # the whole range
            return self.np_random.integers(2**62, 2**64 - 1, space.shape, np.uint64, True)
        return space.sample()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        self.returned = [self._sample()]
        return self.returned[0], {"start": np.arange(3, dtype=np.int16)}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        if self.t == self.fail_at:
            raise RuntimeError("simulator crashed")
        self.returned.append(self._sample())
        info = {"t": self.t, "trace": np.linspace(0, self.t, 130)}  # >= 1 KiB
        return self.returned[-1], self.t * 0.5, self.t >= self.length, False, info


def _capture(
    observation: str, action: str, length: int, fail_at: int, invalid: bool, observer_fails: int
) -> tuple[EpisodeEvidence, RandomEnv]:
    made: list[RandomEnv] = []
    reads = [0]

    def factory() -> RandomEnv:
        made.append(RandomEnv(observation, action, length, fail_at))
        return made[0]

    def observe() -> Any:
        reads[0] += 1
        if reads[0] == observer_fails:
            raise OSError("observer lost its connection")
        return {"t": made[0].t, "heat": np.full(300, made[0].t, np.float32)}

    def interact(env: Any, first: Any, info: Any) -> None:
        for index in range(length + 1):
            if invalid and index == 1:
                with contextlib.suppress(Exception):
                    env.step("not an action")
            try:
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            except RuntimeError:
                continue
            if terminated or truncated:
                return

    episode = capture_episode(
        factory,
        interact,
        case=EvalCase("random"),
        environment_id="random/v1",
        observer_id="o",
        observe=observe,
        seed=length,
        max_steps=10,
    )
    return episode, made[0]


def _views(episode: EpisodeEvidence) -> list[Any]:
    return [
        episode.states(),
        episode.attempts(),
        episode.transitions(),
        episode.failures(),
        episode.data,
        episode.initial,
        episode.actions(),
    ]


def _same(native: Any, decoded: Any) -> bool:
    if isinstance(native, dict):
        return decoded.keys() == native.keys() and all(_same(native[k], decoded[k]) for k in native)
    if isinstance(native, tuple):
        return len(native) == len(decoded) and all(map(_same, native, decoded))
    if isinstance(native, np.ndarray):
        return (
            isinstance(decoded, np.ndarray)
            and decoded.dtype == native.dtype
            and np.array_equal(decoded, native)
        )
    return bool(decoded == native)


def _mutate(value: Any) -> None:
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in list(items):
        if isinstance(item, dict | list):
            _mutate(item)
        else:
            value[key] = "changed"


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    observation=st.sampled_from(sorted(SPACES)),
    action=st.sampled_from(ACTIONS),
    length=st.integers(1, 4),
    fail_at=st.integers(0, 4),
    invalid=st.booleans(),
    observer_fails=st.integers(0, 5),
)
def test_history_is_the_same_however_the_evidence_travelled(
    tmp_path: Path,
    observation: str,
    action: str,
    length: int,
    fail_at: int,
    invalid: bool,
    observer_fails: int,
) -> None:
    episode, env = _capture(observation, action, length, fail_at, invalid, observer_fails)
    fresh = _views(episode)
    digest, record = episode.digest, episode.to_bytes()
    path = tmp_path / "episode.json"
    episode.save_json(path)
    travelled = [
        EpisodeEvidence.load(path),
        EpisodeEvidence.from_dict(episode.data, episode.blobs),
        pickle.loads(pickle.dumps(episode)),
    ]
    expected = orjson.dumps(fresh, option=orjson.OPT_SORT_KEYS)
    for other in travelled:
        assert other == episode
        assert orjson.dumps(_views(other), option=orjson.OPT_SORT_KEYS) == expected
    samples = [episode.initial["observation"]]
    samples += [step["observation"] for step in episode.transitions()]
    assert len(samples) == len(env.returned)
    for sample, native in zip(samples, env.returned, strict=True):
        assert _same(native, decode_sample(env.observation_space, sample))
    for view in _views(episode):
        _mutate(view)
    assert episode.digest == digest
    assert episode.to_bytes() == record
    assert orjson.dumps(_views(episode), option=orjson.OPT_SORT_KEYS) == expected


def _episode_of(space: spaces.Space[Any], returned: list[Any]) -> EpisodeEvidence:
    class Replay(gym.Env[Any, Any]):
        observation_space, action_space = space, spaces.Discrete(2)

        def reset(self, *, seed: Any = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
            self.t = 0
            return returned[0], {}

        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            self.t += 1
            return returned[self.t], 0.0, self.t == len(returned) - 1, False, {}

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in returned[1:]:
            env.step(0)

    return capture_episode(
        Replay,
        interact,
        case=EvalCase("replay"),
        environment_id="replay/v1",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=10,
    )


def test_a_sample_off_its_multidiscrete_space_is_kept_as_returned() -> None:
    space = spaces.MultiDiscrete([3, 3])
    episode = _episode_of(space, [np.array([0, 1]), [1, 2], np.array([2, 0])])
    assert [step["observation"] for step in episode.transitions()] == [[1, 2], [2, 0]]
    assert EpisodeEvidence.from_dict(episode.data).transitions() == episode.transitions()


def test_a_float_off_its_discrete_space_is_not_truncated() -> None:
    episode = _episode_of(spaces.Discrete(3), [0, 2.7, 1])
    assert [step["observation"] for step in episode.transitions()] == [2.7, 1]


@pytest.mark.parametrize(
    ("space", "odd"),
    [
        (spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Discrete(2)}), {"a": 1}),
        (spaces.Dict({"a": spaces.Discrete(3)}), {"a": 1, "extra": 5}),
        (spaces.Dict({"a": spaces.Discrete(3)}), 5),
        (spaces.Tuple((spaces.MultiDiscrete([2, 2]), spaces.Discrete(2))), ([1, 1],)),
        (spaces.Tuple((spaces.Discrete(2),)), (1, 7)),
    ],
)
def test_a_sample_a_composite_layout_cannot_hold_is_refused_by_path(
    space: spaces.Space[Any], odd: Any
) -> None:
    good = space.sample()
    with pytest.raises(PortabilityError, match=r"\$\.steps\.observation\[0\] is"):
        _episode_of(space, [good, odd, good])


def test_a_dict_space_with_a_blob_key_is_not_taken_for_a_blob(tmp_path: Path) -> None:
    space = spaces.Dict({"$blob": spaces.Discrete(3)})
    returned = [{"$blob": 0}, {"$blob": 2}, {"$blob": 1}]
    episode = _episode_of(space, returned)
    assert episode.initial["observation"] == {"$blob": 0}
    assert [step["observation"] for step in episode.transitions()] == [{"$blob": 2}, {"$blob": 1}]
    episode.save_json(tmp_path / "episode.json")
    assert EpisodeEvidence.load(tmp_path / "episode.json").transitions() == episode.transitions()
