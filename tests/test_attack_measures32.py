"""Attacks on the audit-history measures and on `onrecord run`'s reading of agent calls.

Measures: `row_writes` and `rows_put_back` are compared with what is computed here
independently, from the before and after databases and the raw audit events, for
writes a dishonest or buggy tool makes (REPLACE, a key changed and changed back,
cascades, the schema's own triggers, rowid and WITHOUT ROWID tables).

Calls: an agent's returned object is its own code; reading it must never crash the run,
and a call must run the tool its text names, logged under that name.
"""

from __future__ import annotations

import enum
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool, tool_episode_trial
from onrecord.envkit._sql import same_values

# -- measures ------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL, extra);
CREATE TABLE lines (id INTEGER PRIMARY KEY,
                    claim_id INTEGER REFERENCES claims(id) ON DELETE CASCADE ON UPDATE CASCADE,
                    cents INTEGER NOT NULL);
CREATE TABLE notes (body TEXT);
CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT) WITHOUT ROWID;
CREATE TABLE history (id INTEGER PRIMARY KEY, entry TEXT);
CREATE TRIGGER claims_history AFTER UPDATE OF status ON claims
BEGIN INSERT INTO history (entry) VALUES ('claim ' || NEW.id || ' ' || NEW.status); END;
"""


def _populate(conn: Any, rng: Any) -> None:
    conn.executemany("INSERT INTO claims VALUES (?, 'open', 1)", [(1,), (2,)])
    conn.executemany("INSERT INTO lines VALUES (?, ?, 100)", [(1, 1), (2, 1), (3, 2)])
    conn.executemany("INSERT INTO notes VALUES (?)", [("a",), ("b",)])
    conn.executemany("INSERT INTO codes VALUES (?, ?)", [("x", "X"), ("y", "Y")])


@tool(writes=True, example={"sql": ["UPDATE claims SET status = 'x'"]})
def att_sql(ctx: ToolContext, sql: list[str]) -> None:
    """A tool that runs whatever statements it is given (the worst a tool can do)."""
    for statement in sql:
        ctx.execute(statement)


def _independent(before: Path, after: Path, events: list[dict[str, Any]], tables: Any) -> Any:
    """(row writes, rows put back) computed without _write_measures: rows moved are
    the keys of inserts, deletes, key-changing updates and updates that changed a
    value; put back when the before and after databases hold the same row."""
    moved: set[tuple[str, tuple[Any, ...]]] = set()
    for event in events:
        table = tables[event["table"]]
        keys = [tuple(row[c] for c in table.key) for row in (event["old"], event["new"]) if row]
        old, new = event["old"], event["new"]
        if (
            old is None
            or new is None
            or keys[0] != keys[1]
            or not same_values([old[c] for c in table.columns], [new[c] for c in table.columns])
        ):
            moved.update((event["table"], key) for key in keys)

    def row(conn: sqlite3.Connection, name: str, key: tuple[Any, ...]) -> Any:
        table = tables[name]
        where = " AND ".join(f"{column} = ?" for column in table.key)
        columns = ", ".join(table.columns)
        found = conn.execute(f"SELECT {columns} FROM {name} WHERE {where}", key).fetchone()
        return None if found is None else tuple(found)

    with sqlite3.connect(before) as b, sqlite3.connect(after) as a:
        put_back = 0
        for name, key in moved:
            start, end = row(b, name, key), row(a, name, key)
            put_back += start == end if start is None or end is None else same_values(start, end)
    return float(len(events)), float(put_back)


ATTACKS = {
    # REPLACE of a row with its own values: a delete and an insert of one key.
    "replace_same": ([["REPLACE INTO codes VALUES ('x', 'X')"]], 2, 1),
    # UPSERT that sets what is there: one update event, nothing moved.
    "upsert_noop": (
        [["INSERT INTO codes VALUES ('y', 'Y') ON CONFLICT(code) DO UPDATE SET label = 'Y'"]],
        1,
        0,
    ),
    # A key changed and changed back: the row left key 1 (restored) and passed
    # through key 9 (created, then deleted); the cascade rewrites both its lines twice.
    "key_round_trip": (
        [["UPDATE claims SET id = 9 WHERE id = 1"], ["UPDATE claims SET id = 1 WHERE id = 9"]],
        6,
        4,
    ),
    # A cascading delete, then everything re-inserted: three rows put back.
    "cascade_and_reinsert": (
        [
            ["DELETE FROM claims WHERE id = 1"],
            [
                "INSERT INTO claims VALUES (1, 'open', 1)",
                "INSERT INTO lines VALUES (1, 1, 100)",
                "INSERT INTO lines VALUES (2, 1, 100)",
            ],
        ],
        6,
        3,
    ),
    # The schema's own trigger writes history: its rows count as writes and stay.
    "trigger_and_storage_class": (
        [
            ["UPDATE claims SET status = 'paid', extra = 1.0 WHERE id = 2"],
            ["UPDATE claims SET status = 'open', extra = 1 WHERE id = 2"],
        ],
        4,
        1,
    ),
    # A table keyed by rowid: deleted and re-inserted under the same rowid.
    "rowid_reinsert": (
        [
            ["DELETE FROM notes WHERE body = 'b'"],
            ["INSERT INTO notes (rowid, body) VALUES (2, 'b')"],
        ],
        2,
        1,
    ),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_measures_agree_with_an_independent_count(tmp_path: Path, name: str) -> None:
    calls, writes, put_back = ATTACKS[name]
    snap = Snapshot.build("attack-measures", SCHEMA, _populate, seed=1)
    before = snap.save(tmp_path / "before.sqlite")
    with ToolWorld(snap, [att_sql], foreign_keys=True) as world:
        world.reset(case=EvalCase("attack", {}, case_id="attack"), seed=0, run_id="a")
        for sql in calls:
            assert world.call("att_sql", {"sql": sql})["status"] == "ok"
        episode = save_episode(world, tmp_path / "episode")
    measures = tool_episode_trial(episode, []).measures
    independent = _independent(before, episode.path / "final.sqlite", episode.audit, episode.tables)
    assert (measures["row_writes"], measures["rows_put_back"]) == independent
    assert independent == (writes, put_back)  # what the attack is meant to produce


# -- calls ---------------------------------------------------------------------------


class _Name(enum.StrEnum):
    FINISH = "finish"
    SET = "set_status"


class _EqualsEverything(str):
    """A tool name whose text is "nope" but which claims to equal every name."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("finish")

    def __repr__(self) -> str:
        return "finish"


