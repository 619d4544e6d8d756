"""A tool's own SQL that reads a hidden table is logged as a read whose rows are unknown.

Before, only ``ctx.reveal`` logged a read: a tool running ``SELECT * FROM notes`` read
the hidden table with nothing logged, so ``read_before_write`` failed an agent that had
read it. Real ``ToolWorld`` over a real SQLite snapshot throughout.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    read_before_write,
    read_steps,
    replay,
    save_episode,
    tool,
)

from . import claims_env

UNKNOWN = {"table": "notes", "rows": "unknown"}
VIEW = "CREATE VIEW note_bodies AS SELECT id, body FROM notes;\n"


@tool()
def peek(ctx: ToolContext, sql: str) -> list[dict[str, Any]]:
    """Run the agent's read-only SQL."""
    return ctx.query(sql)


@tool(writes=True, example={"sql": "UPDATE claims SET status = 'x' WHERE id = 1"})
def run_sql(ctx: ToolContext, sql: str) -> None:
    """Run the agent's SQL, writes included."""
    ctx.execute(sql)


@tool()
def reveal_then_count(ctx: ToolContext) -> Any:
    """A reveal, then the tool's own read of the same table and of another hidden one."""
    ctx.reveal("notes", 1)
    return ctx.one("SELECT (SELECT count(*) FROM notes) + (SELECT count(*) FROM tags) AS n")


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("claims-view", claims_env.SCHEMA + VIEW, claims_env.populate, seed=1)


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    tools = [*claims_env.TOOLS, peek, run_sql, reveal_then_count]
    with ToolWorld(snap, tools, hidden=["notes", "tags"]) as built:
        yield built


def played(world: ToolWorld, tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    world.reset(seed=3)
    for name, arguments in calls:
        assert world.call(name, arguments)["status"] == "ok", name
    return save_episode(world, tmp_path / "episode")


def reads(world: ToolWorld, sql: str, tool_name: str = "peek") -> list[dict[str, Any]]:
    event = world.call(tool_name, {"sql": sql})
    assert event["status"] == "ok", event["error"]
    return list(event["reads"])


def test_a_tools_own_select_of_a_hidden_table_is_logged(world: ToolWorld, tmp_path: Path) -> None:
    # The documented limitation: this step logged no read, so read_steps said never.
    episode = played(world, tmp_path, [("peek", {"sql": "SELECT body FROM notes"})])
    assert episode.actions[0]["reads"] == [UNKNOWN]
    assert read_steps(episode, "notes") == [1]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM claims WHERE id IN (SELECT claim_id FROM notes)",
        "SELECT c.id, n.body FROM claims AS c JOIN notes AS n ON n.claim_id = c.id",
        "SELECT body FROM note_bodies",  # a view: SQLite names the table under it
        "SELECT count(*) AS n FROM notes",  # no column read: logged all the same
        "SELECT 1 AS one FROM Notes",  # the name in another letter case
        "SELECT count(*) AS n FROM main.notes",
        "SELECT EXISTS (SELECT 1 FROM notes) AS e",
    ],
)
def test_every_shape_of_read_is_logged(world: ToolWorld, sql: str) -> None:
    assert reads(world, sql) == [UNKNOWN]


def test_a_write_whose_where_reads_the_hidden_table_is_a_read(world: ToolWorld) -> None:
    sql = "UPDATE claims SET status = 'noted' WHERE id IN (SELECT claim_id FROM notes)"
    assert reads(world, sql, "run_sql") == [UNKNOWN]


def test_reads_of_other_tables_and_of_a_temp_shadow_are_not_logged(world: ToolWorld) -> None:
    assert reads(world, "SELECT * FROM claims WHERE id = 1") == []
    reads(world, "CREATE TEMP TABLE notes (id INTEGER, body TEXT)", "run_sql")
    assert reads(world, "SELECT body FROM notes") == []  # temp.notes, not the hidden one
    assert reads(world, "SELECT count(*) AS n FROM notes") == []
    assert reads(world, "SELECT count(*) AS n FROM main.notes") == [UNKNOWN]


def test_one_entry_per_table_per_step_after_the_reveals_in_name_order(world: ToolWorld) -> None:
    sql = "SELECT t.tag, n.body, (SELECT count(*) FROM notes) AS k FROM tags t, notes n"
    assert reads(world, sql) == [
        {"table": "notes", "rows": "unknown"},
        {"table": "tags", "rows": "unknown"},
    ]
    # A table the step revealed rows of gets no unknown-rows entry (the reveals say what
    # the tool showed of it); the other hidden table its SQL read does.
    both = world.call("reveal_then_count", {})
    assert both["reads"] == [{"table": "notes", "key": 1}, {"table": "tags", "rows": "unknown"}]


def test_a_reveal_is_not_also_logged_as_an_sql_read(world: ToolWorld) -> None:
    for _ in range(2):  # the reveal's statement prepared, then served from the cache
        assert world.call("read_note", {"note_id": 1})["reads"] == [{"table": "notes", "key": 1}]


