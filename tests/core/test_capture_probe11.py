"""Vector environments are refused with a message that says capture does not support
them; observations with empty Dict or Tuple parts decode after loading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode, decode_sample
from tests.core.envs import GenericEnv, capture_from


def _capture(factory: Any) -> EpisodeEvidence:
    def interact(env: Any, observation: Any, info: Any) -> None:
        raise AssertionError("interact must not run without an environment")

    return capture_episode(
        factory,
        interact,
        case=EvalCase("balance", case_id="cartpole/vector"),
        environment_id="CartPole-v1",
        observer_id="none",
        observe=dict,
        seed=3,
        max_steps=5,
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make_vec("CartPole-v1", num_envs=2),
        lambda: gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 2),
    ],
    ids=["make_vec", "SyncVectorEnv"],
)
def test_a_vector_environment_is_refused_as_unsupported_with_the_fix(
    make: Any, tmp_path: Path
) -> None:
    made: list[Any] = []

    def factory() -> Any:
        made.append(make())
        return made[-1]

    episode = _capture(factory)

    assert episode.ended == "setup_error"
    message = episode.data["events"][0]["message"]
    assert "gymnasium.vector.VectorEnv" in message
    assert "does not support vector environments" in message
    assert "gym.make, not gym.make_vec" in message
    saved = episode.save_json(tmp_path / "vector.json")
    assert EpisodeEvidence.load(saved).data["events"][0]["message"] == message
    verified = subprocess.run(
        [sys.executable, "-m", "onrecord", "verify", str(saved)], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


class _EmptyPartsEnv(gym.Env[Any, Any]):
    """Observations with empty parts (a Dict of no keys nested in one that has some, an
    empty Tuple): valid Gymnasium spaces, whose own ``from_jsonable`` cannot size the
    batch of an empty Dict or Tuple."""

    observation_space = spaces.Dict(
        {"flags": spaces.Dict({}), "extra": spaces.Tuple(()), "goal": spaces.Discrete(3)}
    )
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.steps = 0
        return {"flags": {}, "extra": (), "goal": np.int64(0)}, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        observation = {"flags": {}, "extra": (), "goal": np.int64(self.steps)}
        return observation, 1.0, self.steps >= 2, False, {}


def test_observations_with_empty_dict_and_tuple_parts_decode_after_loading(
    tmp_path: Path,
) -> None:
    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)
        env.step(1)

    episode = capture_episode(
        _EmptyPartsEnv,
        interact,
        case=EvalCase("empty parts", case_id="empty-parts"),
        environment_id="empty-parts-v1",
        observer_id="none",
        observe=dict,
        seed=3,
        max_steps=2,
    )
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "empty.json"))

    space = _EmptyPartsEnv.observation_space
    assert loaded.ended == "terminated"
    decoded = [decode_sample(space, loaded.initial["observation"])]
    decoded += [decode_sample(space, step["observation"]) for step in loaded.transitions()]
    assert decoded == [{"flags": {}, "extra": (), "goal": goal} for goal in (0, 1, 2)]
    assert all(type(sample["goal"]) is np.int64 for sample in decoded)
    assert decode_sample(spaces.Tuple(()), []) == ()
    assert decode_sample(spaces.Dict({}), {}) == {}


class _PlainSpace(gym.spaces.Space[int]):
    """A user's space with gymnasium's default repr, which prints the memory address."""

    def sample(self, mask: Any = None, probability: Any = None) -> int:
        return 0

    def contains(self, x: Any) -> bool:
        return x == 0


def test_a_space_repr_records_no_memory_address() -> None:
    """The same episode records the same space description in every process: a default
    repr prints the instance's memory address, so two captures here would differ too."""

    def make() -> gym.Env[Any, Any]:
        env = GenericEnv(lambda env, action: ({"inner": 0}, 0.0, True, False, {}))
        env.observation_space = spaces.Dict({"inner": _PlainSpace()})
        env.action_space = _PlainSpace()
        return env

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        wrapped.step(0)

    first, second = (capture_from(make, interact) for _ in range(2))
    described = [
        (episode.environment["observation_space"], episode.environment["action_space"])
        for episode in (first, second)
    ]
    assert described[0] == described[1]
    assert described[0][1]["repr"].endswith("_PlainSpace object>")
    assert " at 0x" not in str(described[0])
