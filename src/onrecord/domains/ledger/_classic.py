"""Native Gymnasium checks in the same run: FrozenLake (discrete observations, a terminal
failure) and CartPole (array observations, truncation as the success ending)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.case import Completion
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.integrations.gymnasium import capture_episode

__all__ = ["CLASSIC_RUNS", "ClassicRun", "capture_classic", "classic_checks", "classic_policy"]

_RIGHT, _DOWN = 2, 1  # FrozenLake actions; the 4x4 map's goal is tile 15


@dataclass(frozen=True)
class ClassicRun:
    """One native-environment episode and the decision it must get."""

    name: str
    """Run name, also the case id."""
    env_id: str
    """Gymnasium id."""
    kwargs: dict[str, Any]
    """``gymnasium.make`` keyword arguments."""
    policy: str
    """``script`` (fixed actions) or ``balance`` / ``push_left`` (CartPole)."""
    actions: tuple[int, ...]
    """Actions of a scripted run."""
    completion: Completion
    """Which ending counts as complete."""
    expected: str
    """The decision the full policy must reach."""


CLASSIC_RUNS = (
    ClassicRun(
        "frozenlake_goal",
        "FrozenLake-v1",
        {"is_slippery": False},
        "script",
        (_RIGHT, _RIGHT, _DOWN, _DOWN, _DOWN, _RIGHT),
        "terminated",
        "accept",
    ),
    ClassicRun(
        "frozenlake_hole",
        "FrozenLake-v1",
        {"is_slippery": False},
        "script",
        (_DOWN, _DOWN, _DOWN),
        "terminated",
        "reject",
    ),
    ClassicRun(
        "cartpole_survives",
        "CartPole-v1",
        {"max_episode_steps": 40},
        "balance",
        (),
        "truncated",
        "accept",
    ),
    ClassicRun(
        "cartpole_falls",
        "CartPole-v1",
        {"max_episode_steps": 40},
        "push_left",
        (),
        "truncated",
        "reject",
    ),
    ClassicRun(
        "cartpole_truncation_unexpected",
        "CartPole-v1",
        {"max_episode_steps": 40},
        "balance",
        (),
        "terminated",
        "indeterminate",
    ),
)


def _next_action(run: ClassicRun, index: int, observation: Any) -> int:
    if run.policy == "script":
        return run.actions[index]
    if run.policy == "push_left":
        return 0
    angle, velocity = float(observation[2]), float(observation[3])
    return int(angle + 0.5 * velocity > 0)


def _interact(run: ClassicRun) -> Callable[[Any, Any, dict[str, Any]], str]:
    def interact(env: Any, observation: Any, info: dict[str, Any]) -> str:
        for index in range(500):
            observation, _, terminated, truncated, _ = env.step(
                _next_action(run, index, observation)
            )
            if terminated or truncated:
                return "ended"
            if run.policy == "script" and index + 1 == len(run.actions):
                return "script done"
        return "gave up"

    return interact


def capture_classic(run: ClassicRun, seed: int = 7) -> EpisodeEvidence:
    """Capture one native episode; the observer reads the simulator's own state."""
    holder: list[gym.Env[Any, Any]] = []

    def factory() -> gym.Env[Any, Any]:
        holder.append(gym.make(run.env_id, **run.kwargs))
        return holder[-1]

    def observe() -> dict[str, Any]:
        inner: Any = holder[-1].unwrapped
        if run.env_id.startswith("FrozenLake"):
            return {"position": int(inner.s)}
        return {"state": np.asarray(inner.state, dtype=np.float64)}

    case = EvalCase(
        {"env": run.env_id, "policy": run.policy, "actions": list(run.actions)},
        case_id=run.name,
        completion=run.completion,
    )
    return capture_episode(
        factory,
        _interact(run),
        case=case,
        environment_id=f"{run.env_id}:{sorted(run.kwargs.items())}",
        observer_id="gymnasium-unwrapped-state-v1",
        observe=observe,
        seed=seed,
        max_steps=500,
    )


def _reached_goal(episode: EpisodeEvidence) -> OutcomeVerdict:
    transitions = episode.transitions()
    if not transitions or not transitions[-1]["terminated"]:
        return OutcomeVerdict(None, "The walk did not reach a terminal tile", {})
    last = transitions[-1]
    evidence = {"final_tile": last["observation"], "reward": last["reward"]}
    if last["reward"] == 1.0:
        return OutcomeVerdict(True, "Reached the goal tile", evidence)
    return OutcomeVerdict(False, f"Fell into the hole at tile {last['observation']}", evidence)


def _stayed_upright(episode: EpisodeEvidence) -> OutcomeVerdict:
    steps = len(episode.transitions())
    if episode.ended == "terminated":
        return OutcomeVerdict(False, f"The pole fell after {steps} steps", {"steps": steps})
    if episode.ended == "truncated":
        return OutcomeVerdict(
            True, f"Balanced until the time limit ({steps} steps)", {"steps": steps}
        )
    return OutcomeVerdict(None, f"The episode ended by {episode.ended!r}", {"steps": steps})


def classic_checks(run: ClassicRun) -> Sequence[OutcomeCheck]:
    """The check that grades a run's environment."""
    if run.env_id.startswith("FrozenLake"):
        return (OutcomeCheck("reached_goal", "frozenlake-goal-v1", _reached_goal),)
    return (OutcomeCheck("stayed_upright", "cartpole-upright-v1", _stayed_upright),)


def classic_policy(run: ClassicRun) -> AcceptancePolicy:
    """Every run's only check is critical."""
    name = classic_checks(run)[0].name
    return AcceptancePolicy((CheckRequirement(name),), name=f"classic-{name}")
