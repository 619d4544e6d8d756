"""Shared fixtures: real captured episodes and a report of many."""

from __future__ import annotations

import pytest

from onrecord.episode import EpisodeEvidence, evaluate_episodes
from onrecord.examples import (
    CARTPOLE_AGENTS,
    FROZENLAKE_AGENTS,
    cartpole_task,
    frozenlake_task,
    run_gym_task,
)
from onrecord.report import EvaluationReport


@pytest.fixture(scope="session")
def goal_episode() -> EpisodeEvidence:
    return run_gym_task(frozenlake_task(), FROZENLAKE_AGENTS["walks_to_goal"](), seed=7)


@pytest.fixture(scope="session")
def cartpole_episode() -> EpisodeEvidence:
    return run_gym_task(cartpole_task(), CARTPOLE_AGENTS["always_left"](), seed=7)


@pytest.fixture(scope="session")
def frozenlake_report() -> EvaluationReport:
    task = frozenlake_task()
    episodes = [
        run_gym_task(task, FROZENLAKE_AGENTS[name](), seed=seed)
        for name in ("walks_to_goal",)
        for seed in (1, 2, 3)
    ]
    return evaluate_episodes(episodes, list(task.checks))
