"""``RemittanceEnvironment.run`` saves how the episode ended exactly as the runner
records it: the manifest's ``ending``/``ending_error`` and ``remittance_trial``'s
coverage issues equal the runner's for the same agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    ScriptedAgent,
    remittance_trial,
)
from onrecord.runner._provider import EpisodeSpec
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_play import TASK  # full-01 at 200 rows

CASES = [
    ("careful", 60, "finished", None),
    (
        "crash_after_commit",
        60,
        "agent_error",
        "AgentCrashed: the agent crashed right after its first committed write",
    ),
    ("careful", 2, "step_limit", None),
]


@pytest.fixture(scope="module")
def env() -> Any:
    built = RemittanceEnvironment(TASK)
    yield built
    built.close()


@pytest.fixture(scope="module")
def provider() -> Any:
    built = RemittanceProvider(size=TASK.size)
    yield built
    built.close()


@pytest.mark.parametrize(("agent", "max_steps", "ending", "error"), CASES)
def test_run_saves_the_ending_the_runner_records(
    env: RemittanceEnvironment,
    provider: RemittanceProvider,
    tmp_path: Path,
    agent: str,
    max_steps: int,
    ending: str,
    error: str | None,
) -> None:
    spec = EpisodeSpec(env.case, repeat=0, seed=3, max_steps=max_steps, run_id="r")
    recorded = provider.run_episode(spec, lambda task: ScriptedAgent(agent, task))
    runner_trial = provider.trial(recorded.subject, REMITTANCE_CHECKS, 0)
    assert (recorded.evidence["ending"], recorded.evidence["agent_error"]) == (ending, error)

    run = env.run(ScriptedAgent(agent, env.brief), tmp_path / "ep", seed=3, max_steps=max_steps)
    manifest = run.episode.manifest
    # Before the fix the manifest said "undeclared" (and no error) whatever happened.
    assert (manifest["ending"], manifest["ending_error"]) == (ending, error)
    assert run.agent_error == error
    trial = remittance_trial(run.episode, REMITTANCE_CHECKS)
    assert trial.coverage_issues == runner_trial.coverage_issues
    assert trial.outcome == runner_trial.outcome


def test_a_crash_is_one_coverage_issue_naming_the_exception(
    env: RemittanceEnvironment, tmp_path: Path
) -> None:
    run = env.run(ScriptedAgent("crash_after_commit", env.brief), tmp_path / "ep")
    assert remittance_trial(run.episode, REMITTANCE_CHECKS).coverage_issues == (
        "the episode ended with agent_error: AgentCrashed: the agent crashed right after "
        "its first committed write, not finished",
    )


def test_played_world_has_the_ending_declared(env: RemittanceEnvironment) -> None:
    played = env.play(ScriptedAgent("careful", env.brief), max_steps=2)
    assert (env.world.ended, env.world.ending, env.world.ending_error) == (
        True,
        played.ending,
        None,
    )
