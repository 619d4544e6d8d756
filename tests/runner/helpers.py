"""Agents, environments and checks the runner tests import by path (``module:name``), so
worker processes and Ray tasks can import them too."""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym

from onrecord.domains.remittance import ScriptedAgent
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.runner import AgentContext, agent_factory

CALLS = "ONRECORD_TEST_AGENT_CALLS"
"""When set, a file every agent here appends one line to per episode."""


def _note_call() -> None:
    path = os.environ.get(CALLS)
    if path:
        with open(path, "a") as handle:
            handle.write("call\n")


def walker(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """FrozenLake 4x4: walk to the goal (down down right right down right)."""
    _note_call()
    for action in (1, 1, 2, 2, 1, 2):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"
    return "gave up"


def slow_walker(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """``walker``, taking 25 ms per episode (time for a test to kill the run)."""
    time.sleep(0.025)
    return walker(env, observation, info)


@agent_factory
def slow_careful(context: AgentContext) -> Any:
    """The careful remittance agent, 4 ms per tool call."""
    _note_call()
    agent = ScriptedAgent("careful", context.case.input)

    def act(observation: Any) -> Any:
        time.sleep(0.004)
        return agent(observation)

    return act


def lake(**config: Any) -> gym.Env[Any, Any]:
    """``module:factory`` environment: the non-slippery 4x4 FrozenLake."""
    return gym.make("FrozenLake-v1", is_slippery=False, **config)


class _UnportableReset(gym.Env[int, int]):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        return 0, {"handle": object()}  # no JSON form: capture cannot record this episode

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, True, False, {}


def unportable(**config: Any) -> gym.Env[int, int]:
    """An environment whose episodes cannot be recorded (a harness error)."""
    return _UnportableReset()


def _steps_at_most(limit: int) -> Any:
    def evaluate(episode: EpisodeEvidence) -> OutcomeVerdict:
        steps = episode.measures["steps"]
        return OutcomeVerdict(steps <= limit, f"at most {limit} steps", {"steps": steps})

    return evaluate


SHORT_V1 = [OutcomeCheck("short", "v1", _steps_at_most(6))]
"""Passes episodes of at most 6 steps."""
SHORT_V2 = [OutcomeCheck("short", "v2", _steps_at_most(3))]
"""The improved check: at most 3 steps."""


class _Pixels(gym.Env[Any, int]):
    """Image observations (24×24 RGB, 1,728 bytes a frame): large enough to be blobs."""

    observation_space = gym.spaces.Box(0, 255, (24, 24, 3), dtype="uint8")
    action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        frame = self.np_random.integers(0, 256, (24, 24, 3), dtype="uint8")
        return frame, float(action), self.steps >= 4, False, {}


def pixels(**config: Any) -> gym.Env[Any, int]:
    """``module:factory`` environment with image observations."""
    return _Pixels()