class _Unreadable(Mapping[str, Any]):
    """A call whose every read raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no reading me")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no iterating me")

    def __len__(self) -> int:
        return 2


class _RaisingArguments(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no argument for you")

    def __iter__(self) -> Iterator[str]:
        return iter(["status"])

    def __len__(self) -> int:
        return 1


class _Touchy(str):
    """An argument value whose comparison raises."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("do not compare me")

    __hash__ = str.__hash__


def _call_world() -> tuple[Snapshot, list[Any]]:
    snap = Snapshot.build(
        "attack-calls",
        "CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL);",
        lambda conn, rng: conn.execute("INSERT INTO claims VALUES (1, 'open')"),
    )

    @tool(writes=True, example={"status": "paid"})
    def set_status(ctx: ToolContext, status: str) -> None:
        """Set claim 1's status."""
        ctx.execute("UPDATE claims SET status = ? WHERE id = 1", (status,))

    @tool(example={"message": "done"})
    def finish(ctx: ToolContext, message: str = "") -> dict[str, Any]:
        """Declare the task done."""
        return {"finished": True}

    return snap, [set_status, finish]


def _play(action: Any) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    from onrecord.runner._toolplay import play_tool_world

    snap, tools = _call_world()
    with ToolWorld(snap, tools) as world:
        ending, _ = play_tool_world(
            world,
            EvalCase("x", {}, case_id="x"),
            lambda observation: action,
            task="x",
            tools=[],
            seed=0,
            run_id="r",
            max_steps=1,
        )
        return ending, list(world.log.events), world.table_rows("claims")


OPEN = [{"id": 1, "status": "open"}]


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        (_Unreadable(), "invalid_action: the call cannot be read (RuntimeError: no iterating me)"),
        (
            {"tool": "set_status", "arguments": _RaisingArguments()},
            "invalid_arguments: set_status: arguments cannot be read: RuntimeError: no argument",
        ),
        (
            {"tool": "set_status", "arguments": {"status": _Touchy("paid")}},
            "invalid_arguments: set_status: arguments cannot be read: RuntimeError: do not",
        ),
        (
            {"tool": "set_status", "arguments": {"status": 10**5000}},
            # Refused as not JSON, naming the field and its size (a ValueError was raised
            # while Python tried to print it)
            "invalid_arguments: set_status: arguments are not JSON: arguments.status is an "
            "integer of about 5,001 digits",
        ),
        (
            {"tool": "set_status", "arguments": {"status": "paid"}, ("args",): 1},
            "invalid_action: the call has unknown fields [('args',)]",
        ),
    ],
)
def test_an_unreadable_call_is_a_rejected_step_not_a_crash(action: Any, problem: str) -> None:
    # Before the fix, each of these raised out of play_tool_world: the run crashed.
    ending, events, rows = _play(action)
    assert ending == "step_limit"
    assert [e["status"] for e in events] == ["rejected"]
    error = events[0]["error"]
    assert f"{error['type']}: {error['message']}".startswith(problem)
    assert rows == OPEN


