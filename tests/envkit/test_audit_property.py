"""Property tests of what the audit history shows (restorations, cascades, task
triggers, other connections), hidden tables, and regressions found by them."""

from __future__ import annotations

import math
import re
import shutil
import sqlite3
import subprocess
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    diff_databases,
    read_before_write,
    save_episode,
    state_digest,
    tool,
)

from .test_state_property import VALUES, decode, encode, full_state, normal, q, run_sql, tag

SQLDIFF = shutil.which("sqldiff")
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def call(world: ToolWorld, *statements: tuple[str, list[Any]]) -> dict[str, Any]:
    batch = [[sql, [encode(v) for v in params]] for sql, params in statements]
    return world.call("run_sql", {"statements": batch})


# -- change, then restore: a clean end state, a visible history ------------------------------


@FAST
@given(
    old=VALUES,
    new=VALUES,
    kind=st.sampled_from(["INTEGER PRIMARY KEY", "TEXT PRIMARY KEY NOT NULL"]),
    how=st.sampled_from(["update", "delete"]),
)
def test_a_change_then_its_restoration_shows_only_in_the_history(
    old: Any, new: Any, kind: str, how: str
) -> None:
    key = 7 if kind.startswith("INTEGER") else "k"
    snap = Snapshot.build(
        "restore",
        f"CREATE TABLE t (id {kind}, v)",
        lambda conn, _: conn.execute("INSERT INTO t VALUES (?, ?)", (key, old)),
    )
    with ToolWorld(snap, [run_sql]) as world:
        if how == "update":
            first = call(world, ("UPDATE t SET v = ?", [new]))
            second = call(world, ("UPDATE t SET v = ?", [old]))
        else:
            first = call(world, ("DELETE FROM t", []))
            second = call(world, ("INSERT INTO t VALUES (?, ?)", [key, old]))
        assert first["status"] == second["status"] == "ok"
        assert world.diff() == {}
        assert world.scan_diff() == {}
        history = world.audit_history()
        assert [(e["step"], e["op"], e["key"]) for e in history] == (
            [(1, "update", key), (2, "update", key)]
            if how == "update"
            else [(1, "delete", key), (2, "insert", key)]
        )
        if how == "update":  # what the end state hides, the history shows
            assert tag(history[0]["new"]["v"]) == tag(new)
            assert tag(history[0]["old"]["v"]) == tag(history[1]["new"]["v"]) == tag(old)
        world.reset()
        assert world.state_digest() == snap.digest


# -- cascades and the task's own triggers are audited like direct writes -------------------------

CASCADE = """
CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE child (id INTEGER PRIMARY KEY,
                    parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE ON UPDATE CASCADE,
                    v);
CREATE TABLE "audit log" (what TEXT, at INTEGER);
CREATE TRIGGER renamed AFTER UPDATE OF name ON parent
BEGIN INSERT INTO "audit log" VALUES ('renamed ' || NEW.name, NEW.id); END;
CREATE TRIGGER stamped AFTER INSERT ON child
BEGIN UPDATE child SET v = coalesce(v, 'stamped') WHERE id = NEW.id; END;
"""
PARENT_OPS = st.sampled_from(
    [
        ("DELETE FROM parent WHERE id = ?", 1),
        ("UPDATE parent SET id = id + 10 WHERE id = ?", 1),
        ("UPDATE parent SET name = 'n' || id WHERE id = ?", 1),
        ("INSERT INTO child (parent_id) VALUES (?)", 1),
        ("DELETE FROM child WHERE parent_id = ?", 1),
    ]
)


