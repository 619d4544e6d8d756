"""A Ctrl-C that lands in onrecord's own SQLite callbacks (the statement guard, the write
gate) is not lost. sqlite3 swallows a KeyboardInterrupt raised in an authorizer or an SQL
function and fails the statement instead: before, ``world.call`` logged the call as the
tool's error (``tool_error``: "not authorized", "user-defined function raised
exception"), nothing was raised and the program went on; a reset or a diff raised the
bogus database error. Now the world raises KeyboardInterrupt once SQLite returns, and a
call is handled as if its tool had raised it (rolled back, logged ``interrupted``).

The Ctrl-C is raised with ``signal.raise_signal`` from inside the callback itself, the
first time it looks at the guard's ``strays`` (see ``_CtrlCInCallback``): deterministic,
and through Python's own SIGINT handler."""

from __future__ import annotations

import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool

from . import claims_env

AUTHORIZER, GATE = "__call__", "may_write"
"""Where the Ctrl-C lands: the guard as the connection's authorizer (a statement being
prepared), or ``StatementGuard.may_write`` as the TEMP triggers' SQL function (a row
being written)."""


class _CtrlCInCallback(dict[int, Any]):
    """Stands in for the guard's ``strays`` (there are none): the first time the callback
    ``where`` looks at it, SIGINT comes, so Python's handler raises KeyboardInterrupt
    inside SQLite's call of it. Looks from anywhere else see an empty dict."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where
        self.fired = False

    def __bool__(self) -> bool:
        if not self.fired and sys._getframe(1).f_code.co_name == self.where:
            self.fired = True
            signal.raise_signal(signal.SIGINT)
        return False


@pytest.fixture(autouse=True)
def _python_handles_ctrl_c() -> Iterator[None]:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    yield
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _ctrl_c_in(world: ToolWorld, where: str) -> _CtrlCInCallback:
    bomb = _CtrlCInCallback(where)
    world._guard.strays = bomb
    return bomb


def _tool_taking_ctrl_c(where: str, handled: bool) -> Any:
    """A write tool whose SQL takes a Ctrl-C in ``where`` after it wrote a row; with
    ``handled`` it catches the failed statement and returns, as careful tools do."""
    world: list[ToolWorld] = []

    @tool(writes=True)
    def pay(ctx: ToolContext) -> str:
        update = "UPDATE claims SET status = ? WHERE id = ?"
        ctx.execute(update, ("paid", 1))  # prepared (authorized) and cached here
        bomb = _ctrl_c_in(world[0], where)
        try:
            if where == AUTHORIZER:
                ctx.execute("SELECT count(*) FROM claims WHERE status = 'paid'")  # prepared
            else:
                ctx.execute(update, ("paid", 2))  # cached: only the gate sees it
        except sqlite3.Error:
            assert bomb.fired
            if not handled:
                raise
            return "the database refused; carrying on"
        raise AssertionError("the Ctrl-C did not land in the callback")

    return pay, world


@pytest.mark.parametrize("handled", [False, True], ids=["raised", "handled"])
@pytest.mark.parametrize("where", [AUTHORIZER, GATE])
def test_a_ctrl_c_in_a_tools_sql_is_handled_as_the_tool_raising_it(
    snap: Snapshot, where: str, handled: bool
) -> None:
    pay, holder = _tool_taking_ctrl_c(where, handled)
    with ToolWorld(snap, [pay, claims_env.get_claim]) as world:
        holder.append(world)
        # Before: no exception; the call was logged as a tool_error (or, handled, as ok,
        # committing the write) and the program went on.
        with pytest.raises(KeyboardInterrupt) as raised:
            world.call("pay", {})
        if not handled:  # what the swallowed interrupt had been made into
            assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)
        # As a tool raising KeyboardInterrupt itself leaves it (test_call_probe):
        # logged as interrupted, rolled back, nothing committed.
        [event] = world.log.events
        assert (event["status"], event["error"]["type"]) == ("error", "interrupted")
        assert event["error"]["message"] == "pay: KeyboardInterrupt: "
        assert world.state_digest() == snap.digest
        assert world.state_version == 0
        assert world.call("get_claim", {"claim_id": 1})["status"] == "ok"  # nothing left over
        world.reset()
        assert world.state_digest() == snap.digest
        assert world.log.events == []


@pytest.mark.parametrize("where", [AUTHORIZER, GATE])
def test_a_ctrl_c_during_a_reset_stops_it_and_the_next_reset_completes(
    snap: Snapshot, where: str
) -> None:
    with claims_env.world(snap) as world:
        assert world.call("set_status", {"claim_id": 1, "status": "x"})["status"] == "ok"
        bomb = _ctrl_c_in(world, where)  # the undo's statements are prepared, then write
        # Before: the reset raised the bogus error (DatabaseError / OperationalError).
        with pytest.raises(KeyboardInterrupt) as raised:
            world.reset(seed=1)
        assert bomb.fired
        assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)
        # Half a reset is no episode: calls are refused until one completes.
        assert world.ended
        assert world.call("get_claim", {"claim_id": 1})["error"]["type"] == "episode_ended"
        world.reset(seed=2)
        assert world.state_digest() == snap.digest
        assert (world.seed, world.step, world.ended, world.log.events) == (2, 0, False, [])
        assert world.call("set_status", {"claim_id": 1, "status": "y"})["status"] == "ok"
        assert list(world.diff()) == ["claims"]


def test_a_ctrl_c_while_reading_the_evidence_is_raised(snap: Snapshot, tmp_path: Path) -> None:
    with claims_env.world(snap) as world:
        world.call("set_status", {"claim_id": 1, "status": "x"})
        _ctrl_c_in(world, AUTHORIZER)  # the diff's statements are prepared for the first time
        # Before: DatabaseError: not authorized.
        with pytest.raises(KeyboardInterrupt):
            world.diff()
        assert list(world.diff()) == ["claims"]
    with claims_env.world(snap) as world:
        world.call("set_status", {"claim_id": 1, "status": "x"})
        _ctrl_c_in(world, AUTHORIZER)
        with pytest.raises(KeyboardInterrupt):
            save_episode(world, tmp_path / "episode")
        assert not (tmp_path / "episode" / "manifest.json").exists()


def test_a_ctrl_c_noted_between_calls_is_raised_by_the_next_world_method(snap: Snapshot) -> None:
    with claims_env.world(snap) as world:
        _ctrl_c_in(world, AUTHORIZER)
        # The owner's own statement: sqlite3 fails it; the world keeps the interrupt...
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            world.conn.execute("SELECT 42")
        # ...and raises it before its next call runs anything (nothing logged).
        with pytest.raises(KeyboardInterrupt):
            world.call("get_claim", {"claim_id": 1})
        assert (world.step, world.log.events) == (0, [])
        assert world.call("get_claim", {"claim_id": 1})["status"] == "ok"  # raised once


class _CtrlCSettingKeysBack(dict[int, Any]):
    """Stands in for the guard's ``strays``: SIGINT comes while the guard authorizes the
    undo's ``PRAGMA foreign_keys = ON`` (the step that sets enforcement back)."""

    fired = False

    def __bool__(self) -> bool:
        frame = sys._getframe(1)
        found = frame.f_code.co_name == AUTHORIZER and (
            frame.f_locals.get("action"),
            frame.f_locals.get("arg1"),
            frame.f_locals.get("arg2"),
        ) == (sqlite3.SQLITE_PRAGMA, "foreign_keys", "ON")
        if found and not self.fired:
            self.fired = True
            signal.raise_signal(signal.SIGINT)
        return False


