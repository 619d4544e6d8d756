"""Exactness of evidence on rarer paths: a Box column where one step is off the
space's dtype, 0-d arrays in observer state, and observer state nested too deep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode

_BIG = 2**60 + 1  # a float64 rounds it to 2**60


class _Scripted(gym.Env[Any, Any]):
    """Returns the scripted observations in order; ends on the last one."""

    def __init__(self, observation_space: Any, observations: list[Any], action_space: Any):
        self.observation_space, self.action_space = observation_space, action_space
        self.observations = observations

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.t = 0
        return self.observations[0], {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self.observations[self.t], 0.0, self.t == len(self.observations) - 1, False, {}


def _capture(env: _Scripted, actions: list[Any], observe: Any = dict) -> EpisodeEvidence:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in actions:
            env.step(action)

    return capture_episode(
        lambda: env,
        interact,
        case=EvalCase("probe", case_id="probe38"),
        environment_id="scripted",
        observer_id="o",
        observe=observe,
        seed=0,
        max_steps=10,
    )


def _reloaded(episode: EpisodeEvidence, tmp_path: Path) -> EpisodeEvidence:
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
    assert loaded.digest == episode.digest
    assert EpisodeEvidence.from_dict(episode.data, episode.blobs).digest == episode.digest
    return loaded


@pytest.mark.parametrize(
    ("space", "odd"),
    [
        # an int64 frame among uint64 ones: the column was promoted to float64
        (spaces.Box(0, 2**64 - 1, (2,), np.uint64), np.array([5, 6], np.int64)),
        # a float list among int64 frames: every int64 beyond 2**53 was rounded
        (spaces.Box(-(2**62), 2**62, (2,), np.int64), [0.5, 1.0]),
        # a bool frame among uint8 ones: written as 1 and 0
        (spaces.Box(0, 255, (2,), np.uint8), np.array([True, False])),
    ],
    ids=["uint64+int64", "int64+floats", "uint8+bool"],
)
def test_one_observation_off_the_box_dtype_leaves_the_others_exact(
    space: spaces.Box, odd: Any, tmp_path: Path
) -> None:
    big = 2**64 - 2 if space.dtype == np.uint64 else _BIG if space.dtype == np.int64 else 200
    frames = [np.array([big, 3], space.dtype), np.array([big - 1, 7], space.dtype), odd]
    episode = _capture(_Scripted(space, [frames[0], *frames], spaces.Discrete(2)), [0, 0, 0])
    assert episode.ended == "terminated"
    for loaded in (episode, _reloaded(episode, tmp_path)):
        recorded = [step["observation"] for step in loaded.transitions()]
        # each sample as the environment returned it: values and JSON types
        want = [frames[0].tolist(), frames[1].tolist(), np.asarray(odd).tolist()]
        assert recorded == want
        assert [[type(v) for v in r] for r in recorded] == [[type(v) for v in w] for w in want]


def test_an_int_action_among_float_actions_in_a_float_box_keeps_its_value(
    tmp_path: Path,
) -> None:
    # Box.contains takes an int64 array for a float64 Box (the cast is "safe"); the
    # environment received 2**60 + 1, and the column recorded 2**60.
    space = spaces.Box(-(2.0**62), 2.0**62, (1,), np.float64)
    sent = [np.array([0.5]), np.array([_BIG], np.int64)]
    env = _Scripted(spaces.Discrete(3), [0, 1, 2], space)
    episode = _capture(env, sent)
    for loaded in (episode, _reloaded(episode, tmp_path)):
        assert [step["action"] for step in loaded.transitions()] == [[0.5], [_BIG]]


def test_a_zero_dimensional_array_in_observer_state_is_its_scalar(tmp_path: Path) -> None:
    # orjson refuses a 0-d array and its fallback made it a list of one: 2.5 read [2.5].
    def observe() -> dict[str, Any]:
        return {"x": np.array(2.5), "n": np.array(7, np.int16), "flag": np.array(True)}

    env = _Scripted(spaces.Discrete(3), [0, 1], spaces.Discrete(2))
    episode = _capture(env, [0], observe)
    want = {"x": 2.5, "n": 7, "flag": True}
    for loaded in (episode, _reloaded(episode, tmp_path)):
        assert loaded.states() == [want, want, want]


def test_a_zero_dimensional_nan_is_refused_naming_the_field_without_an_index() -> None:
    env = _Scripted(spaces.Discrete(3), [0, 1], spaces.Discrete(2))
    episode = _capture(env, [0], lambda: {"x": np.array(np.nan)})
    error = episode.data["steps"]["observer_error"][0]
    assert "$.state.x is " in error
    assert "non-finite" in error


def _nested(depth: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize("depth", [230, 250, 3000])
def test_observer_state_nested_too_deep_is_an_observer_error_naming_the_path(
    depth: int, tmp_path: Path
) -> None:
    # Before: 250 levels made capture_episode raise PortabilityError ("Recursion limit
    # reached", no path), losing the episode; 3000 recorded a bare RecursionError; 230
    # was refused after reset but kept after a step.
    env = _Scripted(spaces.Discrete(3), [0, 1, 2], spaces.Discrete(2))
    deep = {"tree": _nested(depth)}
    episode = _capture(env, [0, 1], lambda: deep)
    loaded = _reloaded(episode, tmp_path)
    assert loaded.ended == "terminated"
    assert len(loaded.transitions()) == 2
    errors = [
        loaded.initial["observer_error"],
        *loaded.data["steps"]["observer_error"],
        loaded.data["final_observer_error"],
    ]
    assert len(errors) == 4
    for error in errors:
        assert "$.state is nested more than 200 levels" in error, error
    assert all(state is None for state in loaded.data["steps"]["state"])
