"""Follow-ups of a review: the Gymnasium face's step limit reaches the saved episode,
reveals are logged with the key of the row read, an empty rule list is refused, text
actions are held to the action space, and tools read TEXT that is not UTF-8."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gymnasium.wrappers import TimeLimit

from onrecord import EvalCase
from onrecord.envkit import (
    RawText,
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    check_rules,
    created,
    no_other_changes,
    read_before_write,
    read_steps,
    run_checks,
    save_episode,
    tool,
    write_steps,
)
from onrecord.envkit.gym import ToolWorldEnv
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode

ALLOCATE = '{"tool": "allocate", "arguments": {"claim_id": 17, "amount": 1.0}}'
CASE = EvalCase("Allocate 1.00 to claim 17", case_id="alloc-17")


def _manifest_ending(world: ToolWorld, path: Path) -> str:
    return str(save_episode(world, path).manifest["ending"])


# -- 1. the step limit of the Gymnasium face reaches the saved episode --------------------


def test_env_step_limit_truncates_and_is_declared(world: ToolWorld, tmp_path: Path) -> None:
    env = ToolWorldEnv(world, max_steps=2)
    env.reset(seed=0)
    assert env.step(ALLOCATE)[2:4] == (False, False)
    _, _, terminated, truncated, _ = env.step("not json")  # a refused step counts too
    assert (terminated, truncated) == (False, True)
    assert world.ending == "step_limit"
    assert _manifest_ending(world, tmp_path / "limit") == "step_limit"

    # An agent that simply stopped before the limit declared nothing.
    env.reset(seed=0)
    env.step(ALLOCATE)
    assert _manifest_ending(world, tmp_path / "stopped") == "undeclared"

    # Finishing at the last allowed step is finishing, not running out of steps.
    env.reset(seed=0)
    env.step(ALLOCATE)
    assert env.step('{"tool": "finish"}')[2:4] == (True, False)
    assert _manifest_ending(world, tmp_path / "finished") == "finished"


def test_capture_episode_and_time_limit_save_step_limit(world: ToolWorld, tmp_path: Path) -> None:
    def interact(env: Any, observation: str, info: dict[str, Any]) -> None:
        while True:
            _, _, terminated, truncated, _ = env.step(ALLOCATE)
            if terminated or truncated:
                return

    evidence = capture_episode(
        lambda: ToolWorldEnv(world, case=CASE, max_steps=3),
        interact,
        case=CASE,
        environment_id="envkit:claims-basic",
        observer_id="none",
        observe=lambda: None,
        seed=1,
        max_steps=3,
    )
    assert evidence.ended == "truncated"
    assert _manifest_ending(world, tmp_path / "captured") == "step_limit"

    wrapped = TimeLimit(ToolWorldEnv(world, max_steps=2), max_episode_steps=2)
    wrapped.reset(seed=0)
    wrapped.step(ALLOCATE)
    assert wrapped.step(ALLOCATE)[3] is True
    assert _manifest_ending(world, tmp_path / "time-limit") == "step_limit"


@pytest.mark.parametrize("bad", [0, -1, 2.0, "5", True])
def test_max_steps_must_be_a_positive_int(world: ToolWorld, bad: Any) -> None:
    with pytest.raises(InputError, match="max_steps"):
        ToolWorldEnv(world, max_steps=bad)


# -- 2. reveals are logged with the key of the row read -----------------------------------

NOCASE_SCHEMA = """
CREATE TABLE notes (code TEXT COLLATE NOCASE PRIMARY KEY, body TEXT);
CREATE TABLE labels (name TEXT PRIMARY KEY, body TEXT);
CREATE TABLE log (id INTEGER PRIMARY KEY, code TEXT);
"""


def _nocase_populate(conn: Any, rng: Any) -> None:
    conn.execute("INSERT INTO notes VALUES ('a', 'pay half')")
    conn.execute("INSERT INTO labels VALUES ('7', 'seven')")


@tool
def read_note(ctx: ToolContext, code: str) -> dict[str, Any] | None:
    """Read a note."""
    return ctx.reveal("notes", code)


@tool
def read_label(ctx: ToolContext, name: int) -> dict[str, Any] | None:
    """Read a label by a number."""
    return ctx.reveal("labels", name)


@tool(writes=True)
def write_log(ctx: ToolContext, code: str) -> None:
    """Log a code."""
    ctx.execute("INSERT INTO log (code) VALUES (?)", (code,))


def test_reveal_logs_the_stored_key_of_the_row_read(tmp_path: Path) -> None:
    snapshot = Snapshot.build("nocase", NOCASE_SCHEMA, _nocase_populate)
    with ToolWorld(
        snapshot, [read_note, read_label, write_log], hidden=["notes", "labels"]
    ) as world:
        world.reset()
        assert world.call("read_note", {"code": "A"})["result"]["code"] == "a"
        world.call("write_log", {"code": "a"})
        assert world.call("read_label", {"name": 7})["reads"] == [{"table": "labels", "key": "7"}]
        # Nothing read: the key is logged as asked for.
        assert world.call("read_note", {"code": "B"})["reads"] == [{"table": "notes", "key": "B"}]
        episode = save_episode(world, tmp_path / "ep")
    assert read_steps(episode, "notes", "a") == [1]
    assert read_steps(episode, "labels", "7") == [3]
    assert episode.actions[0]["reads"] == [{"table": "notes", "key": "a"}]


# -- 3. an empty rule list is refused ----------------------------------------------------


def test_empty_rules_are_refused_not_passed(world: ToolWorld, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="rules is empty"):
        check_rules({}, [])
    # A generator is read once: it used to be checked, then found empty, and pass.
    assert check_rules({}, (rule for rule in [created("allocations")])) != []
    assert check_rules({}, [no_other_changes()]) == []

    world.reset(case=EvalCase("Do nothing", {"rules": []}, case_id="empty"))
    episode = save_episode(world, tmp_path / "ep")
    [result] = run_checks(ToolEpisode.load(episode.path), ["envkit/diff_satisfies_rules"])
    assert result.status == "evaluator_error"
    assert "expected_output['rules']" in result.reason
    assert "empty" in result.reason


# -- 4. text actions are held to the action space ----------------------------------------


def test_text_actions_outside_the_action_space_are_logged_refusals(world: ToolWorld) -> None:
    env = ToolWorldEnv(world, max_action_text=120)
    env.reset(seed=0)
    before = world.state_digest()
    too_long = json.dumps(
        {"tool": "allocate", "arguments": {"claim_id": 17, "amount": 1.0, "memo": "x" * 100}}
    )
    non_ascii = '{"tool": "allocate", "arguments": {"claim_id": 17, "amount": 1.0, "memo": "café"}}'
    for action, says in ((too_long, "max_action_text=120"), (non_ascii, "\\u00e9")):
        assert not env.action_space.contains(action)
        observation, _, terminated, truncated, _ = env.step(action)
        shown = json.loads(observation)
        assert (shown["status"], shown["error"]["type"]) == ("rejected", "invalid_action")
        assert says in shown["error"]["message"]
        assert world.log.events[-1]["arguments"] == action  # what the agent wrote
        assert (terminated, truncated) == (False, False)
    assert world.state_digest() == before

    # Escaped non-ASCII and pretty-printed JSON lie inside the space and are run.
    escaped = json.dumps(json.loads(non_ascii))
    pretty = json.dumps(json.loads(non_ascii), indent=1)
    for action in (escaped, pretty):
        assert env.action_space.contains(action)
        assert json.loads(env.step(action)[0])["status"] == "ok"
    assert [row["memo"] for row in world.table_rows("allocations")] == ["café", "café"]


# -- 5. tools read TEXT that is not UTF-8 --------------------------------------------------

RAW_SCHEMA = "CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT, n INTEGER NOT NULL);"


def _raw_populate(conn: Any, rng: Any) -> None:
    conn.execute("INSERT INTO items VALUES (1, CAST(x'ff' AS TEXT), 0), (2, 'ok', 0)")


@tool
def describe_item(ctx: ToolContext, item_id: int) -> dict[str, Any]:
    """Describe an item."""
    row = ctx.one("SELECT id, label FROM items WHERE id = ?", (item_id,))
    assert row is not None
    label = row["label"]
    raw = isinstance(label, RawText)
    return {"id": row["id"], "label": label.data.hex() if raw else label, "raw": raw}


@tool(writes=True)
def bump(ctx: ToolContext, item_id: int) -> int:
    """Count an item, reading it first."""
    rows = ctx.query("SELECT * FROM items WHERE id = ?", (item_id,))
    ctx.execute("UPDATE items SET n = n + 1 WHERE id = ?", (item_id,))
    return len(rows)


@tool(writes=True)
def bump_returning(ctx: ToolContext, item_id: int) -> int:
    """Count an item and read it back in one statement."""
    return len(ctx.query("UPDATE items SET n = n + 1 WHERE id = ? RETURNING label", (item_id,)))


def test_tools_read_text_that_is_not_utf8() -> None:
    snapshot = Snapshot.build("raw", RAW_SCHEMA, _raw_populate)
    with ToolWorld(snapshot, [describe_item, bump, bump_returning]) as world:
        world.reset()
        assert world.call("describe_item", {"item_id": 1})["result"] == {
            "id": 1,
            "label": "ff",
            "raw": True,
        }
        assert world.call("describe_item", {"item_id": 2})["result"]["raw"] is False
        assert world.call("bump", {"item_id": 1})["status"] == "ok"
        # A statement that wrote is not run again (it would write twice): it fails as
        # before, and the call changes nothing.
        failed = world.call("bump_returning", {"item_id": 1})
        assert (failed["status"], failed["error"]["type"]) == ("error", "tool_error")
        assert [row["n"] for row in world.table_rows("items")] == [1, 0]
        assert [event["step"] for event in world.audit_history()] == [3]


# -- nearby: keys of hidden reads given as bytes, and a reveal with the wrong key ----------

BLOB_SCHEMA = """
CREATE TABLE secrets (k BLOB PRIMARY KEY, v TEXT);
CREATE TABLE pairs (a INTEGER, b TEXT, v TEXT, PRIMARY KEY (a, b));
"""


def _blob_populate(conn: Any, rng: Any) -> None:
    conn.execute("INSERT INTO secrets VALUES (x'00ff', 'x')")
    conn.execute("INSERT INTO pairs VALUES (1, 'x', 'y')")


@tool
def read_secret(ctx: ToolContext, hexkey: str) -> dict[str, Any] | None:
    """Read a secret."""
    return ctx.reveal("secrets", bytes.fromhex(hexkey))


@tool
def read_pair(ctx: ToolContext, a: int) -> dict[str, Any] | None:
    """Read a pair by half its key (a tool author's mistake)."""
    return ctx.reveal("pairs", a)


@tool(writes=True)
def change_secret(ctx: ToolContext, hexkey: str) -> None:
    """Change a secret."""
    ctx.execute("UPDATE secrets SET v = 'z' WHERE k = ?", (bytes.fromhex(hexkey),))


def test_blob_keys_as_bytes_and_reveal_key_arity(tmp_path: Path) -> None:
    snapshot = Snapshot.build("blobs", BLOB_SCHEMA, _blob_populate)
    tools = [read_secret, read_pair, change_secret]
    with ToolWorld(snapshot, tools, hidden=["secrets", "pairs"]) as world:
        world.reset()
        world.call("read_secret", {"hexkey": "00ff"})
        wrong = world.call("read_pair", {"a": 1})
        assert wrong["error"]["type"] == "tool_error"
        assert "the key of 'pairs' is a, b; pass 2 value(s) as a list" in wrong["error"]["message"]
        world.call("change_secret", {"hexkey": "00ff"})
        episode = save_episode(world, tmp_path / "ep")
    key = b"\x00\xff"
    assert read_steps(episode, "secrets", key) == read_steps(episode, "secrets", {"$blob": "00ff"})
    assert read_steps(episode, "secrets", key) == [1]
    assert write_steps(episode, "secrets", key) == [3]
    verdict = read_before_write(episode, ("secrets", key), ("secrets", key))
    assert verdict.passed is True
    assert '{"$blob":"00ff"}' in verdict.reason
