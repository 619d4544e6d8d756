from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord._canonical import canonical_bytes
from onrecord.envkit import Snapshot, ToolWorld, diff_databases, diff_from_events

from . import claims_env

SQLDIFF = shutil.which("sqldiff")
TYPES = {
    "INTEGER": st.integers(-(2**63), 2**63 - 1),
    "REAL": st.floats(allow_nan=False, allow_infinity=False),
    "TEXT": st.text(max_size=6),
    "BLOB": st.binary(max_size=4),
}
KEY_VALUES = {"INTEGER": st.integers(-5, 30), "TEXT": st.text("abcxyz'\"", min_size=1, max_size=2)}


@st.composite
def schemas(draw: Any) -> list[dict[str, Any]]:
    tables = []
    for index in range(draw(st.integers(1, 3))):
        columns = [
            (f"c{i}", draw(st.sampled_from(sorted(TYPES)))) for i in range(draw(st.integers(1, 4)))
        ]
        kind = draw(st.sampled_from(["intpk", "composite", "without_rowid", "rowid"]))
        keys: list[tuple[str, str]] = []
        if kind == "intpk":
            keys = [("id", "INTEGER")]
        elif kind in ("composite", "without_rowid"):
            keys = [("k0", draw(st.sampled_from(sorted(KEY_VALUES)))), ("k1", "TEXT")]
        name = f"t{index}" if draw(st.booleans()) else f'odd "name" {index}'
        tables.append({"name": name, "kind": kind, "keys": keys, "columns": columns})
    return tables


def create_sql(table: dict[str, Any]) -> str:
    quote = '"' + table["name"].replace('"', '""') + '"'
    cols = [f"{name} {kind} NOT NULL" for name, kind in table["keys"]]
    if table["kind"] == "intpk":
        cols = ["id INTEGER PRIMARY KEY"]
    cols += [f"{name} {kind}" for name, kind in table["columns"]]
    if table["kind"] in ("composite", "without_rowid"):
        cols.append("PRIMARY KEY (k0, k1)")
    tail = " WITHOUT ROWID" if table["kind"] == "without_rowid" else ""
    return f"CREATE TABLE {quote} ({', '.join(cols)}){tail};"


def row(draw: Any, table: dict[str, Any]) -> dict[str, Any]:
    values = {name: draw(KEY_VALUES[kind]) for name, kind in table["keys"]}
    values.update({name: draw(st.none() | TYPES[kind]) for name, kind in table["columns"]})
    return values


@st.composite
def scenarios(draw: Any) -> tuple[list[dict[str, Any]], list[Any], list[Any]]:
    tables = draw(schemas())
    seed_rows = [(t["name"], row(draw, t)) for t in tables for _ in range(draw(st.integers(0, 4)))]
    ops = []
    for _ in range(draw(st.integers(0, 12))):
        table = draw(st.sampled_from(tables))
        op = draw(st.sampled_from(["insert", "replace", "update", "delete", "restore"]))
        ops.append((op, table["name"], row(draw, table), draw(st.integers(0, 10))))
    return tables, seed_rows, ops


def build(tables: list[dict[str, Any]], seed_rows: list[Any]) -> Snapshot:
    def populate(conn: sqlite3.Connection, _: Any) -> None:
        for name, values in seed_rows:
            insert(conn, name, values, "INSERT OR IGNORE")

    return Snapshot.build("random", "\n".join(map(create_sql, tables)), populate)


def insert(conn: sqlite3.Connection, table: str, values: dict[str, Any], verb: str) -> None:
    quoted = '"' + table.replace('"', '""') + '"'
    conn.execute(
        f"{verb} INTO {quoted} ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
        list(values.values()),
    )


