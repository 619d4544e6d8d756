"""A tool's SQL stays inside the audit and the call's savepoint: statements that would
escape them are refused when prepared, through ctx.execute and ctx.connection alike,
and the call fails with nothing changed."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

from . import claims_env

FORBIDDEN = {
    "create table": ("CREATE TABLE scratch (x)", "CREATE TABLE scratch"),
    "create index": ("CREATE INDEX by_payer ON claims (payer)", "CREATE INDEX by_payer"),
    "alter table": ("ALTER TABLE claims ADD COLUMN extra TEXT", "ALTER TABLE"),
    "drop table": ("DROP TABLE notes", "DROP TABLE notes"),
    "drop audit trigger": ("DROP TRIGGER _onrecord_audit_0_I", "DROP TRIGGER"),
    "commit": ("COMMIT", "COMMIT: each tool call runs in onrecord's savepoint"),
    "rollback": ("ROLLBACK", "ROLLBACK: each tool call"),
    "begin": ("BEGIN", "BEGIN: each tool call"),
    "release the call": ("RELEASE onrecord_call", "SAVEPOINT onrecord_call (RELEASE)"),
    "attach": ("ATTACH DATABASE ':memory:' AS other", "ATTACH"),
    "set a pragma": ("PRAGMA recursive_triggers = OFF", "PRAGMA recursive_triggers = OFF"),
    "edit the audit": ("DELETE FROM _onrecord_audit_0", "DELETE FROM _onrecord_audit_0"),
    "edit the context": ("UPDATE _onrecord_ctx SET step = 0", "UPDATE _onrecord_ctx"),
}


def _world_with(snap: Snapshot, *tools: Any) -> ToolWorld:
    return ToolWorld(snap, [claims_env.allocate, claims_env.get_claim, *tools])


def _state(world: ToolWorld) -> tuple[str, int, list[Any]]:
    return world.state_digest(), world.state_version, world.audit_history()


@pytest.mark.parametrize("through", ["execute", "connection"])
@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_a_forbidden_statement_fails_the_call_and_changes_nothing(
    snap: Snapshot, name: str, through: str
) -> None:
    sql, reason = FORBIDDEN[name]

    @tool(writes=True)
    def sneaky(ctx: ToolContext) -> None:
        ctx.execute("UPDATE claims SET status = 'paid' WHERE id = 1")  # a legal write first
        run: Callable[[str], Any] = ctx.execute if through == "execute" else ctx.connection.execute
        run(sql)

    with _world_with(snap, sneaky) as world:
        world.call("allocate", {"claim_id": 2, "amount": 1.0})
        before = _state(world)
        event = world.call("sneaky")
        assert event["status"] == "error"
        assert event["error"]["type"] == "forbidden_statement"
        assert reason in event["error"]["message"]
        assert _state(world) == before  # the legal write was rolled back with it
        assert world.diff() == world.scan_diff()
        # The world goes on: the next call commits, and reset still restores exactly.
        assert world.call("allocate", {"claim_id": 3, "amount": 1.0})["status"] == "ok"
        world.reset(seed=1)
        assert world.state_digest() == snap.digest


def test_a_refusal_the_tool_catches_still_fails_the_call(snap: Snapshot) -> None:
    @tool(writes=True)
    def stubborn(ctx: ToolContext) -> str:
        ctx.execute("UPDATE claims SET status = 'paid' WHERE id = 1")
        with contextlib.suppress(sqlite3.DatabaseError):
            ctx.connection.commit()  # the sqlite3 API's own COMMIT is refused too
        return "done"

    with _world_with(snap, stubborn) as world:
        event = world.call("stubborn")
        assert (event["status"], event["error"]["type"]) == ("error", "forbidden_statement")
        assert "COMMIT" in event["error"]["message"]
        assert world.state_digest() == snap.digest
        assert world.state_version == 0


def test_a_read_tool_cannot_lift_query_only(snap: Snapshot) -> None:
    @tool()
    def lifts(ctx: ToolContext) -> None:
        ctx.execute("PRAGMA query_only = OFF")
        ctx.execute("DELETE FROM claims")

    with _world_with(snap, lifts) as world:
        event = world.call("lifts")
        assert event["error"]["type"] == "forbidden_statement"
        assert "PRAGMA query_only = OFF" in event["error"]["message"]
        assert world.state_digest() == snap.digest
        # onrecord's own pragma statements were not the ones the tool's text found
        assert world.call("get_claim", {"claim_id": 1})["status"] == "ok"
        assert world.call("allocate", {"claim_id": 1, "amount": 1.0})["status"] == "ok"


def test_what_tools_may_do_is_left_alone(snap: Snapshot) -> None:
    @tool(writes=True)
    def busy(ctx: ToolContext) -> dict[str, Any]:
        ctx.execute("CREATE TEMP TABLE scratch (x)")  # temporary: not the world's state
        ctx.execute("INSERT INTO scratch VALUES (1), (2)")
        ctx.execute("SAVEPOINT mine")  # a nested unit of the tool's own
        ctx.execute("INSERT INTO allocations (claim_id, amount) VALUES (1, 9.0)")
        ctx.execute("ROLLBACK TO mine")
        ctx.execute("RELEASE mine")
        ctx.execute("INSERT INTO allocations (claim_id, amount) VALUES (1, 2.0)")
        columns = [row[1] for row in ctx.execute("PRAGMA table_info(allocations)")]
        keys = ctx.execute("PRAGMA foreign_keys").fetchone()[0]
        total = ctx.execute("SELECT sum(x) FROM scratch").fetchone()[0]
        ctx.execute("DROP TABLE temp.scratch")
        return {"columns": columns, "foreign_keys": keys, "total": total}

    with _world_with(snap, busy) as world:
        event = world.call("busy")
        assert event["status"] == "ok", event["error"]
        assert event["result"] == {
            "columns": ["id", "claim_id", "amount", "memo"],
            "foreign_keys": 0,
            "total": 3,
        }
        assert [e["new"]["amount"] for e in world.audit_history()] == [2.0]
        assert world.diff() == world.scan_diff()


def test_internal_statements_keep_working_after_refusals(snap: Snapshot) -> None:
    # The same statement texts onrecord uses for its own transactions, run by a tool,
    # are refused, and onrecord's own statements (cached apart) still run: reset by
    # undo, calls in savepoints, read tools with query_only.
    @tool(writes=True)
    def mimic(ctx: ToolContext, sql: str) -> None:
        ctx.execute(sql)

    texts = ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", "SAVEPOINT onrecord_call"]
    with _world_with(snap, mimic) as world:
        for round_ in range(3):
            for text in texts:
                assert world.call("mimic", {"sql": text})["error"]["type"] == "forbidden_statement"
            assert world.call("allocate", {"claim_id": 1, "amount": 1.0})["status"] == "ok"
            assert world.call("get_claim", {"claim_id": 1})["status"] == "ok"
            world.reset(seed=round_)
            assert world.state_digest() == snap.digest
