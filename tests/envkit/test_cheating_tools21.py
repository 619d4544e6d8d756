"""A tool timing its TEMP objects and Python hooks around the guard's bookkeeping.

A read of a hidden table for no column, by its unqualified name, may be of a TEMP table
of that name; whether it was is decided by what TEMP held when the statement was
prepared, not at the end of the call (a TEMP ``notes`` created after the read hid it).
A key passed to ``ctx.reveal`` is the tool's object: its ``__conform__`` ran while the
reveal's statement bound it, where the guard leaves reads to the reveal to log.
Real ``ToolWorld`` over a real SQLite snapshot throughout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool
from tests.envkit.test_cheating_tools20 import SCHEMA, SECRET


def populate(conn: sqlite3.Connection, _rng: object) -> None:
    """The world of ``test_cheating_tools20``, with two notes to count."""
    conn.execute("INSERT INTO claims VALUES (1, 'open')")
    conn.execute("INSERT INTO notes VALUES (1, 'note one'), (2, 'note two')")
    conn.execute("INSERT INTO secrets VALUES (1, ?)", (SECRET,))


@tool(writes=True, example={"before": False, "drop": False})
def count_then_shadow(ctx: ToolContext, before: bool, drop: bool) -> list[int]:
    """Count the notes by their bare name, and create a TEMP ``notes`` (of one row)
    before or after that; drop it at the end if asked."""
    counts: list[int] = []
    if before:
        ctx.execute("CREATE TEMP TABLE notes (a)")
        ctx.execute("INSERT INTO temp.notes VALUES (1)")
    counts.append(ctx.execute("SELECT count(*) FROM notes").fetchone()[0])
    if not before:
        ctx.execute("CREATE TEMP TABLE notes (a)")
    if drop:
        ctx.execute("DROP TABLE temp.notes")
    return counts


@tool(writes=True, example={})
def count_shadow_drop_count(ctx: ToolContext) -> list[int]:
    """Count a TEMP ``notes``, drop it, count the real notes, create it again."""
    ctx.execute("CREATE TEMP TABLE notes (a)")
    counts = [ctx.execute("SELECT count(*) FROM notes").fetchone()[0]]
    ctx.execute("DROP TABLE temp.notes")
    counts.append(ctx.execute("SELECT count(*) FROM notes").fetchone()[0])
    ctx.execute("CREATE TEMP TABLE notes (a)")
    return counts


@tool(example={})
def count_notes(ctx: ToolContext) -> int:
    """Count the notes by their bare name."""
    return int(ctx.execute("SELECT count(*) FROM notes").fetchone()[0])


class _Spying(int):
    """A key whose adaptation, run as the reveal binds it, reads the secrets."""

    seen: ClassVar[list[Any]] = []
    conn: ClassVar[sqlite3.Connection | None] = None

    def __conform__(self, _protocol: object) -> int:
        assert self.conn is not None
        self.seen.extend(self.conn.execute("SELECT body FROM secrets").fetchall())
        return int(self)


@tool(example={})
def reveal_with_a_spying_key(ctx: ToolContext) -> list[Any]:
    """Reveal note 1 by a key whose ``__conform__`` reads the secrets."""
    _Spying.seen, _Spying.conn = [], ctx.connection
    row = ctx.reveal("notes", _Spying(1))
    return [row, [list(found) for found in _Spying.seen]]


TOOLS = [count_notes, count_then_shadow, count_shadow_drop_count, reveal_with_a_spying_key]


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("cheating-tools21", SCHEMA, populate, seed=1)


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    with ToolWorld(snap, TOOLS, hidden=["notes", "secrets"]) as built:
        built.reset(seed=1)
        yield built


NOTES_READ = {"table": "notes", "rows": "unknown"}


@pytest.mark.parametrize("drop", [False, True])
def test_a_temp_table_created_after_a_bare_read_does_not_hide_it(
    world: ToolWorld, drop: bool
) -> None:
    # The count read main's notes (two rows); the TEMP notes created later in the call
    # made the end-of-call check take the read for one of the TEMP table's.
    event = world.call("count_then_shadow", {"before": False, "drop": drop})
    assert event["status"] == "ok", event["error"]
    assert event["result"] == [2]
    assert event["reads"] == [NOTES_READ]


def test_a_bare_read_of_a_temp_table_that_existed_then_is_not_logged(world: ToolWorld) -> None:
    event = world.call("count_then_shadow", {"before": True, "drop": False})
    assert event["status"] == "ok", event["error"]
    assert event["result"] == [1]
    assert event["reads"] == []


def test_a_bare_read_between_a_temp_drop_and_create_is_logged(world: ToolWorld) -> None:
    event = world.call("count_shadow_drop_count", {})
    assert event["status"] == "ok", event["error"]
    assert event["result"] == [0, 2]
    assert event["reads"] == [NOTES_READ]


def test_a_later_call_with_the_temp_table_in_place_reads_it_unlogged(world: ToolWorld) -> None:
    # The TEMP notes the first call created lasts for the episode: the second call's
    # count is of it (no row), and so is not a read of the hidden table.
    assert world.call("count_then_shadow", {"before": False, "drop": False})["reads"]
    event = world.call("count_notes", {})
    assert (event["status"], event["result"], event["reads"]) == ("ok", 0, [])


def test_a_reveal_keys_adaptation_cannot_read_another_hidden_table_unlogged(
    world: ToolWorld,
) -> None:
    event = world.call("reveal_with_a_spying_key", {})
    assert event["status"] == "ok", event["error"]
    row, read = event["result"]
    assert row == {"id": 1, "body": "note one"}
    assert read == [[SECRET]]  # the key's own code ran, as the tool's
    assert event["reads"] == [
        {"table": "notes", "key": 1},
        {"table": "secrets", "rows": "unknown"},
    ]


@tool(example={})
def reveal_by_odd_keys(ctx: ToolContext) -> list[Any]:
    """Reveal by keys of types SQLite binds by value: a bool, a bytearray, an int
    subclass whose ``__int__`` lies."""

    class Lying(int):
        def __int__(self) -> int:
            return 2

    return [
        ctx.reveal("notes", True),
        ctx.reveal("notes", Lying(1)),
        ctx.reveal("notes", bytearray(b"\x01")),
    ]


def test_reveal_keys_are_still_bound_by_their_value(snap: Snapshot) -> None:
    with ToolWorld(snap, [reveal_by_odd_keys], hidden=["notes"]) as world:
        world.reset(seed=1)
        event = world.call("reveal_by_odd_keys", {})
    assert event["status"] == "ok", event["error"]
    note_one = {"id": 1, "body": "note one"}
    assert event["result"] == [note_one, note_one, None]
    assert event["reads"] == [
        {"table": "notes", "key": 1},
        {"table": "notes", "key": 1},
        {"table": "notes", "key": {"$blob": "01"}},
    ]
