from __future__ import annotations

import math
import re
import shutil
import sqlite3
import subprocess
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
    # Every example, quoted table names included: sqldiff quotes them and the parser
    # below reads them. Rows are compared, not counts: keys of created, changed and
    # deleted rows, the values of created rows, and the new values an UPDATE sets.
    tables, seed_rows, ops = scenario
    snap = build(tables, seed_rows)
    folder = tmp_path_factory.mktemp("sqldiff")
    before = snap.save(folder / "before.db")
    with ToolWorld(snap, [], path=folder / "after.db") as world:
        for op in ops:
            apply(world, *op)
        ours = world.diff()
        world.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert same(ours, diff_databases(str(before), str(folder / "after.db")))
    keys = {t["name"]: KEY_COLUMNS[t["kind"]] for t in tables}
    theirs = sqldiff_changes(before, folder / "after.db", keys)
    assert sorted(theirs) == sorted(ours)
    for name, parts in theirs.items():
        mine = our_changes(ours[name], keys[name])
        for kind in ("created", "changed", "deleted"):
            assert sorted(parts[kind]) == sorted(mine[kind]), (name, kind)
            for key, values in parts[kind].items():
                assert printed_alike(values, mine[kind][key]), (name, kind, key)


KEY_COLUMNS = {
    "intpk": ("id",),
    "composite": ("k0", "k1"),
    "without_rowid": ("k0", "k1"),
    "rowid": ("rowid",),
}
TOKEN = re.compile(
    r"""\s*(?:(?P<text>'(?:[^']|'')*')|(?P<blob>[xX]'[0-9a-fA-F]*')"""
    r"""|(?P<number>-?[0-9][0-9.eE+-]*)|(?P<name>"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_]*)"""
    r"""|(?P<op>\|\||[(),=;]))"""
)
VERBS = {("INSERT", "INTO"): "created", ("UPDATE",): "changed", ("DELETE", "FROM"): "deleted"}


