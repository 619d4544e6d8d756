"""Dict, Tuple, MultiDiscrete, MultiBinary and Text spaces: captured in their space's
batched ``to_jsonable`` layout, read back one sample at a time, and decoded exactly by
the same space's ``from_jsonable``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode, decode_sample

GOAL_SPACE = spaces.Dict(
    {
        "position": spaces.Box(-1.0, 1.0, (2,), np.float32),
        "goal": spaces.Discrete(4, start=1),
        "sensors": spaces.Tuple((spaces.MultiBinary(3), spaces.Box(0, 9, (2, 2), np.int64))),
        "note": spaces.Text(5),
    }
)
ACTION_SPACE = spaces.Dict({"move": spaces.MultiDiscrete([3, 2]), "grip": spaces.Discrete(2)})


class GoalEnv(gym.Env[Any, Any]):
    """Goal-conditioned observations as nested dicts and tuples; ends after three steps."""

    observation_space = GOAL_SPACE
    action_space = ACTION_SPACE

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        return self.observation_space.sample(), 0.5, self.steps >= 3, False, {}


def _capture(factory: Any, steps: int, seen: dict[str, list[Any]]) -> EpisodeEvidence:
    def interact(env: Any, observation: Any, info: Any) -> None:
        seen["observations"].append(observation)
        for _ in range(steps):
            action = env.action_space.sample()
            seen["actions"].append(action)
            observation, _, terminated, truncated, _ = env.step(action)
            seen["observations"].append(observation)
            if terminated or truncated:
                return

    return capture_episode(
        factory,
        interact,
        case=EvalCase("composite", case_id="composite"),
        environment_id="composite",
        observer_id="none",
        observe=dict,
        seed=5,
        max_steps=steps,
    )


def _same(expected: Any, got: Any) -> bool:
    """Leaf-by-leaf equality of samples (arrays by value and dtype)."""
    if isinstance(expected, dict):
        return expected.keys() == got.keys() and all(_same(expected[k], got[k]) for k in expected)
    if isinstance(expected, tuple):
        return len(expected) == len(got) and all(map(_same, expected, got))
    if isinstance(expected, np.ndarray):
        return np.array_equal(expected, got) and expected.dtype == np.asarray(got).dtype
    return bool(expected == got)


def test_nested_spaces_are_recorded_and_decoded_exactly(tmp_path: Path) -> None:
    seen: dict[str, list[Any]] = {"observations": [], "actions": []}
    episode = _capture(GoalEnv, 5, seen)
    assert episode.ended == "terminated"
    assert episode.coverage_issues == ()
    episode.save_json(tmp_path / "episode.json")
    loaded = EpisodeEvidence.load(tmp_path / "episode.json")
    for evidence in (episode, loaded):
        initial, *after = seen["observations"]
        steps = evidence.data["steps"]
        decoded = GOAL_SPACE.from_jsonable(steps["observation"])
        assert len(decoded) == len(after) == 3
        assert all(map(_same, after, decoded))
        actions = ACTION_SPACE.from_jsonable(steps["action"])
        assert all(map(_same, seen["actions"], actions))
        # One sample at a time: the batch taken apart along the space's layout.
        for index, transition in enumerate(evidence.transitions()):
            assert _same(after[index], decode_sample(GOAL_SPACE, transition["observation"]))
            assert _same(seen["actions"][index], decode_sample(ACTION_SPACE, transition["action"]))
        assert _same(initial, decode_sample(GOAL_SPACE, evidence.initial["observation"]))


def test_a_real_tuple_environment_blackjack() -> None:
    seen: dict[str, list[Any]] = {"observations": [], "actions": []}
    episode = _capture(lambda: gym.make("Blackjack-v1"), 10, seen)
    space = gym.make("Blackjack-v1").observation_space
    assert isinstance(space, spaces.Tuple)
    assert episode.coverage_issues == ()
    assert episode.ended == "terminated"
    initial, *after = seen["observations"]
    assert episode.initial["observation"] == [int(part) for part in initial]
    assert [t["observation"] for t in episode.transitions()] == [
        [int(part) for part in observation] for observation in after
    ]
    decoded = space.from_jsonable(episode.data["steps"]["observation"])
    assert decoded == [tuple(int(part) for part in observation) for observation in after]


@pytest.mark.parametrize(
    "space",
    [
        spaces.MultiDiscrete([5, 2, 3]),
        spaces.MultiBinary(6),
        spaces.Text(8, min_length=1),
        spaces.Tuple((spaces.Discrete(3), spaces.Dict({"a": spaces.Box(0, 1, (1,))}))),
        spaces.Sequence(spaces.Box(0, 1, (2,), np.float32)),
        spaces.Sequence(spaces.Discrete(3), stack=True),
        spaces.OneOf((spaces.Discrete(3), spaces.Box(0, 1, (2,), np.float32))),
        spaces.Graph(node_space=spaces.Box(0, 1, (2,), np.float32), edge_space=spaces.Discrete(3)),
    ],
    ids=[
        "multidiscrete",
        "multibinary",
        "text",
        "tuple-of-dict",
        "sequence",
        "stacked-sequence",
        "oneof",
        "graph",
    ],
)
def test_every_gymnasium_space_round_trips(space: spaces.Space[Any]) -> None:
    class Env(gym.Env[Any, Any]):
        observation_space = space
        action_space = spaces.Discrete(2)

        def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
            super().reset(seed=seed)
            self.observation_space.seed(seed)
            return self.observation_space.sample(), {}

        def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            return self.observation_space.sample(), 0.0, False, False, {}

    seen: dict[str, list[Any]] = {"observations": [], "actions": []}
    episode = _capture(Env, 4, seen)
    assert episode.ended == "returned"  # interact stopped after its four steps
    initial, *after = seen["observations"]

    def encoded(sample: Any) -> Any:  # the space's own encoding: equal iff equal samples
        return space.to_jsonable([sample])

    decoded = space.from_jsonable(episode.data["steps"]["observation"])
    assert list(map(encoded, decoded)) == list(map(encoded, after))
    assert encoded(decode_sample(space, episode.initial["observation"])) == encoded(initial)
    for observation, transition in zip(after, episode.transitions(), strict=True):
        assert encoded(decode_sample(space, transition["observation"])) == encoded(observation)
