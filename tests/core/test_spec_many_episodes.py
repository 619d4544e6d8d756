"""Issue 2, items 3, 5 and 6 on real FrozenLake and CartPole episodes: the many-episode
form (cases × repeats) makes one report whose summary has the Wilson interval and pass^k
over repeats; evaluator errors stay apart from failures in the summary; each attempt
carries its wall time and the environment its spec."""

from __future__ import annotations

import contextlib
import dataclasses
from math import comb
from typing import Any

import gymnasium as gym
import pytest
from scipy.stats import binomtest

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck, evaluate_episodes
from onrecord.errors import InvalidActionError
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.integrations.gymnasium import capture_episode

TASK = frozenlake_task()
OTHER = dataclasses.replace(TASK, case=EvalCase("reach the goal again", case_id="second-case"))
PLAN = (  # each case with the agent of each of its repeats
    (TASK, ("walks_to_goal", "walks_to_goal", "walks_into_hole")),
    (OTHER, ("walks_to_goal", "walks_into_hole", "walks_into_hole")),
)


@pytest.fixture(scope="module")
def episodes() -> list[EpisodeEvidence]:
    return [
        run_gym_task(task, FROZENLAKE_AGENTS[agent](), seed=10 * index + repeat)
        for index, (task, agents) in enumerate(PLAN)
        for repeat, agent in enumerate(agents)
    ]


def test_cases_times_repeats_make_one_report_with_numbered_repeats(
    episodes: list[EpisodeEvidence],
) -> None:
    report = evaluate_episodes(episodes, list(TASK.checks))
    keys = [(trial.case["case_id"], trial.repeat) for trial in report.trials]
    first = TASK.case.identity["case_id"]
    assert keys == [(first, 0), (first, 1), (first, 2)] + [("second-case", r) for r in range(3)]
    locked = {case["case_id"]: case["trials"] for case in report.lock["cases"]}
    assert locked == {first: [[0, 0], [1, 1], [2, 2]], "second-case": [[0, 10], [1, 11], [2, 12]]}
    assert {trial.source["digest"] for trial in report.trials} == {e.digest for e in episodes}


def test_summary_has_the_wilson_interval_and_pass_hat_k_over_repeats(
    episodes: list[EpisodeEvidence],
) -> None:
    summary = evaluate_episodes(episodes, list(TASK.checks)).summary()
    assert summary.outcomes == {"pass": 3, "fail": 3, "incomplete": 0}
    assert summary.pass_rate == 0.5
    wilson = binomtest(3, 6).proportion_ci(method="wilson")
    assert summary.interval == pytest.approx((wilson.low, wilson.high), abs=1e-12)
    # 2 of 3 repeats pass in the first case, 1 of 3 in the second.
    expected = {k: (comb(2, k) / comb(3, k) + comb(1, k) / comb(3, k)) / 2 for k in (1, 2, 3)}
    assert summary.pass_hat_k == pytest.approx(expected)
    assert summary.pass_hat_k[2] == pytest.approx(1 / 6)


def test_evaluator_errors_are_counted_apart_from_failures(
    episodes: list[EpisodeEvidence],
) -> None:
    def sometimes_broken(episode: EpisodeEvidence) -> Any:
        if episode.measures["steps"] == 2:  # the hole episodes
            raise RuntimeError("bug in the check")
        return TASK.checks[0].evaluate(episode)

    report = evaluate_episodes(episodes, [OutcomeCheck("reached_goal", "v2", sometimes_broken)])
    (check,) = report.summary().checks
    assert (check.passed, check.failed, check.unmeasured, check.errors) == (3, 0, 3, 3)
    assert check.pass_rate == 1.0
    assert report.summary().to_dict()["checks"][0]["errors"] == 3


def test_each_attempt_has_its_wall_time_and_the_spec_is_recorded() -> None:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in (0, 1, 0):
            env.step(action)
        with contextlib.suppress(InvalidActionError):
            env.step(5)  # not in Discrete(2): refused before execution

    episode = capture_episode(
        lambda: gym.make("CartPole-v1"),
        interact,
        case=EvalCase("timed"),
        environment_id="CartPole-v1",
        observer_id="none",
        observe=dict,
        seed=1,
        max_steps=10,
    )
    times = [attempt["wall_time_ns"] for attempt in episode.attempts()]
    assert [type(t) for t in times] == [int] * 4
    assert all(t > 0 for t in times[:3])
    assert times[3] == 0  # never sent to the environment
    spec = episode.environment["spec"]
    assert (spec["id"], spec["max_episode_steps"]) == ("CartPole-v1", 500)
    assert isinstance(spec["kwargs"], dict)
    restored = EpisodeEvidence.from_dict(episode.data)
    assert [a["wall_time_ns"] for a in restored.attempts()] == times