@FAST
@given(st.lists(st.tuples(PARENT_OPS, st.integers(1, 4)), max_size=6), st.booleans())
def test_cascades_and_task_triggers_are_audited(ops: list[Any], enforce: bool) -> None:
    def populate(conn: sqlite3.Connection, _: Any) -> None:
        conn.executemany("INSERT INTO parent VALUES (?, ?)", [(i, f"p{i}") for i in (1, 2, 3)])
        conn.executemany(
            "INSERT INTO child (parent_id, v) VALUES (?, ?)", [(1, "a"), (1, "b"), (2, None)]
        )

    snap = Snapshot.build("cascade", CASCADE, populate)
    pristine = full_state(snap.connection)
    with ToolWorld(snap, [run_sql]) as world:
        for _ in range(2):  # two episodes: nothing leaks through the reset
            world.conn.execute(f"PRAGMA foreign_keys = {'ON' if enforce else 'OFF'}")
            for (sql, _), target in ops:
                event = call(world, (sql, [target]))  # a missing parent fails, changing nothing
                assert event["status"] == "ok" or "FOREIGN KEY" in event["error"]["message"]
            audit = world.diff()
            assert normal(audit) == normal(world.scan_diff())
            steps = {e["step"] for e in world.audit_history() if e["table"] != "parent"}
            assert steps <= set(range(1, len(ops) + 1))
            for created in audit.get("child", {}).get("created", []):
                assert created["v"] == "stamped"  # the trigger's update is in the diff
            world.reset()  # the schema has triggers of its own: a page copy
            assert full_state(world.conn) == pristine
            assert world.state_digest() == snap.digest
            world.conn.execute("PRAGMA foreign_keys = OFF")


# -- hidden tables ----------------------------------------------------------------------------

HIDDEN_SCHEMA = """
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, v);
CREATE TABLE rates (k REAL PRIMARY KEY NOT NULL, v INTEGER);
CREATE TABLE pairs (a TEXT NOT NULL, b BLOB NOT NULL, v, PRIMARY KEY (a, b)) WITHOUT ROWID;
CREATE TABLE public (id INTEGER PRIMARY KEY, v);
"""
HIDDEN_KEYS = {"notes": ["id"], "rates": ["k"], "pairs": ["a", "b"]}


@tool(writes=True)
def reveal_and_bump(ctx: ToolContext, table: str, key: list[Any]) -> Any:
    """Reveal one hidden record, then change it (test only)."""
    values = [decode(value) for value in key]
    found = ctx.reveal(table, values if len(values) > 1 else values[0])
    where = " AND ".join(f"{q(c)} = ?" for c in HIDDEN_KEYS[table])
    ctx.execute(f"UPDATE {q(table)} SET v = coalesce(v, 0) || 'x' WHERE {where}", values)
    return found


def _hidden_snapshot() -> Snapshot:
    def populate(conn: sqlite3.Connection, _: Any) -> None:
        conn.executemany("INSERT INTO notes VALUES (?, ?, NULL)", [(1, "secret"), (2, "other")])
        conn.executemany("INSERT INTO rates VALUES (?, ?)", [(1.0, 5), (2.5, 6)])
        conn.execute("INSERT INTO pairs VALUES ('x', x'00ff', 1)")
        conn.execute("INSERT INTO public VALUES (1, 'open')")

    return Snapshot.build("hidden", HIDDEN_SCHEMA, populate)


KEYS = st.sampled_from(
    [
        ("notes", [1]),
        ("notes", [2]),
        ("rates", [1]),
        ("rates", [1.0]),
        ("rates", [2.5]),
        ("pairs", ["x", {"$blob": "00ff"}]),
    ]
)


@FAST
@given(st.lists(KEYS, min_size=1, max_size=4), st.sets(st.sampled_from(sorted(HIDDEN_KEYS))))
def test_hidden_tables_stay_out_of_agent_views_and_reads_match_writes(
    tmp_path_factory: Any, reveals: list[Any], hidden: set[str]
) -> None:
    snap = _hidden_snapshot()
    hidden |= {table for table, _ in reveals}
    with ToolWorld(snap, [reveal_and_bump], hidden=sorted(hidden)) as world:
        observed = world.observer()()
        assert set(observed["tables"]) == {"notes", "rates", "pairs", "public"} - hidden
        for table, key in reveals:
            assert world.call("reveal_and_bump", {"table": table, "key": key})["status"] == "ok"
        assert set(world.observer()()["tables"]) == set(observed["tables"])
        assert {table for table, _ in reveals} <= set(world.diff())  # the evaluator sees them
        folder = tmp_path_factory.mktemp("hidden") / "episode"
        save_episode(world, folder)
    episode = ToolEpisode.load(folder)
    for table, key in reveals:
        stored = [decode(v) for v in key]
        written = stored if len(stored) > 1 else stored[0]
        verdict = read_before_write(
            episode, (table, encode_key(written)), (table, encode_key(written))
        )
        # Revealed and written in the same call: measured, and the write is found.
        assert verdict.passed is False, verdict
        # the steps of the calls that revealed and bumped this row, counted by hand
        steps = [step for step, call in enumerate(reveals, 1) if call == (table, key)]
        assert verdict.evidence["read_steps"] == steps, verdict
        assert verdict.evidence["write_steps"] == steps, verdict


