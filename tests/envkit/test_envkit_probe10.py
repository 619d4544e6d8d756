"""Probes of a tool world whose agent has raw SQL access (an appointments book), each a
regression test of a bug found by probing (real SQLite files, no mocks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, read_steps, save_episode, tool

SCHEMA = """
CREATE TABLE patients (id INTEGER PRIMARY KEY, name TEXT NOT NULL, notes TEXT);
CREATE TABLE appts (id INTEGER PRIMARY KEY AUTOINCREMENT, patient_id INTEGER NOT NULL,
                    slot TEXT NOT NULL UNIQUE);
"""


def _populate(conn: Any, rng: Any) -> None:
    conn.executemany(
        "INSERT INTO patients VALUES (?, ?, ?)",
        [(1, "Ann", "allergic to penicillin"), (2, "Bob", None)],
    )


@tool(writes=True)
def raw(ctx: ToolContext, sql: str) -> int:
    """Run one SQL statement (the agent's raw access)."""
    return ctx.execute(sql).rowcount


@tool
def notes(ctx: ToolContext, patient_id: int) -> dict[str, Any] | None:
    """Read a patient's notes (hidden)."""
    return ctx.reveal("patients", patient_id)


@pytest.fixture
def world() -> Iterator[ToolWorld]:
    snapshot = Snapshot.build("appointments", SCHEMA, _populate)
    with ToolWorld(snapshot, [raw, notes], hidden=["patients"]) as built:
        built.reset(seed=0)
        yield built


@pytest.mark.parametrize(
    "shadow",
    [
        "CREATE TEMP TABLE patients (id INTEGER PRIMARY KEY, name TEXT, notes TEXT)",
        "CREATE TEMP VIEW patients AS SELECT 1 AS id, 'Eve' AS name, 'forged' AS notes",
    ],
)
def test_reveal_reads_the_hidden_table_not_a_temp_object_of_its_name(
    world: ToolWorld, shadow: str, tmp_path: Any
) -> None:
    # A TEMP table or view named like a hidden table comes first in SQLite's name lookup:
    # reveal read the tool's forged row and logged it as a read of the real one.
    assert world.call("raw", {"sql": shadow})["status"] == "ok"
    if "TABLE" in shadow:
        world.call("raw", {"sql": "INSERT INTO temp.patients VALUES (1, 'Eve', 'forged')"})
    event = world.call("notes", {"patient_id": 1})
    assert event["status"] == "ok"
    assert event["result"] == {"id": 1, "name": "Ann", "notes": "allergic to penicillin"}
    assert event["reads"] == [{"table": "patients", "key": 1}]
    episode = save_episode(world, tmp_path / "episode")
    assert read_steps(episode, "patients", 1) == [event["step"]]
