"""FrozenLake and CartPole tasks with their checks, policies and reference agents."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from onrecord.case import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.integrations.gymnasium import capture_episode
from onrecord.policy import AcceptancePolicy, CheckRequirement

__all__ = [
    "CARTPOLE_AGENTS",
    "FROZENLAKE_AGENTS",
    "GymTask",
    "cartpole_task",
    "frozenlake_task",
    "run_gym_task",
]

Agent = Callable[[Any], int | None]

# FrozenLake 4x4, not slippery: states are row * 4 + column; the goal is 15.
_GOAL = 15
_PATH_TO_GOAL = (1, 1, 2, 2, 1, 2)  # down down right right down right
_PATH_TO_HOLE = (2, 1)  # right, then down into the hole at state 5


def _scripted(actions: Sequence[int]) -> Callable[[], Agent]:
    def make() -> Agent:
        remaining = list(actions)
        return lambda observation: remaining.pop(0) if remaining else None

    return make


FROZENLAKE_AGENTS: dict[str, Callable[[], Agent]] = {
    "walks_to_goal": _scripted(_PATH_TO_GOAL),
    "walks_into_hole": _scripted(_PATH_TO_HOLE),
    "gives_up_early": _scripted(_PATH_TO_GOAL[:3]),
}

CARTPOLE_AGENTS: dict[str, Callable[[], Agent]] = {
    # Push toward the side the pole is falling to; keeps CartPole up for 500 steps.
    "balances": lambda: lambda obs: int(obs[2] + 0.5 * obs[3] > 0),
    "always_left": lambda: lambda obs: 0,
}


def _reached_goal(episode: EpisodeEvidence) -> OutcomeVerdict:
    transitions = episode.transitions()
    if episode.ended != "terminated" or not transitions:
        return OutcomeVerdict(
            None,
            f"the episode {episode.ended}; only a terminal state "
            "can establish whether the goal was reached",
            {"ended": episode.ended},
        )
    final = transitions[-1]
    passed = final["observation"] == _GOAL and final["reward"] == 1.0
    return OutcomeVerdict(
        passed,
        "require termination on the goal tile",
        {"final_tile": final["observation"], "reward": final["reward"]},
    )


def _no_hole_visited(episode: EpisodeEvidence) -> OutcomeVerdict:
    holes = {5, 7, 11, 12}
    tiles = [t["observation"] for t in episode.transitions()]
    visited = sorted(holes.intersection(tiles))
    return OutcomeVerdict(not visited, "no step may land on a hole", {"holes": visited})


def _survived(episode: EpisodeEvidence) -> OutcomeVerdict:
    steps = episode.measures["steps"]
    if episode.ended == "terminated":
        return OutcomeVerdict(False, f"the pole fell after {steps} steps", {"steps": steps})
    if episode.ended != "truncated":
        return OutcomeVerdict(
            None,
            f"the episode {episode.ended} after {steps} steps; "
            "survival is only established at the time limit",
            {"steps": steps},
        )
    return OutcomeVerdict(True, "survived to the time limit", {"steps": steps})


def _pole_within_limits(episode: EpisodeEvidence) -> OutcomeVerdict:
    """A whole-history check: every observed state, not only the final one."""
    states = [state for state in episode.states() if state is not None]
    worst = max((abs(state["state"][2]) for state in states), default=None)
    if worst is None:
        return OutcomeVerdict(None, "no state was observed", {})
    return OutcomeVerdict(
        worst < 0.2095, "the pole angle stays within ±12°", {"max_abs_angle": worst}
    )


@dataclass(frozen=True)
class GymTask:
    """A case, its environment, observer, checks and acceptance policy."""

    case: EvalCase
    env_id: str
    env_kwargs: dict[str, Any]
    max_steps: int
    checks: tuple[OutcomeCheck, ...]
    policy: AcceptancePolicy
    observe: Callable[[gym.Env[Any, Any]], Any]


def _native(env: gym.Env[Any, Any]) -> Any:
    """The unwrapped environment, whose internal state attributes are not typed."""
    return env.unwrapped


def frozenlake_task() -> GymTask:
    """Reach the goal on the 4x4 non-slippery lake; falling in a hole is a failure."""
    return GymTask(
        EvalCase(
            "Walk from the start to the goal without falling in a hole",
            case_id="frozenlake/goal",
            source_id="gymnasium:FrozenLake-v1",
        ),
        "FrozenLake-v1",
        {"is_slippery": False},
        20,
        (
            OutcomeCheck("reached_goal", "v1", _reached_goal),
            OutcomeCheck("no_hole_visited", "v1", _no_hole_visited),
        ),
        AcceptancePolicy((CheckRequirement("reached_goal"), CheckRequirement("no_hole_visited"))),
        lambda env: {"tile": int(_native(env).s)},
    )


def cartpole_task() -> GymTask:
    """Keep the pole up until the 500-step time limit: truncation is the success ending."""
    return GymTask(
        EvalCase(
            "Balance the pole for 500 steps",
            case_id="cartpole/survive-500",
            source_id="gymnasium:CartPole-v1",
            completion="truncated",
        ),
        "CartPole-v1",
        {},
        500,
        (
            OutcomeCheck("survived", "v1", _survived),
            OutcomeCheck("pole_within_limits", "v1", _pole_within_limits),
        ),
        AcceptancePolicy((CheckRequirement("survived"), CheckRequirement("pole_within_limits"))),
        _cartpole_state,
    )


def _cartpole_state(env: gym.Env[Any, Any]) -> dict[str, list[float]]:
    """The pole's four state values as Python floats. Called every step: ``tolist`` of
    the float64 array gives the same floats as ``float`` of each item, a third of the
    cost; anything else (no state before a reset) goes the general way, and fails the
    same way."""
    state = _native(env).state
    if type(state) is np.ndarray and state.dtype == np.float64 and state.ndim == 1:
        return {"state": state.tolist()}
    return {"state": [float(value) for value in state]}


def run_gym_task(task: GymTask, agent: Agent, *, seed: int) -> EpisodeEvidence:
    """Capture one episode of ``agent`` on ``task``. An agent that returns None gives up:
    the interaction returns before the episode ends."""
    holder: dict[str, gym.Env[Any, Any]] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make(task.env_id, **task.env_kwargs)
        return holder["env"]

    def interact(env: gym.Env[Any, Any], observation: Any, info: dict[str, Any]) -> str:
        while (action := agent(observation)) is not None:
            observation, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                return "finished"
        return "gave up"

    return capture_episode(
        factory,
        interact,
        case=task.case,
        environment_id=f"{task.env_id}/native",
        observer_id="native-state/v1",
        observe=lambda: task.observe(holder["env"]),
        seed=seed,
        max_steps=task.max_steps,
    )
