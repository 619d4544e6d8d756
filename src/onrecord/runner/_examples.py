"""The example tasks of ``onrecord.examples`` as named environments: ``cartpole`` and
``frozenlake``, with their checks, policies and reference agents."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from onrecord.episode import OutcomeCheck
from onrecord.examples import (
    CARTPOLE_AGENTS,
    FROZENLAKE_AGENTS,
    GymTask,
    cartpole_task,
    frozenlake_task,
)
from onrecord.policy import AcceptancePolicy
from onrecord.runner._gym import GymnasiumProvider, Interact
from onrecord.runner._provider import AgentContext, AgentFactory, agent_factory

__all__ = ["cartpole", "frozenlake"]

Policy = Callable[[Any], int | None]


def policy_agent(make: Callable[[], Policy]) -> AgentFactory:
    """An agent from ``observation -> action`` (None gives up)."""

    def factory(context: AgentContext) -> Interact:
        act = make()

        def interact(env: Any, observation: Any, info: dict[str, Any]) -> str:
            while (action := act(observation)) is not None:
                observation, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    return "finished"
            return "gave up"

        return interact

    return agent_factory(factory)


class _TaskProvider(GymnasiumProvider):
    def __init__(self, task: GymTask, agents: dict[str, Callable[[], Policy]]) -> None:
        # Gymnasium's passive environment checker runs on each new environment's first
        # reset and step, and the runner makes a new one every episode: ~0.2 ms an
        # episode (a sixth of a FrozenLake episode) re-checking Gymnasium's own
        # environments, with kwargs fixed here. It is no part of what is recorded (the
        # evidence and fingerprints are the same without it).
        super().__init__(
            lambda: gym.make(task.env_id, **{"disable_env_checker": True, **task.env_kwargs}),
            environment_id=f"{task.env_id}/native",
            tasks=(task.case,),
            checks=task.checks,
            observe=task.observe,
            observer_id="native-state/v1",
            agents={name: policy_agent(make) for name, make in agents.items()},
        )
        self.policy = task.policy
        self.default_max_steps = task.max_steps

    def default_policy(self, checks: Sequence[OutcomeCheck]) -> AcceptancePolicy:
        if [check.name for check in checks] == [check.name for check in self._checks]:
            return self.policy
        return super().default_policy(checks)


def cartpole() -> GymnasiumProvider:
    """CartPole-v1: balance for 500 steps (truncation is success)."""
    return _TaskProvider(cartpole_task(), CARTPOLE_AGENTS)


def frozenlake() -> GymnasiumProvider:
    """FrozenLake-v1 4x4, not slippery: reach the goal without a hole."""
    return _TaskProvider(frozenlake_task(), FROZENLAKE_AGENTS)
