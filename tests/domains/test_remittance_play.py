"""``RemittanceEnvironment.play``: the one agent loop, used by ``run`` and by the runner."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    ScriptedAgent,
    load_tasks,
    remittance_trial,
)
from onrecord.envkit import ToolEpisode

TASK = dataclasses.replace(next(t for t in load_tasks() if t.task_id == "full-01"), size=200)


@pytest.fixture(scope="module")
def env() -> Any:
    built = RemittanceEnvironment(TASK)
    yield built
    built.close()


@pytest.mark.parametrize(
    ("agent", "ending", "error"),
    [
        ("careful", "finished", None),
        (
            "crash_after_commit",
            "agent_error",
            "AgentCrashed: the agent crashed right after its first committed write",
        ),
    ],
)
def test_play_says_how_the_episode_ended(
    env: RemittanceEnvironment, agent: str, ending: str, error: str | None
) -> None:
    played = env.play(ScriptedAgent(agent, env.brief), seed=3, run_id="r")
    assert (played.ending, played.agent_error) == (ending, error)
    assert played.actions == env.world.log.events
    assert [event["step"] for event in played.actions] == list(range(1, len(played.actions) + 1))
    assert {event["run_id"] for event in played.actions} == {"r"}
    assert env.world.seed == 3


def test_play_stops_at_the_step_limit(env: RemittanceEnvironment) -> None:
    played = env.play(ScriptedAgent("careful", env.brief), max_steps=2)
    assert (played.ending, played.agent_error, len(played.actions)) == ("step_limit", None, 2)


def test_run_saves_what_play_left_in_the_world(env: RemittanceEnvironment, tmp_path: Path) -> None:
    run = env.run(ScriptedAgent("careful", env.brief), tmp_path / "ep", seed=3, run_id="r")
    played_diff = run.episode.diff
    again = env.play(ScriptedAgent("careful", env.brief), seed=3, run_id="r")
    assert again.ending == "finished"
    assert env.world.diff() == played_diff
    assert ToolEpisode.load(tmp_path / "ep").digest == run.episode.digest
    assert remittance_trial(run.episode, REMITTANCE_CHECKS).outcome == "pass"
