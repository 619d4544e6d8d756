"""The seed's lifecycle on FrozenLake: goal, hole, early return, time limit, lifecycle
misuse, observer failure and a raising check — each gets the decision it must get."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.episode import (
    EpisodeEvidence,
    OutcomeCheck,
    OutcomeVerdict,
    evaluate_episode,
    evaluate_episodes,
)
from onrecord.errors import InputError, LifecycleError, StepLimitReached
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.integrations.gymnasium import capture_episode

RIGHT, DOWN, LEFT = 2, 1, 0
TASK = frozenlake_task()


def _line_of(text: str) -> int:
    """The number of the line of this file that is ``text``: a failure of the user's code
    is recorded with the line that raised it (since round 51), found here, not pinned."""
    with open(__file__, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


def decide(
    episode: EpisodeEvidence, checks: Any = TASK.checks, policy: AcceptancePolicy = TASK.policy
) -> str:
    return policy.evaluate(evaluate_episode(episode, list(checks))).decision


def capture(
    interact: Any,
    *,
    max_steps: int = 20,
    observe: Any = None,
    env_kwargs: dict[str, Any] | None = None,
) -> EpisodeEvidence:
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make("FrozenLake-v1", is_slippery=False, **(env_kwargs or {}))
        return holder["env"]

    return capture_episode(
        factory,
        interact,
        case=TASK.case,
        environment_id="FrozenLake-v1/native",
        observer_id="tile/v1",
        observe=observe or (lambda: {"tile": int(holder["env"].unwrapped.s)}),
        seed=3,
        max_steps=max_steps,
    )


def test_reaching_the_goal_is_accepted() -> None:
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    assert episode.ended == "terminated"
    assert episode.final_state == {"tile": 15}
    assert decide(episode) == "accept"


def test_falling_in_a_hole_is_rejected_although_terminated() -> None:
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_into_hole"](), seed=7)
    assert episode.ended == "terminated"
    assert episode.coverage_issues == ()
    assert decide(episode) == "reject"


def test_returning_early_is_indeterminate() -> None:
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["gives_up_early"](), seed=7)
    assert episode.ended == "returned"
    assert episode.coverage_issues == ("interact returned before the episode ended",)
    assert decide(episode) == "indeterminate"


def test_time_limit_truncation_is_indeterminate_when_termination_is_the_goal() -> None:
    def pace(env: Any, observation: Any, info: Any) -> None:
        while True:
            _, _, terminated, truncated, _ = env.step(LEFT)
            if terminated or truncated:
                return

    episode = capture(pace, env_kwargs={"max_episode_steps": 5})
    assert episode.ended == "truncated"
    assert episode.measures["steps"] == 5
    assert (
        "the episode was truncated, but the task's declared completion is terminated"
        in episode.coverage_issues
    )
    assert decide(episode) == "indeterminate"


def test_second_reset_is_a_lifecycle_error_and_history_is_kept() -> None:
    def resets(env: Any, observation: Any, info: Any) -> None:
        env.step(RIGHT)
        env.reset(seed=1)

    episode = capture(resets)
    assert episode.ended == "interact_error"
    assert [a["status"] for a in episode.attempts()] == ["ok"]
    assert episode.data["events"][0]["phase"] == "reset"
    assert episode.data["interact"]["error"]["type"].endswith("LifecycleError")
    assert decide(episode) == "indeterminate"


def test_step_after_the_end_is_refused_before_the_environment() -> None:
    caught: list[Exception] = []

    def keeps_going(env: Any, observation: Any, info: Any) -> None:
        for action in (RIGHT, DOWN):  # right, then down into the hole at tile 5
            env.step(action)
        try:
            env.step(RIGHT)
        except LifecycleError as exc:
            caught.append(exc)

    episode = capture(keeps_going)
    assert len(caught) == 1
    statuses = [a["status"] for a in episode.attempts()]
    assert statuses == ["ok", "ok", "lifecycle"]
    assert episode.attempts()[2]["action"] is None  # refused: no encoding
    assert episode.final_state == {"tile": 5}


def test_max_steps_blocks_before_calling_the_environment() -> None:
    calls: list[int] = []
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make("FrozenLake-v1", is_slippery=False)
        return holder["env"]

    def walks(env: Any, observation: Any, info: Any) -> None:
        for _ in range(5):
            env.step(LEFT)
            calls.append(1)

    episode = capture_episode(
        factory,
        walks,
        case=TASK.case,
        environment_id="fl",
        observer_id="tile",
        seed=0,
        max_steps=3,
        observe=lambda: {"tile": int(holder["env"].unwrapped.s)},
    )
    assert len(calls) == 3
    assert episode.ended == "step_limit"
    assert (
        episode.data["interact"]["error"]["type"]
        == f"{StepLimitReached.__module__}.StepLimitReached"
    )
    assert [a["status"] for a in episode.attempts()] == ["ok"] * 3 + ["step_limit"]


def test_invalid_action_is_recorded_without_encoding_and_not_executed() -> None:
    def bad(env: Any, observation: Any, info: Any) -> None:
        env.step(7)

    episode = capture(bad)
    attempt = episode.attempts()[0]
    assert attempt["status"] == "invalid_action"
    assert attempt["action"] is None
    assert "is not in the action space" in attempt["error"]["message"]
    assert episode.final_state == {"tile": 0}  # nothing moved
    assert any("invalid action" in issue for issue in episode.coverage_issues)


def test_observer_failure_is_kept_and_makes_the_decision_indeterminate() -> None:
    holder: dict[str, int] = {"reads": 0}

    def flaky() -> dict[str, int]:
        holder["reads"] += 1
        if holder["reads"] == 3:
            raise OSError("database is locked")
        return {"tile": 0}

    episode = capture(lambda env, o, i: [env.step(a) for a in (1, 1, 2, 2, 1, 2)], observe=flaky)
    assert episode.ended == "terminated"
    line = _line_of('            raise OSError("database is locked")')
    at = f" (at {__file__}:{line} in flaky)"
    assert episode.coverage_issues == (
        "observer failed after step 1: OSError: database is locked" + at,
    )
    assert episode.states()[2] is None
    assert decide(episode) == "indeterminate"


def test_a_raising_check_is_an_evaluator_error_not_a_failure() -> None:
    def broken(episode: EpisodeEvidence) -> OutcomeVerdict:
        raise KeyError("invoice_rows")

    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    report = evaluate_episode(episode, [OutcomeCheck("broken", "v1", broken)])
    result = report.trials[0].results[0]
    assert result.status == "evaluator_error"
    # Named with the line of the check that raised it (round 50).
    with open(__file__, encoding="utf-8") as source:
        line = source.read().splitlines().index('        raise KeyError("invoice_rows")') + 1
    assert (
        result.reason == f"check raised KeyError: 'invoice_rows' (at {__file__}:{line} in broken)"
    )
    decision = AcceptancePolicy((CheckRequirement("broken"),)).evaluate(report)
    assert decision.decision == "indeterminate"


def test_a_check_returning_the_wrong_type_is_an_evaluator_error() -> None:
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    report = evaluate_episode(
        episode,
        [
            OutcomeCheck("truthy", "v1", lambda e: OutcomeVerdict(1, "one", {})),  # type: ignore
            OutcomeCheck("bare", "v1", lambda e: True),
        ],
    )
    assert [r.status for r in report.trials[0].results] == ["evaluator_error"] * 2


def test_a_numpy_bool_verdict_counts_as_the_bool_it_holds() -> None:
    """np.all(...) and array comparisons give NumPy booleans: they are unambiguous."""
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    tiles = np.array([s["tile"] for s in episode.states() if s])
    report = evaluate_episode(
        episode,
        [
            OutcomeCheck("on_map", "v1", lambda e: OutcomeVerdict(np.all(tiles < 16), "")),
            OutcomeCheck("never_left", "v1", lambda e: OutcomeVerdict(np.all(tiles == 0), None)),  # type: ignore[arg-type]
        ],
    )
    on_map, never_left = report.trials[0].results
    assert (on_map.status, never_left.status) == ("pass", "fail")
    assert never_left.reason == ""  # not the text "None"


def test_factory_failure_is_recorded_as_setup_error() -> None:
    def factory() -> gym.Env[Any, Any]:
        raise RuntimeError("license server unreachable")

    episode = capture_episode(
        factory,
        lambda *a: None,
        case=EvalCase("x"),
        environment_id="e",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=1,
    )
    assert episode.ended == "setup_error"
    assert episode.failures()[0]["phase"] == "factory"
    line = _line_of('        raise RuntimeError("license server unreachable")')
    assert episode.coverage_issues == (
        "factory failed: builtins.RuntimeError: license server unreachable"
        f" (at {__file__}:{line} in factory)",
    )


def test_keyboard_interrupt_propagates_after_cleanup() -> None:
    closed: list[bool] = []

    class Closing(gym.Wrapper[Any, Any, Any, Any]):
        def close(self) -> None:
            closed.append(True)
            super().close()

    def interrupted(env: Any, observation: Any, info: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        capture_episode(
            lambda: Closing(gym.make("FrozenLake-v1")),
            interrupted,
            case=EvalCase("x"),
            environment_id="e",
            observer_id="o",
            observe=dict,
            seed=0,
            max_steps=1,
        )
    assert closed == [True]


def test_unportable_or_malformed_evidence_is_an_evaluator_error() -> None:
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    report = evaluate_episode(
        episode,
        [
            OutcomeCheck("nan", "v1", lambda e: OutcomeVerdict(True, "x", {"v": float("nan")})),
            OutcomeCheck("listy", "v1", lambda e: OutcomeVerdict(True, "x", [1, 2])),  # type: ignore
        ],
    )
    nan, listy = report.trials[0].results
    assert nan.status == listy.status == "evaluator_error"
    assert "$.results.nan.evidence.v is nan" in nan.reason
    assert "must be a dict of portable values, got list" in listy.reason


def test_the_same_episode_given_twice_is_not_two_repeats() -> None:
    episode = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    again = run_gym_task(TASK, FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)
    check = OutcomeCheck("reached", "v1", lambda e: OutcomeVerdict(e.ended == "terminated", ""))
    assert len(evaluate_episodes([episode, again], [check]).trials) == 2  # two executions
    with pytest.raises(InputError, match="is given twice; each repeat must be its own"):
        evaluate_episodes([episode, again, episode], [check])