def test_a_ctrl_c_as_the_undo_sets_foreign_keys_back_does_not_leave_them_off(
    snap: Snapshot,
) -> None:
    with claims_env.world(snap, foreign_keys=True) as world:
        assert world.call("set_status", {"claim_id": 1, "status": "x"})["status"] == "ok"
        bomb = _CtrlCSettingKeysBack()
        world._guard.strays = bomb
        with pytest.raises(KeyboardInterrupt):
            world.reset(seed=1)
        assert bomb.fired
        world._guard.strays = {}
        # Before: the next resets read enforcement off the connection, found it off and
        # kept it off: every later episode ran without foreign keys.
        world.reset(seed=2)
        assert world.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert world.call("set_status", {"claim_id": 1, "status": "y"})["status"] == "ok"
        world.reset(seed=3)
        assert world.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert world.state_digest() == snap.digest


def _ctrl_c() -> None:
    """SIGINT through Python's own handler: KeyboardInterrupt is raised right here."""
    signal.raise_signal(signal.SIGINT)


class _Total:
    """An aggregate whose step takes the Ctrl-C."""

    def step(self, value: Any) -> None:
        _ctrl_c()

    def finalize(self) -> int:
        return 0


class _Running(_Total):
    """The same as a window function."""

    def value(self) -> int:
        return 0

    def inverse(self, value: Any) -> None:
        return None