def encode_key(key: Any) -> Any:
    return [encode(v) for v in key] if isinstance(key, list) else encode(key)


# -- regressions ------------------------------------------------------------------------------


@pytest.mark.parametrize("collation", ["NOCASE", "RTRIM"])
@pytest.mark.parametrize("without_rowid", [False, True])
def test_a_key_change_the_key_collation_ignores_is_diffed_and_reset(
    collation: str, without_rowid: bool
) -> None:
    tail = " WITHOUT ROWID" if without_rowid else ""
    snap = Snapshot.build(
        "collated",
        f"CREATE TABLE t (k TEXT COLLATE {collation} PRIMARY KEY NOT NULL, v TEXT COLLATE "
        f"{collation}){tail}",
        lambda conn, _: conn.executemany("INSERT INTO t VALUES (?, ?)", [("a", "x"), ("b", "y")]),
    )
    with ToolWorld(snap, [run_sql]) as world:
        other = "A" if collation == "NOCASE" else "a "
        assert call(world, ("UPDATE t SET k = ? WHERE k = 'a'", [other]))["status"] == "ok"
        assert (
            call(world, ("UPDATE t SET v = ? WHERE k = 'b'", ["Y" if other == "A" else "y "]))[
                "status"
            ]
            == "ok"
        )
        audit = world.diff()
        assert normal(audit) == normal(world.scan_diff())
        assert [row["k"] for row in audit["t"]["created"]] == [other]
        assert [change["key"] for change in audit["t"]["changed"]] == ["b"]
        world.reset()  # raised IntegrityError: the undo matched 'a' and 'A' as one key
        assert world.state_digest() == snap.digest
        assert world.scan_diff() == {}


def test_a_replace_by_another_connection_is_undone_by_reset() -> None:
    snap = Snapshot.build(
        "other",
        "CREATE TABLE t (id INTEGER PRIMARY KEY, email TEXT UNIQUE)",
        lambda conn, _: conn.execute("INSERT INTO t VALUES (1, 'x')"),
    )
    with ToolWorld(snap, [run_sql]) as world:
        other = sqlite3.connect(world.path, isolation_level=None)
        try:  # without recursive_triggers the displaced row leaves no delete event
            other.execute("INSERT OR REPLACE INTO t VALUES (2, 'x')")
        finally:
            other.close()
        world.reset()
        assert world.state_digest() == snap.digest
        assert world.scan_diff() == {}


def test_a_keyless_table_with_a_column_named_rowid_is_keyed_by_its_rowid() -> None:
    snap = Snapshot.build(
        "rowid-column",
        "CREATE TABLE t (rowid TEXT, v INTEGER)",
        lambda conn, _: conn.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1), ("a", 2)]),
    )
    assert snap.tables[0].key == ("_rowid_",)
    with ToolWorld(snap, [run_sql]) as world:
        assert call(world, ("UPDATE t SET v = 5 WHERE v = 1", []))["status"] == "ok"
        audit = world.diff()
        assert audit == world.scan_diff()
        assert audit["t"]["changed"] == [
            {
                "key": 1,
                "before": {"_rowid_": 1, "rowid": "a", "v": 1},
                "after": {"_rowid_": 1, "rowid": "a", "v": 5},
            }
        ]
        world.reset()
        assert world.scan_diff() == {}
        assert full_state(world.conn) == full_state(snap.connection)


