"""Probes of the gymnasium face, evidence of unusual values, snapshots of saved files and
rules, each a regression test of a bug found by probing (real SQLite, real Gymnasium)."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import TimeLimit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    ToolWorldEnv,
    changed,
    check_environment,
    check_rules,
    compare_diff,
    created,
    diff_from_events,
    only_tables,
    read_action_log,
    run_checks,
    save_episode,
    step_diff,
    tool,
)
from onrecord.errors import InputError

from . import claims_env

ALLOCATE = '{"tool": "allocate", "arguments": {"claim_id": 1, "amount": 1.0}}'


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# -- the gymnasium face: finishing ---------------------------------------------------------


def test_the_builtin_finish_after_the_end_keeps_the_declared_ending(world: ToolWorld) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0)
    env.step(ALLOCATE)
    world.end_episode("step_limit", "ran out of steps")  # the harness ends it
    observation, _, terminated, _, info = env.step('{"tool": "finish"}')
    assert world.ending == "step_limit"  # not overwritten with "finished"
    assert world.ending_error == "ran out of steps"
    assert json.loads(observation)["error"]["type"] == "episode_ended"
    assert info["status"] == "rejected"
    assert terminated is True  # an agent looping until terminated stops
    assert [e["error"] and e["error"]["type"] for e in world.log.events] == [None, "episode_ended"]


def test_a_second_builtin_finish_is_refused_and_logged(world: ToolWorld) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0)
    assert env.step('{"tool": "finish"}')[2] is True
    assert world.log.events == []  # the built-in finish is not a logged call
    second = json.loads(env.step('{"tool": "finish"}')[0])
    assert second["status"] == "rejected"
    assert second["error"]["type"] == "episode_ended"
    assert [e["tool"] for e in world.log.events] == ["finish"]


@pytest.mark.parametrize("arguments", [{"reason": "done"}, 5, "x", [1]])
def test_the_builtin_finish_refuses_arguments(world: ToolWorld, arguments: Any) -> None:
    env = ToolWorldEnv(world)
    first = json.loads(env.reset(seed=0)[0])
    finish = next(t for t in first["tools"] if t["name"] == "finish")
    assert finish["parameters"]["additionalProperties"] is False
    observation, _, terminated, _, _ = env.step({"tool": "finish", "arguments": arguments})
    assert terminated is False
    assert world.ending is None
    assert not world.ended
    assert json.loads(observation)["error"]["type"] == "invalid_arguments"
    assert world.log.events[-1]["status"] == "rejected"
    assert env.step({"tool": "finish", "arguments": {}})[2] is True
    assert world.ending == "finished"


# -- the gymnasium face: malformed actions never crash the harness --------------------------


@pytest.mark.parametrize("depth", [300, 5000, 100_000])
def test_a_deeply_nested_text_action_is_a_rejected_call(
    world: ToolWorld, tmp_path: Path, depth: int
) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0)
    text = '{"tool": "get_claim", "arguments": {"claim_id": ' + "[" * depth + "]" * depth + "}}"
    observation, _, terminated, _, _ = env.step(text)
    assert json.loads(observation)["status"] == "rejected"
    assert terminated is False
    assert world.state_digest() == world.snapshot.digest
    assert len(save_episode(world, tmp_path / "ep").actions) == 1


def test_a_dict_action_with_keys_of_mixed_types_is_a_rejected_call(world: ToolWorld) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0)
    observation = json.loads(env.step({1: 2, "a": 3, "tool": "get_claim"})[0])
    assert observation["error"]["type"] == "invalid_action"
    assert world.log.events[-1]["status"] == "rejected"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_text": 0}, "max_text"),
        ({"max_text": -1}, "max_text"),
        ({"max_text": 100}, "max_text"),
        ({"max_text": 4096.0}, "max_text"),
        ({"max_action_text": "5"}, "max_action_text"),
        ({"max_action_text": 0}, "max_action_text"),
        ({"finish_tool": 5}, "finish_tool"),
        ({"finish_tool": ""}, "finish_tool"),
        ({"case": "Allocate 5.00"}, "case"),
    ],
)
def test_bad_constructor_arguments_are_refused_naming_the_field(
    world: ToolWorld, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputError, match=field):
        ToolWorldEnv(world, **kwargs)


def test_an_env_needs_a_tool_world() -> None:
    with pytest.raises(InputError, match="ToolWorld"):
        ToolWorldEnv(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "words"),
    [([("run_id", "r")], "must be a dict"), ({"run_id": 5}, "run_id"), ({"runid": "r"}, "runid")],
)
def test_bad_reset_options_are_refused_before_anything_changes(
    world: ToolWorld, options: Any, words: str
) -> None:
    env = ToolWorldEnv(world)
    env.reset(seed=0, options={"run_id": "run-1"})
    env.step(ALLOCATE)
    with pytest.raises(InputError, match=words):
        env.reset(seed=1, options=options)
    assert world.run_id == "run-1"
    assert len(world.log.events) == 1
    assert world.diff() != {}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"seed": 1.7}, "seed"),
        ({"seed": "1"}, "seed"),
        ({"seed": True}, "seed"),
        ({"run_id": 5}, "run_id"),
        ({"case": {"input": "x"}}, "case"),
    ],
)
def test_bad_world_reset_arguments_are_refused_before_anything_changes(
    world: ToolWorld, kwargs: dict[str, Any], field: str
) -> None:
    world.call("allocate", {"claim_id": 1, "amount": 1.0})
    with pytest.raises(InputError, match=field):
        world.reset(**kwargs)
    assert world.step == 1
    assert world.diff() != {}


@tool
def echo(ctx: ToolContext, text: str) -> str:
    """Return the text."""
    return text


@tool(writes=True)
def post_long(ctx: ToolContext, size: int) -> str:
    """Write a row, then return a long text."""
    ctx.execute("UPDATE claims SET status = 'posted' WHERE id = 1")
    return "x" * size


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    max_text=st.integers(512, 2000),
    size=st.integers(0, 5000),
    text=st.text(max_size=300),
)
def test_every_observation_fits_the_observation_space(
    snap: Snapshot, max_text: int, size: int, text: str
) -> None:
    with ToolWorld(snap, [echo, post_long]) as world:
        env = ToolWorldEnv(world, max_text=max_text)
        observation, _ = env.reset(seed=0)
        assert env.observation_space.contains(observation)
        for action in ({"tool": "echo", "arguments": {"text": text}}, {"tool": text}):
            assert env.observation_space.contains(env.step(action)[0])
        observation = env.step({"tool": "post_long", "arguments": {"size": size}})[0]
        assert env.observation_space.contains(observation)
        shown = json.loads(observation)
        assert shown["state_version"] == 1  # the write is visible even when cut
        if shown["status"] == "too_long":
            assert "status is 'ok'" in shown["error"]


def test_the_env_passes_the_checker_under_a_time_limit(world: ToolWorld) -> None:
    env = TimeLimit(ToolWorldEnv(world), max_episode_steps=3)
    check_env(env.unwrapped, skip_render_check=True)
    env.reset(seed=0)
    ends = [env.step('{"tool": "get_claim", "arguments": {"claim_id": 1}}')[3] for _ in range(3)]
    assert ends == [False, False, True]


# -- arguments and results nested too deep for the evidence ---------------------------------


@pytest.mark.parametrize("depth", [129, 260, 5000])
def test_deep_arguments_are_rejected_and_the_episode_still_saves(
    world: ToolWorld, tmp_path: Path, depth: int
) -> None:
    world.reset(log_path=tmp_path / "log.jsonl")
    event = world.call("get_claim", {"claim_id": nested(depth)})
    assert event["status"] == "rejected"
    assert "nested more than 128 levels" in event["error"]["message"]
    assert "$unportable" in event["arguments"]
    episode = save_episode(world, tmp_path / "ep")
    assert [e["status"] for e in ToolEpisode.load(episode.path).actions] == ["rejected"]
    assert len(read_action_log(tmp_path / "log.jsonl")) == 1


def test_arguments_at_the_depth_limit_are_kept(world: ToolWorld, tmp_path: Path) -> None:
    event = world.call("get_claim", {"claim_id": nested(127)})  # 128 with the object
    assert event["error"]["type"] == "invalid_arguments"  # not an integer, but logged as sent
    assert event["arguments"] == {"claim_id": nested(127)}
    assert save_episode(world, tmp_path / "ep").actions[0]["arguments"] == event["arguments"]


@pytest.mark.parametrize("depth", [200, 5000])
def test_a_deep_result_fails_the_call_and_changes_nothing(
    snap: Snapshot, tmp_path: Path, depth: int
) -> None:
    @tool(writes=True)
    def deep(ctx: ToolContext) -> Any:
        ctx.execute("UPDATE claims SET status = 'deep' WHERE id = 1")
        return nested(depth)

    with ToolWorld(snap, [deep]) as world:
        event = world.call("deep", {})
        assert event["status"] == "error"
        assert world.state_digest() == snap.digest
        assert save_episode(world, tmp_path / "ep").actions[0]["status"] == "error"


class _Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_tool_name_or_argument_without_a_repr_is_still_logged(world: ToolWorld) -> None:
    assert world.call(_Hostile(), {})["error"]["type"] == "unknown_tool"
    event = world.call("get_claim", {"claim_id": _Hostile()})
    assert event["status"] == "rejected"
    assert "cannot be shown" in event["arguments"]["$unportable"]


# -- infinite REALs in saved evidence --------------------------------------------------------

REALS = st.sampled_from([math.inf, -math.inf, None, 0.0, 1.5])


@tool(writes=True)
def set_amount(ctx: ToolContext, id: int, value: float | None, sign: int = 0) -> None:
    """Set an amount; sign=1 or -1 stores an infinity (JSON cannot send one)."""
    ctx.execute("UPDATE t SET amount = ? WHERE id = ?", (math.inf * sign if sign else value, id))


def _reals_snapshot(start: float | None) -> Snapshot:
    def populate(conn: sqlite3.Connection, rng: Any) -> None:
        conn.execute("INSERT INTO t VALUES (1, ?)", (start,))

    return Snapshot.build("reals", "CREATE TABLE t (id INTEGER PRIMARY KEY, amount REAL)", populate)


def _arguments(value: float | None) -> dict[str, Any]:
    if value is not None and math.isinf(value):
        return {"id": 1, "value": None, "sign": 1 if value > 0 else -1}
    return {"id": 1, "value": value}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=REALS, end=REALS)
def test_saved_evidence_keeps_infinite_reals(
    tmp_path_factory: Any, start: float | None, end: float | None
) -> None:
    case = EvalCase(
        "set the amount to NULL",
        {"rules": [changed("t", where={"id": 1}, to={"amount": None})]},
        case_id="reals",
    )
    with ToolWorld(_reals_snapshot(start), [set_amount]) as world:
        world.reset(case=case)
        assert world.call("set_amount", _arguments(end))["status"] == "ok"
        live_events, live_diff = world.history_and_diff()
        saved = save_episode(world, tmp_path_factory.mktemp("ep"))
    episode = ToolEpisode.load(saved.path)
    assert episode.diff == live_diff
    assert episode.audit == live_events
    assert diff_from_events(episode.audit, episode.tables) == live_diff
    assert step_diff(episode, 1) == live_diff
    verdict = run_checks(episode, ["envkit/diff_satisfies_rules"])[0]
    expected_pass = end is None and start is not None
    assert verdict.passed is expected_pass
    if live_diff:
        after = live_diff["t"]["changed"][0]["after"]
        wrong = {"t": {"changed": [{"key": 1, "before": {"id": 1, "amount": start}}]}}
        wrong["t"]["changed"][0]["after"] = {**after, "amount": None}
        # An expected NULL must not match a stored infinity (nor the other way round).
        assert (compare_diff(episode.diff, wrong) == []) is (end is None)


def test_a_rule_can_name_an_infinity() -> None:
    diff = {"t": {"created": [{"id": 1, "amount": math.inf}], "changed": [], "deleted": []}}
    assert check_rules(diff, [created("t", where={"amount": math.inf})]) == []
    assert check_rules(diff, [created("t", where={"amount": None})]) != []
    rule = created("t", where={"amount": -math.inf})
    assert json.loads(json.dumps(rule)) == rule  # still plain JSON


# -- snapshots from saved (and since migrated) files ---------------------------------------


@pytest.mark.parametrize(
    ("migration", "write"),
    [
        (
            "CREATE TABLE extra (id INTEGER PRIMARY KEY, v); INSERT INTO extra VALUES (1, 1)",
            "UPDATE extra SET v = 2",
        ),
        ("ALTER TABLE claims ADD COLUMN extra INTEGER", "UPDATE claims SET extra = 1 WHERE id = 1"),
        ("ALTER TABLE claims RENAME COLUMN payer TO insurer", "UPDATE claims SET insurer = 'x'"),
        ("DROP TABLE events", "UPDATE claims SET status = 'x' WHERE id = 2"),
        ("DROP TRIGGER _onrecord_audit_1_U", "UPDATE claims SET status = 'x' WHERE id = 2"),
    ],
)
def test_a_migrated_saved_snapshot_audits_every_change(
    snap: Snapshot, tmp_path: Path, migration: str, write: str
) -> None:
    path = snap.save(tmp_path / "snap.db")
    with sqlite3.connect(path) as conn:
        conn.executescript(migration)
    migrated = Snapshot.from_file(path)

    @tool(writes=True, example={})
    def migrate_write(ctx: ToolContext) -> None:
        ctx.execute(write)

    with ToolWorld(migrated, [migrate_write]) as world:
        assert world.call("migrate_write", {})["status"] == "ok"
        assert world.scan_diff() != {}
        assert world.diff() == world.scan_diff()
        check_environment(world)
        world.reset()
        assert world.state_digest() == migrated.digest


def test_the_audit_of_a_saved_episode_database_is_reused_as_it_is(
    world: ToolWorld, tmp_path: Path
) -> None:
    world.call("allocate", {"claim_id": 1, "amount": 1.0})
    episode = save_episode(world, tmp_path / "ep")
    copy = episode.copy_database(tmp_path / "resume.db")
    resumed = Snapshot.from_file(copy)
    assert resumed.digest == episode.manifest["end_state_digest"]
    with ToolWorld(resumed, claims_env.TOOLS, hidden=["notes"]) as again:
        assert again.audit_history() == []
        again.call("set_status", {"claim_id": 1, "status": "closed"})
        assert again.diff() == again.scan_diff()


def test_a_schema_that_uses_onrecords_reserved_names_still_builds() -> None:
    snap = Snapshot.build("reserved", "CREATE TABLE _onrecord_ctx (a); CREATE TABLE t (id)")
    assert [table.name for table in snap.tables] == ["t"]


def test_a_populate_that_commits_itself_is_fine() -> None:
    def populate(conn: sqlite3.Connection, rng: Any) -> None:
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()

    snap = Snapshot.build("commits", "CREATE TABLE t (id INTEGER PRIMARY KEY)", populate)
    with ToolWorld(snap, []) as world:
        assert world.table_rows("t") == [{"id": 1}]


# -- rules and expected diffs -----------------------------------------------------------------

TWO_CREATED = {"a": {"created": [{"id": 1}, {"id": 2}], "changed": [], "deleted": []}}


@pytest.mark.parametrize(
    "count", [{"min": 1, "maxx": 1}, {"min": 2, "max": 1}, -1, 1.0, True, "1", {"max": 1.5}]
)
def test_a_malformed_count_is_refused_not_read_as_no_bound(count: Any) -> None:
    with pytest.raises(InputError, match="count"):
        created("a", count=count)
    rule = {"rule": "created", "table": "a", "where": {}, "count": count}
    with pytest.raises(InputError, match="count"):
        check_rules(TWO_CREATED, [rule])


@pytest.mark.parametrize(
    "rule",
    [
        {"rule": "unchanged"},
        {"rule": "only_tables", "tables": "a"},
        {"rule": "created", "table": "a", "where": {}},
        {"rule": "changed", "table": "a", "where": {}, "count": 1},
        {"rule": "created", "table": "a", "where": [["id", 1]], "count": 1},
        {"rule": "deleted", "table": 7, "where": {}, "count": 1},
        {"rule": "creatd", "table": "a"},
    ],
)
def test_a_malformed_rule_is_refused_naming_what_is_wrong(rule: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="rule"):
        check_rules(TWO_CREATED, [rule])


def test_rules_must_be_a_list() -> None:
    with pytest.raises(InputError, match="list of rules"):
        check_rules(TWO_CREATED, only_tables("a"))  # type: ignore[arg-type]


def test_valid_counts_still_work() -> None:
    assert check_rules(TWO_CREATED, [created("a", count={"min": 2})]) == []
    assert check_rules(TWO_CREATED, [created("a", count={"max": 2})]) == []
    assert check_rules(TWO_CREATED, [created("a", count={})]) == []
    assert check_rules(TWO_CREATED, [created("a", count=1)]) != []


def test_ignore_names_table_dot_column() -> None:
    actual = {"a": {"created": [{"id": 7, "v": 1}], "changed": [], "deleted": []}}
    expected = {"a": {"created": [{"id": 1, "v": 1}], "changed": [], "deleted": []}}
    assert compare_diff(actual, expected, ignore="a.id") == []  # one column, not letters
    assert compare_diff(actual, expected, ignore=["a.id"]) == []
    for bad in (["id"], ["a."], [".id"], [5]):
        with pytest.raises(InputError, match=r"table\.column"):
            compare_diff(actual, expected, ignore=bad)