def test_a_str_enum_tool_name_is_the_tool_it_names() -> None:
    # Before the fix, finish ran but was logged as "<_Name.FINISH: 'finish'>", so the
    # episode did not end as finished.
    ending, events, _ = _play({"tool": _Name.FINISH, "arguments": {}})
    assert ending == "finished"
    assert [(e["tool"], e["status"]) for e in events] == [("finish", "ok")]


def test_a_name_equal_to_every_name_runs_the_tool_its_text_names() -> None:
    # Before the fix, "nope" matched finish by its __eq__/__hash__, ran it and was
    # logged as "finish" by its __repr__: a finished episode from no finish call.
    ending, events, _ = _play({"tool": _EqualsEverything("nope"), "arguments": {}})
    assert ending == "step_limit"
    assert [(e["tool"], e["status"], e["error"]["type"]) for e in events] == [
        ("nope", "rejected", "unknown_tool")
    ]


SHOP = textwrap.dedent(
    '''
    from collections.abc import Mapping
    from onrecord import EvalCase
    from onrecord.envkit import Snapshot, changed, no_other_changes, tool
    from onrecord.runner import ToolWorldProvider, agent_factory

    SNAPSHOT = Snapshot.build(
        "attack-shop", "CREATE TABLE orders (id INTEGER PRIMARY KEY, refunded INTEGER);",
        lambda conn, rng: conn.execute("INSERT INTO orders VALUES (1, 0)"))

    @tool(writes=True, example={"order_id": 1})
    def refund(ctx, order_id: int) -> None:
        """Refund an order."""
        ctx.execute("UPDATE orders SET refunded = 1 WHERE id = ?", (order_id,))

    class Unreadable(Mapping):
        def __getitem__(self, key): raise RuntimeError("no reading me")
        def __iter__(self): raise RuntimeError("no iterating me")
        def __len__(self): return 2

    REFUND = {"tool": "refund", "arguments": {"order_id": 1}}

    @agent_factory
    def unreadable(context):            # the right refund, then calls it cannot read
        steps = iter([REFUND])
        return lambda observation: next(steps, Unreadable())

    def make():
        task = EvalCase({"order_id": 1}, {"rules": [
            changed("orders", where={"id": 1}, to={"refunded": 1}), no_other_changes()]},
            case_id="refund-1")
        return ToolWorldProvider(SNAPSHOT, [refund], environment_id="attack-shop/v1",
                                 tasks=[task], agents={"unreadable": unreadable},
                                 max_steps=3)
    '''
)


def test_onrecord_run_records_an_unreadable_call_and_ends_indeterminate(tmp_path: Path) -> None:
    # Before the fix, the agent's Mapping raised inside the runner: a traceback, no run.
    (tmp_path / "attack_shop.py").write_text(SHOP)
    command = [str(Path(sys.executable).parent / "onrecord")]
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "2000"}
    result = subprocess.run(
        [*command, "run", "attack_shop:make", "--agent", "unreadable", "--seeds", "0",
         "--no-progress", "--out", "runs/u"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr  # step limit: unfinished
    assert "Traceback" not in result.stderr
    shown = subprocess.run(
        [*command, "show", "runs/u", "--episode", "refund-1#0", "--full"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "the call cannot be read (RuntimeError: no iterating me)" in text


def test_world_call_runs_the_tool_a_name_s_text_names() -> None:
    # ToolWorld.call directly (a harness of one's own): before the fix, the name equal
    # to every name ran finish and was logged as "finish".
    snap, tools = _call_world()
    with ToolWorld(snap, tools) as world:
        world.reset(seed=0)
        fooled = world.call(_EqualsEverything("nope"), {})
        enum_named = world.call(_Name.SET, {"status": "paid"})
        rows = world.table_rows("claims")
    assert (fooled["tool"], fooled["status"], fooled["error"]["type"]) == (
        "nope",
        "rejected",
        "unknown_tool",
    )
    assert (enum_named["tool"], enum_named["status"]) == ("set_status", "ok")
    assert rows == [{"id": 1, "status": "paid"}]
