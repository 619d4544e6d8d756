"""Round 38 setup messages of the environment kit: each bad input to ``ToolWorld``,
``@tool`` and ``Snapshot`` is an ``InputError`` saying what was given and the fix, not a
misleading sentence (a view listed in ``hidden`` read as a missing table) or a bare
TypeError, and a non-bool ``writes`` is no longer a write tool."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolWorld, tool
from onrecord.envkit.snapshot import SnapshotError
from onrecord.errors import InputError

SCHEMA = """
CREATE TABLE stock(id INTEGER PRIMARY KEY, qty INTEGER);
CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);
CREATE VIEW on_hand AS SELECT id, qty FROM stock WHERE qty > 0;
"""


@pytest.fixture
def snapshot() -> Snapshot:
    return Snapshot.build("shop", SCHEMA)


def read_stock(ctx: Any, sku: str) -> int:
    return 0


def test_hiding_a_view_says_it_is_one_and_names_the_tables_it_reads(snapshot: Snapshot) -> None:
    with pytest.raises(InputError) as caught:
        ToolWorld(snapshot, [], hidden=["on_hand"])
    message = str(caught.value)
    assert message.startswith("hidden lists tables ['on_hand']")
    assert (
        "'on_hand' is a view, and only tables can be hidden: hide the tables it reads: ['stock']"
        in message
    )


@pytest.mark.parametrize("name", ["note", "Notes"])
def test_a_misspelt_hidden_table_gets_a_did_you_mean(snapshot: Snapshot, name: str) -> None:
    with pytest.raises(InputError, match=r"Did you mean 'notes'\?"):
        ToolWorld(snapshot, [], hidden=[name])


def test_the_view_hint_holds_for_a_snapshot_loaded_from_a_file(
    snapshot: Snapshot, tmp_path: Path
) -> None:
    loaded = Snapshot.from_file(snapshot.save(tmp_path / "shop.sqlite"))
    with pytest.raises(InputError, match=r"'on_hand' is a view.*\['stock'\]"):
        ToolWorld(loaded, [], hidden=["notes", "on_hand"])


@pytest.mark.parametrize(
    ("hidden", "message"),
    [
        ("notes", r"got the string 'notes': write hidden=\['notes'\]"),
        (["notes", 3], r"hidden\[1\] is int 3, not a table name"),
        ([["notes"]], r"hidden\[0\] is list \['notes'\], not a table name"),
        (None, "hidden must be a list of table names, got NoneType"),
    ],
)
def test_hidden_that_is_not_a_list_of_names_is_refused_saying_so(
    snapshot: Snapshot, hidden: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        ToolWorld(snapshot, [], hidden=hidden)


def test_hidden_tables_that_exist_are_still_accepted(snapshot: Snapshot) -> None:
    world = ToolWorld(snapshot, [tool(read_stock)], hidden=["notes"])
    try:
        assert list(world.hidden) == ["notes"]
    finally:
        world.close()


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (tool(read_stock), r"got the tool 'read_stock' alone: write \[read_stock\]"),
        ({"read_stock": tool(read_stock)}, r"got a dict.*list\(tools\.values\(\)\)"),
        (None, "must be a list of tools declared with @tool, got NoneType"),
    ],
    ids=["lone-tool", "dict", "none"],
)
def test_tools_that_are_not_a_list_are_refused_saying_so(
    snapshot: Snapshot, tools: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        ToolWorld(snapshot, tools)


@pytest.mark.parametrize("writes", ["no", "False", 1, None])
def test_a_non_bool_writes_is_refused_not_taken_for_true(writes: Any) -> None:
    with pytest.raises(InputError, match=r"tool writes= must be True or False"):
        tool(writes=writes)(read_stock)


def test_tool_with_a_bool_positional_says_to_write_writes_true() -> None:
    with pytest.raises(InputError, match=r"got True; for a write tool write @tool\(writes=True\)"):
        tool(True)


def test_a_non_string_description_is_refused() -> None:
    with pytest.raises(InputError, match="description= must be a string, got int 5"):
        tool(description=5)(read_stock)


def test_a_directory_given_as_the_snapshot_file_is_called_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="is a directory; pass the path of a SQLite"):
        Snapshot.from_file(tmp_path)


def test_a_schema_that_is_not_sql_text_is_refused_naming_the_snapshot() -> None:
    with pytest.raises(SnapshotError, match=r"snapshot 'x': schema must be an SQL script"):
        Snapshot.build("x", None)  # type: ignore[arg-type]


def test_populate_given_as_sql_text_says_to_put_it_in_the_schema() -> None:
    with pytest.raises(SnapshotError, match=r"populate must be a function populate.*schema script"):
        Snapshot.build("x", "CREATE TABLE a(x)", "INSERT INTO a VALUES (1)")  # type: ignore[arg-type]


def test_a_working_populate_still_builds(snapshot: Snapshot) -> None:
    def populate(conn: sqlite3.Connection, rng: Any) -> None:
        conn.execute("INSERT INTO stock VALUES (1, 5)")

    built = Snapshot.build("shop", SCHEMA, populate)
    assert built.connection.execute("SELECT qty FROM stock").fetchall() == [(5,)]
