from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env

from onrecord import EvalCase
from onrecord.envkit import (
    EnvironmentCheckError,
    Snapshot,
    ToolContext,
    ToolWorld,
    ToolWorldEnv,
    check_environment,
    environment_problems,
    tool,
)
from onrecord.integrations.gymnasium import capture_episode

CASE = EvalCase("Allocate 5.00 to claim 17", case_id="alloc-17")


def test_gymnasium_env_checker_passes(world: ToolWorld) -> None:
    # No render modes exist to check; everything else runs.
    check_env(ToolWorldEnv(world, case=CASE), skip_render_check=True)


def test_text_actions_and_observations(world: ToolWorld) -> None:
    env = ToolWorldEnv(world, case=CASE)
    observation, info = env.reset(seed=1)
    first = json.loads(observation)
    assert first["task"] == CASE.input
    assert info == {"state_version": 0}
    assert [t["name"] for t in first["tools"]][-1] == "finish"
    observation, reward, terminated, truncated, info = env.step(
        '{"tool": "allocate", "arguments": {"claim_id": 17, "amount": 5.0}}'
    )
    assert json.loads(observation) == {
        "step": 1,
        "state_version": 1,
        "status": "ok",
        "result": {"allocation_id": 1},
        "error": None,
    }
    assert (reward, terminated, truncated, info["status"]) == (0.0, False, False, "ok")
    bad = json.loads(env.step("not json")[0])
    assert bad["status"] == "rejected"
    assert bad["error"]["type"] == "invalid_action"
    assert world.log.events[-1]["error"]["type"] == "invalid_action"
    assert env.step({"tool": "finish"})[2] is True
    assert env.observation_space.contains(observation)


def test_capture_episode_with_read_only_observer(world: ToolWorld) -> None:
    def interact(env: Any, observation: str, info: dict[str, Any]) -> str:
        env.step('{"tool": "read_note", "arguments": {"note_id": 1}}')
        env.step('{"tool": "allocate", "arguments": {"claim_id": 17, "amount": 5.0}}')
        env.step('{"tool": "finish"}')
        return "done"

    observer = world.observer(["allocations"])
    evidence = capture_episode(
        lambda: ToolWorldEnv(world, case=CASE),
        interact,
        case=CASE,
        environment_id="envkit:claims-basic",
        observer_id="allocations-ro",
        observe=observer,
        seed=3,
        max_steps=10,
    )
    observer.close()
    assert evidence.ended == "terminated"
    assert [s["state_version"] for s in evidence.states()] == [0, 0, 1, 1, 1]
    assert evidence.final_state == {
        "state_version": 1,
        "tables": {"allocations": [{"id": 1, "claim_id": 17, "amount": 5.0, "memo": ""}]},
    }
    assert world.seed == 3


def test_observer_leaves_out_hidden_tables(world: ToolWorld) -> None:
    observer = world.observer()
    try:
        assert sorted(observer()["tables"]) == ["allocations", "claims", "events", "tags"]
        assert observer()["tables"]["events"][0]["payload"] == {"$blob": "00ff"}
    finally:
        observer.close()


def test_sound_world_has_no_problems(world: ToolWorld) -> None:
    check_environment(world)
    assert world.state_digest() == world.snapshot.digest


def test_problems_are_actionable_sentences(snap: Snapshot) -> None:
    @tool(writes=True)
    def no_example(ctx: ToolContext, claim_id: int) -> None: ...

    @tool(example={"claim_id": 1})
    def writes_secretly(ctx: ToolContext, claim_id: int) -> None:
        ctx.execute("DELETE FROM claims WHERE id = ?", (claim_id,))

    @tool(writes=True, example={"claim_id": 999})
    def failing_example(ctx: ToolContext, claim_id: int) -> None:
        ctx.reject(f"claim {claim_id} does not exist")

    @tool(writes=True, example={})
    def creates_table(ctx: ToolContext) -> None:
        ctx.execute("CREATE TABLE IF NOT EXISTS scratch (x)")  # refused by the world
        ctx.execute("INSERT INTO scratch VALUES (1)")

    world_file: dict[str, Path] = {}

    @tool(example={})
    def unaudited(ctx: ToolContext) -> None:
        # Around the world's connection: a connection of its own, which nothing guards.
        with contextlib.closing(sqlite3.connect(world_file["path"])) as other:
            other.execute("CREATE TABLE IF NOT EXISTS scratch (x)")
            other.execute("INSERT INTO scratch VALUES (1)")
            other.commit()

    @tool(writes=True, example={})
    def clock(ctx: ToolContext) -> None:
        ctx.execute("UPDATE claims SET payer = ? WHERE id = 1", (str(time.perf_counter_ns()),))

    tools = [no_example, writes_secretly, failing_example, creates_table, unaudited, clock]
    with ToolWorld(snap, tools) as world:
        world_file["path"] = world.path
        problems = environment_problems(world)
        with pytest.raises(EnvironmentCheckError, match=r"^the environment has \d+ problem"):
            check_environment(world)
    expected = [
        "The example call of 'failing_example' was rejected: claim 999 does not exist; give "
        "an example that succeeds on the snapshot.",
        "Write tool 'no_example' has no example arguments, so its audit could not be "
        "verified; declare @tool(writes=True, example={...}) with arguments that succeed on "
        "the snapshot.",
        "Read-only tool 'writes_secretly' tried to write (writes_secretly: a read-only tool "
        "(writes=False) wrote to the database; its changes were rolled back); declare it with "
        "@tool(writes=True) or remove the write.",
        "Tool 'creates_table' ran a statement tools may not run (creates_table: CREATE TABLE "
        "scratch: a tool may not change the schema during an episode (the audit would not "
        "see the change); put it in the snapshot, or use a TEMP table for scratch work); "
        "remove it from the tool.",
        "Tool 'unaudited' changed the state but the audit history recorded nothing; write "
        "only to tables that existed when the snapshot was built, through ctx.execute.",
        "Read-only tool 'unaudited' changed the state; declare it with @tool(writes=True).",
        "The diff from the audit history and the full-scan diff disagree on tables "
        "['scratch']; a write bypassed the audit triggers (e.g. a table created during the "
        "episode, or PRAGMA recursive_triggers turned off).",
        "Two runs of the same example calls after reset(seed=0) ended in different states or "
        "results; make tools depend only on their arguments, the database and ctx.rng (not "
        "on time or global randomness).",
    ]
    assert sorted(problems) == sorted(expected)


def test_a_declared_finish_tool_terminates_after_success(snap: Snapshot) -> None:
    @tool(writes=True)
    def finish(ctx: ToolContext, message: str) -> str:
        if not message:
            ctx.reject("say why you are done")
        return message

    with ToolWorld(snap, [finish]) as world:
        env = ToolWorldEnv(world)
        env.reset(seed=0)
        assert env.step('{"tool": "finish", "arguments": {"message": ""}}')[2] is False
        assert world.ending is None
        assert env.step('{"tool": "finish", "arguments": {"message": "done"}}')[2] is True
        assert world.ending == "finished"