def apply(world: ToolWorld, op: str, table: str, values: dict[str, Any], pick: int) -> None:
    conn = world.conn
    quoted = '"' + table.replace('"', '""') + '"'
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]
    keyed = "WITHOUT ROWID" in sql
    try:
        if op in ("insert", "replace"):
            insert(conn, table, values, "INSERT" if op == "insert" else "INSERT OR REPLACE")
        elif op in ("update", "restore"):
            sets = ", ".join(f"{k} = ?" for k in values)
            where, args = _target(conn, quoted, keyed, pick)
            before = conn.execute(f"SELECT * FROM {quoted} WHERE {where}", args).fetchone()
            conn.execute(f"UPDATE {quoted} SET {sets} WHERE {where}", [*values.values(), *args])
            if op == "restore" and before is not None:  # a change, then its undo
                names = [d[1] for d in conn.execute(f"PRAGMA table_info({quoted})")]
                conn.execute(f"DELETE FROM {quoted} WHERE {where}", args)
                insert(conn, table, dict(zip(names, before, strict=True)), "INSERT OR REPLACE")
        else:
            where, args = _target(conn, quoted, keyed, pick)
            conn.execute(f"DELETE FROM {quoted} WHERE {where}", args)
    except sqlite3.IntegrityError:
        pass


def _target(conn: sqlite3.Connection, quoted: str, keyed: bool, pick: int) -> tuple[str, list[Any]]:
    columns = "k0, k1" if keyed else "rowid"
    keys = conn.execute(f"SELECT {columns} FROM {quoted} ORDER BY {columns}").fetchall()
    if not keys:
        return "0", []
    where = "k0 = ? AND k1 = ?" if keyed else "rowid = ?"
    return where, list(keys[pick % len(keys)])


def same(left: Any, right: Any) -> bool:
    return canonical_bytes(left) == canonical_bytes(right)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_audit_diff_equals_full_scan_diff(scenario: Any) -> None:
    tables, seed_rows, ops = scenario
    snap = build(tables, seed_rows)
    with ToolWorld(snap, []) as world:
        for op in ops:
            apply(world, *op)
        audit = world.diff()
        assert same(audit, world.scan_diff())
        layouts = {t.name: t for t in snap.tables}
        assert same(diff_from_events(world.audit_history(), layouts), audit)
        world.reset()
        assert world.diff() == {}
        assert world.scan_diff() == {}


