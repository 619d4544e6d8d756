"""Hostile and sloppy tool calls: each is a recorded rejected (or failed) action with the
state unchanged; nothing escapes ``world.call`` and nothing is left out of the log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.domains.remittance import RemittanceEnvironment, load_tasks
from onrecord.envkit import (
    ReentrantCall,
    Snapshot,
    ToolContext,
    ToolWorld,
    ToolWorldEnv,
    read_action_log,
    tool,
)

from . import claims_env

BEYOND_SQLITE = [2**63, 2**63 + 1, 2**64 - 1]
"""Integers JSON carries and onrecord's portable values keep, but SQLite cannot store."""
BAD = st.one_of(
    st.sampled_from([1.0, True, False, "1", "", None, float("nan"), float("inf"), -float("inf")]),
    st.sampled_from([*BEYOND_SQLITE, 2**70, -(2**63) - 1, "\ud800", "a\x00b", b"1", {1, 2}]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@pytest.fixture(scope="module")
def shared(snap: Snapshot, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolWorld]:
    with claims_env.world(snap) as built:
        built.reset(log_path=tmp_path_factory.mktemp("log") / "actions.jsonl")
        yield built


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claim_id=BAD, amount=st.one_of(BAD, st.just(5.0)), extra=st.booleans())
def test_a_bad_argument_is_a_rejected_call_that_changes_nothing(
    shared: ToolWorld, claim_id: Any, amount: Any, extra: bool
) -> None:
    before, steps = shared.state_digest(), len(shared.log.events)
    arguments = {"claim_id": claim_id, "amount": amount, **({"surprise": 1} if extra else {})}
    event = shared.call("allocate", arguments)
    assert event["status"] == "rejected"
    assert event["error"]["type"] == "invalid_arguments"
    assert shared.state_digest() == before
    assert shared.log.events[-1] is event
    assert len(shared.log.events) == steps + 1


@pytest.mark.parametrize("big", BEYOND_SQLITE)
def test_an_integer_sqlite_cannot_store_is_refused_with_the_arguments(
    world: ToolWorld, big: int
) -> None:
    for tool_name, arguments in [
        ("get_claim", {"claim_id": big}),
        ("allocate", {"claim_id": 1, "amount": big}),
    ]:
        event = world.call(tool_name, arguments)
        assert event["status"] == "rejected", event
        assert "64-bit integer range SQLite stores" in event["error"]["message"]


@pytest.fixture(scope="module")
def remittance() -> Iterator[RemittanceEnvironment]:
    task = next(t for t in load_tasks() if t.task_id == "partial-02")
    environment = RemittanceEnvironment(task)
    yield environment
    environment.close()


@pytest.mark.parametrize("reason", ["45\n", "٤٥", "CO\n"])
def test_a_pattern_anchored_with_dollar_refuses_a_trailing_newline(
    remittance: RemittanceEnvironment, reason: str
) -> None:
    world = remittance.world
    world.reset()
    line = dict(remittance.expectation["lines"][0])
    before = world.state_digest()
    event = world.call(
        "post_adjustment",
        {
            "remittance_line_id": line["rline_id"],
            "claim_line_id": line["targets"][0],
            "group_code": "CO",
            "reason_code": reason,
            "amount_cents": 1,
        },
    )
    assert event["status"] == "rejected"
    assert event["error"]["type"] == "invalid_arguments"
    assert world.state_digest() == before


def test_digits_in_a_pattern_are_ascii_digits(snap: Snapshot) -> None:
    @tool(writes=True)
    def set_day(ctx: ToolContext, day: Annotated[str, {"pattern": r"^\d{4}$"}]) -> None:
        ctx.execute("UPDATE claims SET status = ? WHERE id = 1", (day,))

    with ToolWorld(snap, [set_day]) as world:
        assert world.call("set_day", {"day": "٢٠٢٦"})["status"] == "rejected"
        assert world.call("set_day", {"day": "2026\n"})["status"] == "rejected"
        assert world.call("set_day", {"day": "2026"})["status"] == "ok"


@pytest.mark.parametrize("name", ["ONRECORD_CALL", "OnRecord_Call", '"ONRECORD_CALL"'])
def test_onrecords_savepoint_is_protected_whatever_the_case(snap: Snapshot, name: str) -> None:
    @tool(writes=True)
    def sneaky(ctx: ToolContext) -> None:
        ctx.execute("UPDATE claims SET status = 'x' WHERE id = 1")
        ctx.execute(f"RELEASE {name}")  # would commit the update
        ctx.reject("refused after writing")

    with ToolWorld(snap, [sneaky]) as world:
        event = world.call("sneaky", {})
        assert event["status"] == "error"
        assert event["error"]["type"] == "forbidden_statement"
        assert world.diff() == {}
        assert world.state_digest() == snap.digest
        assert world.call("sneaky", {})["error"]["type"] == "forbidden_statement"


def test_a_tool_calling_the_world_is_refused_and_the_guard_stays_on(snap: Snapshot) -> None:
    worlds: list[ToolWorld] = []
    refused: list[str] = []

    @tool(writes=True)
    def outer(ctx: ToolContext) -> None:
        ctx.execute("UPDATE claims SET status = 'outer' WHERE id = 1")
        try:
            worlds[0].call("inner", {})
        except ReentrantCall as exc:
            refused.append(type(exc).__name__)
        ctx.execute("CREATE TABLE sneaky (x)")  # must still be refused

    @tool(writes=True)
    def inner(ctx: ToolContext) -> None:
        ctx.execute("UPDATE claims SET status = 'inner' WHERE id = 2")

    @tool(writes=True)
    def resetter(ctx: ToolContext) -> None:
        worlds[0].reset()

    with ToolWorld(snap, [outer, inner, resetter]) as world:
        worlds.append(world)
        event = world.call("outer", {})
        assert event["error"]["type"] == "forbidden_statement"
        assert [e["step"] for e in world.log.events] == [1]
        assert refused == ["ReentrantCall"]
        assert world.state_digest() == snap.digest
        assert (
            world.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sneaky'").fetchall() == []
        )
        failed = world.call("resetter", {})
        assert failed["status"] == "error"
        assert "ReentrantCall" in failed["error"]["message"]
        assert [e["step"] for e in world.log.events] == [1, 2]


def test_a_call_after_the_end_is_rejected_logged_and_changes_nothing(
    world: ToolWorld, tmp_path: Path
) -> None:
    log = tmp_path / "actions.jsonl"
    world.reset(log_path=log)
    world.call("allocate", {"claim_id": 1, "amount": 1.0})
    world.end_episode("finished")
    digest = world.state_digest()
    event = world.call("allocate", {"claim_id": 2, "amount": 1.0})
    assert event["status"] == "rejected"
    assert event["error"]["type"] == "episode_ended"
    assert world.state_digest() == digest
    assert world.state_version == 1
    world.end_episode()
    assert [e["step"] for e in read_action_log(log)] == [1, 2]
    world.reset()
    assert world.call("allocate", {"claim_id": 2, "amount": 1.0})["status"] == "ok"


def test_the_gym_face_refuses_steps_after_finish(world: ToolWorld) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0)
    assert env.step('{"tool": "finish"}')[2] is True
    env.step('{"tool": "allocate", "arguments": {"claim_id": 1, "amount": 1.0}}')
    assert world.log.events[-1]["error"]["type"] == "episode_ended"
    assert world.diff() == {}