def test_a_moved_sqlite_sequence_does_not_leak_into_the_next_episode() -> None:
    snap = Snapshot.build(
        "sequence",
        "CREATE TABLE e (id INTEGER PRIMARY KEY AUTOINCREMENT, v)",
        lambda conn, _: conn.execute("INSERT INTO e (v) VALUES (1)"),
    )
    with ToolWorld(snap, [run_sql]) as world:
        # A tool may not move it (no audit event would show it, see test_envkit_probe12);
        # the owner may, on the world's connection between calls, and no row says so.
        refused = call(world, ("UPDATE sqlite_sequence SET seq = 100", []))
        assert refused["error"]["type"] == "forbidden_statement"
        world.conn.execute("UPDATE main.sqlite_sequence SET seq = 100 WHERE name = 'e'")
        world.reset()
        assert full_state(world.conn) == full_state(snap.connection)
        assert call(world, ("INSERT INTO e (v) VALUES (2)", []))["status"] == "ok"
        assert [row["id"] for row in world.diff()["e"]["created"]] == [2]


def test_a_schema_of_more_than_500_tables_can_be_diffed_and_reset() -> None:
    schema = "\n".join(f"CREATE TABLE t{i:03d} (id INTEGER PRIMARY KEY, v);" for i in range(510))
    snap = Snapshot.build("wide", schema)
    with ToolWorld(snap, [run_sql]) as world:
        assert call(world, ("INSERT INTO t509 VALUES (1, 2)", []))["status"] == "ok"
        events, diff = world.history_and_diff()  # raised: too many terms in compound SELECT
        assert [event["table"] for event in events] == list(diff) == ["t509"]
        world.reset()
        assert world.state_digest() == snap.digest
        assert world.diff() == {}


def test_an_infinite_real_is_not_the_same_state_as_null() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v REAL)")
    digests = set()
    for value in (None, math.inf, -math.inf, 1e308):
        conn.execute("INSERT OR REPLACE INTO t VALUES (1, ?)", (value,))
        digests.add(state_digest(conn))
    assert len(digests) == 4


# -- the full-scan diff against sqldiff --------------------------------------------------------


@pytest.mark.skipif(
    SQLDIFF is None,
    reason="sqldiff is not installed: apt-get install sqlite3-tools (make test tries to)",
)
@FAST
@given(st.lists(st.tuples(st.sampled_from(["a", "A", "b", "B"]), st.integers(0, 3)), max_size=6))
def test_text_keys_differing_in_case_diff_like_sqldiff(
    tmp_path_factory: Any, writes: list[tuple[str, int]]
) -> None:
    """On a BINARY key the kit and sqldiff --primarykey count the same changes."""
    snap = Snapshot.build(
        "sqldiff",
        "CREATE TABLE t (k TEXT PRIMARY KEY NOT NULL, v INTEGER)",
        lambda conn, _: conn.executemany("INSERT INTO t VALUES (?, ?)", [("a", 0), ("B", 1)]),
    )
    folder = tmp_path_factory.mktemp("sqldiff")
    before = snap.save(folder / "before.db")
    with ToolWorld(snap, [run_sql], path=folder / "after.db") as world:
        for key, value in writes:
            call(world, ("INSERT OR REPLACE INTO t VALUES (?, ?)", [key, value]))
        ours = world.diff()
        world.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert normal(ours) == normal(diff_databases(before, folder / "after.db"))
    out = subprocess.run(
        [str(SQLDIFF), "--primarykey", str(before), str(folder / "after.db")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    theirs = Counter(
        match.group(1) for match in re.finditer(r"^(INSERT|UPDATE|DELETE)\b\D*? t\b", out, re.M)
    )
    counts = {"INSERT": "created", "UPDATE": "changed", "DELETE": "deleted"}
    assert {verb: len(ours.get("t", {}).get(kind, [])) for verb, kind in counts.items()} == {
        verb: theirs.get(verb, 0) for verb in counts
    }