@pytest.mark.skipif(
    SQLDIFF is None,
    reason="sqldiff is not installed: apt-get install sqlite3-tools (make test tries to)",
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_diff_agrees_with_sqldiff_primarykey(tmp_path_factory: Any, scenario: Any) -> None:
    tables, seed_rows, ops = scenario
    tables = [t for t in tables if '"' not in t["name"]] or tables[:0]
    if not tables:
        return
    snap = build(tables, [r for r in seed_rows if '"' not in r[0]])
    folder = tmp_path_factory.mktemp("sqldiff")
    before = snap.save(folder / "before.db")
    with ToolWorld(snap, [], path=folder / "after.db") as world:
        for op in ops:
            if '"' not in op[1]:
                apply(world, *op)
        ours = world.diff()
        world.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert same(ours, diff_databases(str(before), str(folder / "after.db")))
    assert sqldiff_counts(before, folder / "after.db") == our_counts(ours)


def sqldiff_counts(before: Path, after: Path) -> Counter[tuple[str, str]]:
    out = subprocess.run(
        [str(SQLDIFF), "--primarykey", str(before), str(after)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts: Counter[tuple[str, str]] = Counter()
    for line in out.splitlines():
        match = re.match(r"(INSERT INTO|UPDATE|DELETE FROM) (\w+)", line)
        if match and not match.group(2).startswith("_onrecord_"):
            counts[(match.group(2), match.group(1).split()[0])] += 1
    return counts


def our_counts(diff: dict[str, Any]) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for table, parts in diff.items():
        for kind, verb in (("created", "INSERT"), ("changed", "UPDATE"), ("deleted", "DELETE")):
            if parts[kind]:
                counts[(table, verb)] += len(parts[kind])
    return counts


def test_forbidden_change_then_restoration_is_visible_in_the_audit(world: ToolWorld) -> None:
    world.call("set_status", {"claim_id": 5, "status": "written_off"})
    world.call("set_status", {"claim_id": 5, "status": "open"})
    assert world.diff() == {}  # the end state looks clean...
    history = world.audit_history()
    assert [(e["step"], e["op"], e["key"], e["new"]["status"]) for e in history] == [
        (1, "update", 5, "written_off"),
        (2, "update", 5, "open"),
    ]
    assert history[0]["old"]["status"] == "open"


def test_diff_format_and_ordering(world: ToolWorld) -> None:
    world.call("allocate", {"claim_id": 2, "amount": 1.0})
    world.call("allocate", {"claim_id": 1, "amount": 2.0, "memo": "m"})
    world.call("tag_claim", {"claim_id": 17, "tag": "urgent"})  # REPLACE of an equal row
    world.call("tag_claim", {"claim_id": 3, "tag": "a"})
    world.call("set_status", {"claim_id": 4, "status": "closed"})
    diff = world.diff()
    assert list(diff) == ["allocations", "claims", "tags"]
    assert diff["allocations"]["created"] == [
        {"id": 1, "claim_id": 2, "amount": 1.0, "memo": ""},
        {"id": 2, "claim_id": 1, "amount": 2.0, "memo": "m"},
    ]
    change = diff["claims"]["changed"][0]
    assert (change["key"], change["before"]["status"], change["after"]["status"]) == (
        4,
        "open",
        "closed",
    )
    assert diff["tags"] == {"created": [{"claim_id": 3, "tag": "a"}], "changed": [], "deleted": []}
    assert same(diff, world.scan_diff())


def test_blobs_rowid_tables_and_storage_classes(snap: Snapshot) -> None:
    with claims_env.world(snap) as world:
        world.conn.execute("UPDATE events SET payload = 'ÿ' WHERE kind = 'seed'")  # text now
        world.conn.execute("INSERT INTO events VALUES (1, 1.0)")
        world.conn.execute("UPDATE claims SET amount = amount WHERE id = 1")  # no-op update
        diff = world.diff()
        assert diff["events"]["changed"][0]["before"] == {
            "rowid": 1,
            "kind": "seed",
            "payload": {"$blob": "00ff"},
        }
        assert diff["events"]["created"] == [{"rowid": 2, "kind": "1", "payload": 1.0}]
        assert "claims" not in diff
        assert same(diff, world.scan_diff())


def test_untyped_column_int_to_float_is_a_change() -> None:
    snap = Snapshot.build(
        "untyped",
        "CREATE TABLE u (id INTEGER PRIMARY KEY, v)",
        lambda conn, rng: conn.execute("INSERT INTO u VALUES (1, 1)"),
    )
    with ToolWorld(snap, []) as world:
        world.conn.execute("UPDATE u SET v = 1.0")  # equal by value, not by storage class
        diff = world.diff()
        assert diff == {
            "u": {
                "created": [],
                "deleted": [],
                "changed": [{"key": 1, "before": {"id": 1, "v": 1}, "after": {"id": 1, "v": 1.0}}],
            }
        }
        assert same(diff, world.scan_diff())


@settings(max_examples=200, deadline=None)
@given(
    columns=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6, unique=True),
    data=st.data(),
)
def test_compiled_row_builder_equals_zip_for_any_column_names(
    columns: list[str], data: Any
) -> None:
    # Column names reach the generated source only as repr() literals: quotes,
    # backslashes, braces and newlines must come back as the same keys.
    from onrecord.envkit._sql import Table

    table = Table("t", tuple(columns), (columns[0],), "")
    values = data.draw(st.tuples(*[st.integers() | st.text(max_size=3) for _ in columns]))
    assert table.row_of(values) == dict(zip(columns, values, strict=True))


def test_row_builder_with_hostile_column_names_in_a_real_database(tmp_path: Path) -> None:
    names = ['a"b', "it's", "x\\ny", "{}", "'); import os; ('", "ünï"]
    declared = ", ".join(f'"{name.replace(chr(34), chr(34) * 2)}" TEXT' for name in names)

    def populate(conn: sqlite3.Connection, rng: Any) -> None:
        conn.execute("INSERT INTO odd VALUES (1, 'v', 'w', 'x', 'y', 'z', 'q')")

    snapshot = Snapshot.build(
        "odd", f"CREATE TABLE odd (id INTEGER PRIMARY KEY, {declared});", populate, seed=0
    )
    with ToolWorld(snapshot, [], path=tmp_path / "odd.db") as world:
        world.conn.execute("UPDATE odd SET \"it's\" = 'changed' WHERE id = 1")
        world.conn.commit()
        assert world.diff() == world.scan_diff()
        changed = world.diff()["odd"]["changed"][0]
        assert changed["before"]["it's"] == "w"
        assert changed["after"]["it's"] == "changed"
        assert set(changed["after"]) == {"id", *names}
