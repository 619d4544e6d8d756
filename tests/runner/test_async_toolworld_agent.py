"""``onrecord run remittance`` with an async tool-world agent (``async def act``, as
agents on LLM clients are): it is awaited step by step, in process and in worker
processes, and the run records what the plain agent would, down to each episode's
fingerprint. The builder itself must be a plain def: an async one built no agent."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.domains.remittance import RemittanceEnvironment, load_tasks
from onrecord.runner import AgentContext, AgentSetupError, EpisodeSpec, agent_factory
from onrecord.runner._toolplay import build_act
from tests.runner.conftest import ROOT, onrecord

AGENTS = textwrap.dedent(
    """
    import asyncio

    from onrecord.domains.remittance import ScriptedAgent


    def build(brief):
        agent = ScriptedAgent("careful", brief)

        async def act(observation):
            await asyncio.sleep(0)  # an LLM call would await here
            return agent(observation)

        return act


    async def async_build(brief):
        return build(brief)
    """
)


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The agents' module in a directory of its own, importable by the CLI's workers."""
    directory = tmp_path_factory.mktemp("agents")
    (directory / "async_act_mod.py").write_text(AGENTS, encoding="utf-8")
    return {"PYTHONPATH": f"{directory}:{ROOT}"}


def _run(agent: str, out: Path, env: dict[str, str], *executor: str) -> tuple[int, list[Any]]:
    done = onrecord(
        "run", "remittance", "--agent", agent, "--repeats", "1", "--no-progress",
        "--out", str(out), *executor, env=env,
    )  # fmt: skip
    assert "never awaited" not in done.stderr, done.stderr
    lines = (out / "episodes.jsonl").read_bytes().splitlines()
    return done.returncode, [orjson.loads(line) for line in lines]


def _recorded(episodes: list[Any]) -> dict[tuple[str, int], Any]:
    """What happened in each episode, without run ids or timings."""
    return {
        (e["case_id"], e["repeat"]): (e["fingerprint"], e["trial"]["results"]) for e in episodes
    }


@pytest.fixture(scope="module")
def careful(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Any]:
    code, episodes = _run("careful", tmp_path_factory.mktemp("careful") / "run", {})
    assert code == 0
    return _recorded(episodes)


@pytest.mark.parametrize("executor", [(), ("--executor", "process", "--workers", "2")])
def test_an_async_act_is_accepted_as_careful_is(
    executor: tuple[str, ...],
    agents: dict[str, str],
    careful: dict[tuple[str, int], Any],
    tmp_path: Path,
) -> None:
    code, episodes = _run("async_act_mod:build", tmp_path / "run", agents, *executor)
    assert code == 0
    verdict = orjson.loads((tmp_path / "run" / "decision.json").read_bytes())["decision"]
    assert verdict["decision"] == "accept"
    assert _recorded(episodes) == careful


def test_an_async_builder_is_the_agents_failure_named(
    agents: dict[str, str], tmp_path: Path
) -> None:
    code, episodes = _run("async_act_mod:async_build", tmp_path / "run", agents)
    assert code == 1  # rejected: the agent failed in every episode
    assert all(e["evidence"]["ending"] == "agent_error" for e in episodes)
    error = episodes[0]["evidence"]["agent_error"]
    assert error.startswith("AgentSetupError: the agent builder is an async function")


def test_an_async_agent_factory_builds_no_agent(tmp_path: Path) -> None:
    @agent_factory
    async def factory(context: AgentContext) -> Any:
        return lambda observation: {"tool": "finish", "arguments": {"message": "done"}}

    env = RemittanceEnvironment(load_tasks()[0])
    try:
        act = build_act(factory, EpisodeSpec(env.case, 0, 0, 10, {}, "run"))
        with pytest.raises(AgentSetupError, match="the agent builder is an async function"):
            act({})
        played = env.play(act)
        assert played.ending == "agent_error"
        assert played.actions == []
    finally:
        env.close()


def test_the_episode_loop_is_closed_afterwards() -> None:
    """Nothing of the episode's loop is left as this thread's event loop."""
    env = RemittanceEnvironment(load_tasks()[0])

    async def act(observation: Any) -> Any:
        return {"tool": "finish", "arguments": {"message": "done"}}

    try:
        env.play(act)
        with pytest.raises(RuntimeError):
            asyncio.get_running_loop()
    finally:
        env.close()