def _register(connection: sqlite3.Connection, kind: str) -> str:
    """Register a callback of ``kind`` that takes a Ctrl-C; the SQL that runs it."""
    if kind == "function":
        connection.create_function("slow_fee", 1, lambda amount: _ctrl_c())
        return "SELECT slow_fee(1)"
    if kind == "aggregate":
        connection.create_aggregate("slow_total", 1, _Total)
        return "SELECT slow_total(id) FROM claims"
    if kind == "window":
        connection.create_window_function("slow_running", 1, _Running)
        return "SELECT slow_running(id) OVER (ORDER BY id) FROM claims"
    connection.set_progress_handler(_ctrl_c, 1)
    return "SELECT count(*) FROM claims"


KINDS = ["function", "aggregate", "window", "progress"]


@pytest.mark.parametrize("handled", [False, True], ids=["raised", "handled"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_ctrl_c_in_a_tools_own_sql_callback_is_raised(
    snap: Snapshot, kind: str, handled: bool
) -> None:
    @tool(writes=True)
    def pay(ctx: ToolContext) -> str:
        ctx.execute("UPDATE claims SET status = ? WHERE id = ?", ("paid", 1))
        sql = _register(ctx.connection, kind)
        try:
            ctx.execute(sql).fetchall()
        except sqlite3.Error:
            if not handled:
                raise
            return "the database refused; carrying on"
        raise AssertionError("the Ctrl-C did not land in the callback")

    with ToolWorld(snap, [pay, claims_env.get_claim]) as world:
        # Before: sqlite3 made the Ctrl-C a failed statement; the call was logged as the
        # tool's error (or, handled, committed as ok) and the program went on.
        with pytest.raises(KeyboardInterrupt):
            world.call("pay", {})
        [event] = world.log.events
        assert (event["status"], event["error"]["type"]) == ("error", "interrupted")
        assert world.state_digest() == snap.digest
        assert world.call("get_claim", {"claim_id": 1})["status"] == "ok"  # raised once


@pytest.mark.parametrize("kind", KINDS)
def test_a_ctrl_c_in_the_owners_sql_callback_is_raised_by_the_next_world_method(
    snap: Snapshot, kind: str
) -> None:
    with claims_env.world(snap) as world:
        sql = _register(world.conn, kind)
        with pytest.raises(sqlite3.OperationalError):  # sqlite3 fails the statement...
            world.conn.execute(sql).fetchall()
        world.conn.set_progress_handler(None, 1)
        with pytest.raises(KeyboardInterrupt):  # ...and the world still raises the Ctrl-C
            world.call("get_claim", {"claim_id": 1})
        assert (world.step, world.log.events) == (0, [])
        assert world.call("get_claim", {"claim_id": 1})["status"] == "ok"