def test_a_cached_statement_run_at_a_later_step_is_logged_there(world: ToolWorld) -> None:
    sql = "SELECT body FROM notes WHERE id = 1"
    assert reads(world, sql) == [UNKNOWN]
    assert world.call("get_claim", {"claim_id": 1})["reads"] == []
    assert reads(world, sql) == [UNKNOWN]  # same text: sqlite3 serves it from its cache
    assert reads(world, sql) == [UNKNOWN]


def test_the_worlds_own_reads_are_not_the_agents(world: ToolWorld, tmp_path: Path) -> None:
    # The audit's triggers read the row a write changed; digests, table_rows and the
    # save read every table: none is a step's read.
    sql = "UPDATE notes SET body = 'rewritten'"
    assert reads(world, sql, "run_sql") == []
    assert reads(world, "INSERT INTO notes VALUES (2, 17, 'new')", "run_sql") == []
    world.state_digest()
    world.table_rows("notes")
    observer = world.observer(["notes"])
    observer()
    observer.close()
    save_episode(world, tmp_path / "saved")
    assert world.call("get_claim", {"claim_id": 1})["reads"] == []


def test_read_steps_count_sql_reads_for_the_table_not_for_a_key(
    world: ToolWorld, tmp_path: Path
) -> None:
    episode = played(world, tmp_path, [("peek", {"sql": "SELECT * FROM notes"})])
    assert read_steps(episode, "notes") == [1]
    assert read_steps(episode, "notes", 1) == []
    assert read_steps(episode, "notes", None) == []  # a NULL key is a key, not "unknown"


WRITE = ("allocate", {"claim_id": 17, "amount": 5.0})
SQL_READ = ("peek", {"sql": "SELECT body FROM notes WHERE claim_id = 17"})
REVEAL = ("read_note", {"note_id": 1})


def test_read_before_write_of_a_key_read_only_by_sql_is_not_measured(
    world: ToolWorld, tmp_path: Path
) -> None:
    episode = played(world, tmp_path, [SQL_READ, WRITE])
    verdict = read_before_write(episode, ("notes", 1), "allocations")
    assert verdict.passed is None
    assert verdict.reason == (
        "step 1's SQL read notes before the first change to allocations at step 2, but "
        "which rows it read is unknown, so whether notes key 1 was read first cannot be "
        "judged"
    )
    assert verdict.evidence["sql_read_steps"] == [1]
    assert read_before_write(episode, "notes", "allocations").passed is True


def test_read_before_write_with_a_reveal_or_no_read_is_judged_as_before(
    world: ToolWorld, tmp_path: Path
) -> None:
    revealed = played(world, tmp_path / "a", [SQL_READ, REVEAL, WRITE])
    assert read_before_write(revealed, ("notes", 1), "allocations").passed is True
    late = played(world, tmp_path / "b", [WRITE, SQL_READ])
    assert read_before_write(late, ("notes", 1), "allocations").passed is False
    assert read_before_write(late, "notes", "allocations").passed is False


def test_an_episode_with_sql_reads_replays_and_reloads(world: ToolWorld, tmp_path: Path) -> None:
    episode = played(world, tmp_path, [SQL_READ, REVEAL, WRITE])
    again = ToolEpisode.load(episode.path)
    assert [event["reads"] for event in again.actions] == [
        [UNKNOWN],
        [{"table": "notes", "key": 1}],
        [],
    ]
    assert replay(world, again).matches


def test_an_episode_saved_before_keeps_loading(snap: Snapshot, tmp_path: Path) -> None:
    # Logs written before this change hold reveals only, in the same event schema.
    with claims_env.world(snap) as world:
        world.reset(seed=3)
        world.call(*REVEAL)
        world.call(*WRITE)
        saved = save_episode(world, tmp_path / "old")
    episode = ToolEpisode.load(saved.path)
    assert episode.actions[0]["reads"] == [{"table": "notes", "key": 1}]
    assert read_before_write(episode, ("notes", 1), "allocations").passed is True


@tool()
def peek_with(ctx: ToolContext, sql: str, key: int) -> list[dict[str, Any]]:
    """Run the agent's SQL with one parameter."""
    return ctx.query(sql, (key,))


def test_a_tool_typing_the_reveals_own_text_is_still_logged(snap: Snapshot) -> None:
    traced: list[str] = []
    tools = [*claims_env.TOOLS, peek_with]
    tracer = lambda sql, params: traced.append(sql)  # noqa: E731
    with ToolWorld(snap, tools, hidden=["notes"], tracer=tracer) as world:
        world.call(*REVEAL)
        (text,) = traced  # what the tracer shows of the reveal's statement
        event = world.call("peek_with", {"sql": text, "key": 1})
        assert event["result"] == [{"id": 1, "claim_id": 17, "body": "payer called: pay half"}]
        assert event["reads"] == [UNKNOWN]  # not served the reveal's unlogged statement
