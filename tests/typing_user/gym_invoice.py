"""README: evaluate your own agent in a Gymnasium environment (fully annotated)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_type

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase, EvaluationReport, PolicyDecision
from onrecord.episode import (
    EpisodeEvidence,
    OutcomeCheck,
    OutcomeVerdict,
    evaluate_episode,
    outcome_check,
)
from onrecord.integrations.gymnasium import capture_episode

holder: dict[str, gym.Env[NDArray[np.float32], int]] = {}


def make_env() -> gym.Env[NDArray[np.float32], int]:
    env: gym.Env[NDArray[np.float32], int] = gym.make("CartPole-v1")
    holder["env"] = env
    return env


def read_state() -> dict[str, list[float]]:
    return {"state": [float(v) for v in holder["env"].unwrapped.state]}  # type: ignore[attr-defined]


def interact(
    env: gym.Env[NDArray[np.float32], int], observation: NDArray[np.float32], info: dict[str, Any]
) -> str:
    while True:
        action = int(observation[2] + 0.5 * observation[3] > 0)
        observation, _reward, terminated, truncated, _info = env.step(action)
        if terminated or truncated:
            return "finished"


episode: EpisodeEvidence = capture_episode(
    make_env,
    interact,
    case=EvalCase("Balance", case_id="cartpole/survive", completion="truncated"),
    environment_id="CartPole-v1/native",
    observer_id="native-state/v1",
    observe=read_state,
    seed=7,
    max_steps=50,
)


def survived(episode: EpisodeEvidence) -> OutcomeVerdict:
    state = episode.final_state
    if state is None:
        return OutcomeVerdict(None, "No observation", {})
    values: list[float] = state["state"]
    return OutcomeVerdict(abs(values[2]) < 0.2, "pole upright", {"state": values})


@outcome_check("upright_always", "v1")
def upright_always(episode: EpisodeEvidence) -> OutcomeVerdict:
    seen = [s["state"][2] for s in episode.states() if s is not None]
    return OutcomeVerdict(all(abs(a) < 0.2 for a in seen), "always upright", {"n": len(seen)})


def lenient(evidence: Mapping[str, Any]) -> OutcomeVerdict:
    return OutcomeVerdict(True, "ok")


checks: list[OutcomeCheck] = [OutcomeCheck("survived", "v1", survived), upright_always]
report: EvaluationReport = evaluate_episode(episode, checks)
policy = AcceptancePolicy((CheckRequirement("survived", critical=True),))
decision: PolicyDecision = policy.evaluate(report)
outcome: Literal["accept", "reject", "indeterminate"] = decision.decision
assert_type(decision.decision, Literal["accept", "reject", "indeterminate"])
assert_type(decision.reasons, tuple[str, ...])
assert_type(decision.exit_code, Literal[0, 1, 2])
assert_type(episode.states(), list[Any])
assert_type(report.summary().pass_rate, float | None)
print(outcome, decision.reasons)