def sqldiff_changes(
    before: Path, after: Path, keys: dict[str, tuple[str, ...]]
) -> dict[str, dict[str, dict[tuple[Any, ...], dict[str, Any]]]]:
    """What ``sqldiff --primarykey`` says changed, read from its SQL: per table and kind,
    ``{key: values}`` with the whole row for an INSERT, the columns it sets for an
    UPDATE and nothing for a DELETE."""
    out = subprocess.run(
        [str(SQLDIFF), "--primarykey", str(before), str(after)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    literals = sqlite3.connect(":memory:")  # evaluates sqldiff's literals, nothing else
    changes: dict[str, dict[str, dict[tuple[Any, ...], dict[str, Any]]]] = {}
    statement = ""
    for line in out.splitlines(keepends=True):
        statement += line
        if not sqlite3.complete_statement(statement):
            continue
        matches = list(TOKEN.finditer(statement))
        ends = [0] + [m.end() for m in matches]
        assert [m.start() for m in matches] == ends[:-1], f"unparsed: {statement!r}"
        assert statement[ends[-1] :] == "\n", f"unparsed: {statement!r}"
        tokens = [(m.lastgroup, m.group(m.lastgroup)) for m in matches]
        statement = ""
        words = tuple(text.upper() for _, text in tokens[: 2 if tokens[0][1] != "UPDATE" else 1])
        table = unquote(tokens[len(words)][1])
        if table.startswith("_onrecord_"):
            continue
        kind, rest = VERBS[words], tokens[len(words) + 1 :]
        if kind == "created":
            columns, rest = names_in_parentheses(rest)
            assert rest[0][1].upper() == "VALUES"
            found_values, rest = expressions(rest[1:], literals)
            values = dict(zip(columns, found_values, strict=True))
            key = tuple(values[column] for column in keys[table])
        else:
            values = {}
            if kind == "changed":
                assert rest[0][1].upper() == "SET"
                values, rest = assignments(rest[1:], ",", literals)
            assert rest[0][1].upper() == "WHERE"
            where, rest = assignments(rest[1:], "AND", literals)
            assert tuple(where) == keys[table], statement
            key = tuple(where.values())
        assert [text for _, text in rest] == [";"], f"unparsed tail: {rest}"
        found = changes.setdefault(table, {"created": {}, "changed": {}, "deleted": {}})
        assert key not in found[kind], f"sqldiff names {table} {key} twice"
        found[kind][key] = values
    assert statement.strip() == "", f"unfinished sqldiff output: {statement!r}"
    return changes


def unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name


def names_in_parentheses(tokens: list[Any]) -> tuple[list[str], list[Any]]:
    end = [text for _, text in tokens].index(")")
    assert tokens[0][1] == "("
    return [unquote(text) for _, text in tokens[1:end:2]], tokens[end + 1 :]


def expressions(tokens: list[Any], literals: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
    """The values of ``(literal[||literal...], ...)``, by SQLite's own reading."""
    assert tokens[0][1] == "("
    assert tokens[-2][1] == ")"
    values, current = [], []
    for kind, text in tokens[1:-1]:
        if text in (",", ")"):
            values.append(literal(current, literals))
            current = []
        else:
            assert kind in ("text", "blob", "number", "op") or text.upper() == "NULL", text
            current.append(text)
    return values, tokens[-1:]


def assignments(
    tokens: list[Any], separator: str, literals: sqlite3.Connection
) -> tuple[dict[str, Any], list[Any]]:
    """``name=literal`` pairs joined by ``separator`` (``,`` or ``AND``)."""
    result: dict[str, Any] = {}
    at = 0
    while True:
        name, equals = unquote(tokens[at][1]), tokens[at + 1][1]
        assert equals == "=", tokens
        assert name not in result, tokens
        at += 2
        parts = []
        while tokens[at][1] not in (";", ",") and tokens[at][1].upper() not in ("WHERE", "AND"):
            parts.append(tokens[at][1])
            at += 1
        result[name] = literal(parts, literals)
        if tokens[at][1].upper() != separator:
            return result, tokens[at:]
        at += 1


def literal(parts: list[str], literals: sqlite3.Connection) -> Any:
    assert parts, "a value is missing"
    assert all(part == "||" for part in parts[1::2]), parts
    return literals.execute(f"SELECT {' '.join(parts)}").fetchone()[0]


def our_changes(
    parts: dict[str, list[Any]], key_columns: tuple[str, ...]
) -> dict[str, dict[tuple[Any, ...], dict[str, Any]]]:
    """The kit's diff of one table in the shape of :func:`sqldiff_changes`."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[column] for column in key_columns)

    changed = {}
    for change in parts["changed"]:
        old, new = plain(change["before"]), plain(change["after"])
        assert (
            key(old)
            == key(new)
            == tuple(change["key"] if len(key_columns) > 1 else [change["key"]])
        )
        changed[key(new)] = {
            c: v for c, v in new.items() if old[c] != v or type(old[c]) is not type(v)
        }
    return {
        "created": {key(row): row for row in map(plain, parts["created"])},
        "changed": changed,
        "deleted": {key(row): {} for row in map(plain, parts["deleted"])},
    }


def plain(row: dict[str, Any]) -> dict[str, Any]:
    return {
        column: bytes.fromhex(value["$blob"]) if isinstance(value, dict) else value
        for column, value in row.items()
    }


def printed_alike(theirs: dict[str, Any], ours: dict[str, Any]) -> bool:
    """sqldiff prints REALs with 15 significant digits and TEXT up to its first NUL;
    anything else must be the same value of the same type."""
    if theirs.keys() != ours.keys():
        return False
    for column, value in ours.items():
        printed = theirs[column]
        if isinstance(value, float):
            if not isinstance(printed, float) or not (
                printed == float(f"{value:.15g}") or math.isclose(printed, value, rel_tol=1e-14)
            ):
                return False
        elif isinstance(value, str):
            if printed != value.split("\x00")[0]:
                return False
        elif type(printed) is not type(value) or printed != value:
            return False
    return True


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