def test_a_json_action_naming_a_key_twice_is_refused(world: ToolWorld) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0)
    text = '{"tool": "allocate", "arguments": {"claim_id": 1, "claim_id": 2, "amount": 1.0}}'
    env.step(text)
    event = world.log.events[-1]
    assert event["status"] == "rejected"
    assert event["error"]["type"] == "invalid_action"
    assert "'claim_id' appears twice" in event["error"]["message"]
    assert event["arguments"] == text
    assert world.diff() == {}


@pytest.mark.parametrize("interrupt", [SystemExit(3), KeyboardInterrupt()])
def test_an_interrupt_in_a_tool_is_logged_rolled_back_and_re_raised(
    snap: Snapshot, interrupt: BaseException
) -> None:
    @tool(writes=True)
    def quitter(ctx: ToolContext) -> None:
        ctx.execute("UPDATE claims SET status = 'q' WHERE id = 1")
        raise interrupt

    with ToolWorld(snap, [quitter]) as world:
        with pytest.raises(type(interrupt)):
            world.call("quitter", {})
        assert [e["error"]["type"] for e in world.log.events] == ["interrupted"]
        assert world.state_digest() == snap.digest
        assert world.state_version == 0


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def test_names_and_messages_utf8_cannot_hold_are_still_logged(
    snap: Snapshot, tmp_path: Path
) -> None:
    @tool(writes=True)
    def odd(ctx: ToolContext, kind: str) -> None:
        ctx.execute("UPDATE claims SET status = 'x' WHERE id = 1")
        if kind == "surrogate":
            raise ValueError("bad byte \udcff")
        raise _Unprintable

    log = tmp_path / "actions.jsonl"
    with ToolWorld(snap, [odd]) as world:
        world.reset(log_path=log)
        assert world.call("\ud800", {})["error"]["type"] == "unknown_tool"
        assert world.reject_call("\udc80", "{", "invalid_action", "bad \ud800")["step"] == 2
        assert world.call("odd", {"kind": "surrogate"})["error"]["type"] == "tool_error"
        assert world.call("odd", {"kind": "other"})["error"]["type"] == "tool_error"
        world.end_episode()
        assert [e["step"] for e in read_action_log(log)] == [1, 2, 3, 4]
        assert world.state_digest() == snap.digest


def test_a_revealed_key_is_logged_as_json_in_memory_and_on_disk(
    snap: Snapshot, tmp_path: Path
) -> None:
    keys: dict[str, Any] = {"tuple": (1,), "blob": b"\x01", "nan": float("nan")}

    @tool
    def peek(ctx: ToolContext, how: str) -> Any:
        return ctx.reveal("notes", keys[how])

    log = tmp_path / "actions.jsonl"
    with ToolWorld(snap, [peek], hidden=["notes"]) as world:
        world.reset(log_path=log)
        for how in keys:
            assert world.call("peek", {"how": how})["status"] == "ok"
        world.end_episode()
        logged = [e["reads"] for e in world.log.events]
        assert logged == [
            [{"table": "notes", "key": 1}],
            [{"table": "notes", "key": {"$blob": "01"}}],
            [{"table": "notes", "key": {"$unportable": "[nan]"}}],
        ]
        assert [e["reads"] for e in read_action_log(log)] == logged
