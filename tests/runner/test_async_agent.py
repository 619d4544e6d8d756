"""``onrecord run`` with an async Gymnasium agent (``async def interact``, as agents on
LLM clients are): each episode runs it to completion on an event loop of its own, in
process and in worker processes, and the run is decided on what it did."""

from __future__ import annotations

import textwrap
from pathlib import Path

import orjson
import pytest

from tests.runner.conftest import ROOT, onrecord

AGENTS = textwrap.dedent(
    """
    import asyncio

    from onrecord.runner import agent_factory


    async def _walk(env, actions):
        for action in actions:
            await asyncio.sleep(0)  # an LLM call would await here
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                return "ended"
        return "gave up"


    async def to_goal(env, observation, info):
        return await _walk(env, (1, 1, 2, 2, 1, 2))


    async def into_hole(env, observation, info):
        return await _walk(env, (2, 1))


    class Client:
        async def __call__(self, env, observation, info):
            return await _walk(env, (1, 1, 2, 2, 1, 2))


    @agent_factory
    def per_episode(context):
        return Client()


    @agent_factory
    async def async_factory(context):
        return Client()
    """
)


@pytest.fixture
def agents(tmp_path: Path) -> dict[str, str]:
    """The agents' module in a directory of its own, importable by the CLI's workers."""
    (tmp_path / "async_agents_mod.py").write_text(AGENTS, encoding="utf-8")
    return {"PYTHONPATH": f"{tmp_path}:{ROOT}"}


def _run(agent: str, out: Path, env: dict[str, str], *executor: str) -> int:
    done = onrecord(
        "run", "frozenlake", "--agent", f"async_agents_mod:{agent}", "--seeds", "0-1",
        "--no-progress", "--out", str(out), *executor, env=env,
    )  # fmt: skip
    assert "never awaited" not in done.stderr, done.stderr
    episodes = [orjson.loads(line) for line in (out / "episodes.jsonl").read_bytes().splitlines()]
    assert len(episodes) == 2, done.stderr
    return done.returncode


@pytest.mark.parametrize(
    ("agent", "executor", "decision"),
    [
        ("to_goal", (), 0),
        ("per_episode", (), 0),
        ("to_goal", ("--executor", "process", "--workers", "2"), 0),
        ("into_hole", ("--executor", "process", "--workers", "2"), 1),
    ],
)
def test_an_async_agent_is_run_and_decided(
    agent: str, executor: tuple[str, ...], decision: int, agents: dict[str, str], tmp_path: Path
) -> None:
    assert _run(agent, tmp_path / "run", agents, *executor) == decision
    verdict = orjson.loads((tmp_path / "run" / "decision.json").read_bytes())["decision"]
    assert verdict["decision"] == ("accept" if decision == 0 else "reject")


def test_an_async_agent_factory_is_the_agents_failure_named(
    agents: dict[str, str], tmp_path: Path
) -> None:
    """The factory itself must be a plain def: an async one built no agent. Its episodes
    say so (no "never awaited" warning on top), and the run is never accepted
    (FrozenLake's goal check leaves an episode whose agent raised unmeasured: exit 2)."""
    assert _run("async_factory", tmp_path / "run", agents) == 2
    lines = (tmp_path / "run" / "episodes.jsonl").read_text(encoding="utf-8")
    assert "the agent factory is an async function" in lines
