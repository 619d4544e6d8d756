"""Property tests of snapshot, reset, audit and diff on real SQLite files.

Random schemas (INTEGER PRIMARY KEY, text keys with collations, composite keys,
WITHOUT ROWID, no declared key, a column named ``rowid``, names that need quoting) and
random tool calls (inserts, REPLACE, updates of values and of keys, deletes,
delete-then-reinsert, change-then-restore; NULLs, BLOBs, ``1`` vs ``1.0``, infinities,
unicode and long text). After every episode the audit-fold diff, the full-scan diff and
a diff computed here with plain SELECTs must agree, and a reset must give back the
snapshot exactly, episode after episode.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

NAMES = ["t0", "order", "a b", 'q"t', "it's", "Mixed"]
COLUMN_TYPES = ["INTEGER", "REAL", "TEXT", "BLOB", "", "NUMERIC", "TEXT COLLATE NOCASE"]
KINDS = [
    "intpk",
    "textpk",
    "composite",
    "without_rowid",
    "nokey",
    "rowid_column",
    "anykey",  # an untyped key: 1, 1.0, '1' and x'31'
    "autoincrement",  # with a UNIQUE column, so a REPLACE can displace another row
]
COLLATIONS = ["BINARY", "NOCASE", "RTRIM"]
VALUES = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([1.0, -0.5, 2.0, math.inf, -math.inf, 1e300]),
    st.floats(allow_nan=False, width=32),
    st.text(max_size=4),
    st.text("aAé\u0301😀 '\"", max_size=3),
    st.just("x" * 5000),
    st.binary(max_size=3),
)
TEXT_KEYS = st.text("aAb ", min_size=1, max_size=2)
ANY_KEYS = st.sampled_from([1, 1.0, 2, 2.5, "1", "a", b"1"])


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@st.composite
def tables(draw: Any) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
    made = []
    for name in names:
        kind = draw(st.sampled_from(KINDS))
        columns = [
            (f"c{i}", draw(st.sampled_from(COLUMN_TYPES))) for i in range(draw(st.integers(1, 3)))
        ]
        if kind == "rowid_column":
            columns[0] = ("rowid", "TEXT")
        made.append(
            {
                "name": name,
                "kind": kind,
                "columns": columns,
                "collation": draw(st.sampled_from(COLLATIONS)),
            }
        )
    return made


def create_sql(table: dict[str, Any]) -> str:
    kind, coll = table["kind"], table["collation"]
    cols = [f"{q(name)} {kind_}" for name, kind_ in table["columns"]]
    if kind == "intpk":
        cols.insert(0, "id INTEGER PRIMARY KEY")
    elif kind == "textpk":
        cols.insert(0, f"k TEXT COLLATE {coll} PRIMARY KEY NOT NULL")
    elif kind == "anykey":
        cols.insert(0, "k PRIMARY KEY NOT NULL")
    elif kind == "autoincrement":
        cols[0] = f"{cols[0]} UNIQUE"
        cols.insert(0, "id INTEGER PRIMARY KEY AUTOINCREMENT")
    elif kind in ("composite", "without_rowid"):
        cols[:0] = ["k0 INTEGER NOT NULL", f"k1 TEXT COLLATE {coll} NOT NULL"]
        cols.append("PRIMARY KEY (k0, k1)")
    tail = " WITHOUT ROWID" if kind == "without_rowid" else ""
    return f"CREATE TABLE {q(table['name'])} ({', '.join(cols)}){tail};"


def key_columns(table: dict[str, Any]) -> list[str]:
    return {
        "intpk": ["id"],
        "autoincrement": ["id"],
        "textpk": ["k"],
        "anykey": ["k"],
        "composite": ["k0", "k1"],
        "without_rowid": ["k0", "k1"],
    }.get(table["kind"], [])


def row_values(draw: Any, table: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    kind = table["kind"]
    if kind == "intpk":
        values["id"] = draw(st.integers(1, 6))
    elif kind == "textpk":
        values["k"] = draw(TEXT_KEYS)
    elif kind == "anykey":
        values["k"] = draw(ANY_KEYS)
    elif kind == "autoincrement":
        values["id"] = draw(st.integers(1, 6))
    elif kind in ("composite", "without_rowid"):
        values["k0"], values["k1"] = draw(st.integers(0, 2)), draw(TEXT_KEYS)
    for name, _ in table["columns"]:
        values[name] = draw(VALUES)
    return values


@st.composite
def scenarios(draw: Any) -> tuple[list[dict[str, Any]], list[Any], list[list[Any]]]:
    made = draw(tables())
    seed = [(t["name"], row_values(draw, t)) for t in made for _ in range(draw(st.integers(0, 4)))]
    episodes = []
    for _ in range(draw(st.integers(1, 3))):
        calls = []
        for _ in range(draw(st.integers(0, 8))):
            table = draw(st.sampled_from(made))
            op = draw(
                st.sampled_from(
                    ["insert", "replace", "update", "rekey", "delete", "reinsert", "restore"]
                )
            )
            calls.append((op, table, row_values(draw, table), draw(st.integers(0, 9))))
        episodes.append(calls)
    return made, seed, episodes


# -- the tool: JSON arguments, so BLOBs and infinities travel tagged -------------------------


def encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$blob": value.hex()}
    if isinstance(value, float) and math.isinf(value):
        return {"$inf": value > 0}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        return (
            bytes.fromhex(value["$blob"])
            if "$blob" in value
            else (math.inf if value["$inf"] else -math.inf)
        )
    return value


@tool(writes=True)
def run_sql(ctx: ToolContext, statements: list[list[Any]]) -> int:
    """Run statements ``[sql, params]`` (test only)."""
    for sql, params in statements:
        ctx.execute(sql, [decode(value) for value in params])
    return len(statements)


def insert_sql(table: dict[str, Any], values: dict[str, Any], verb: str = "INSERT") -> list[Any]:
    names = ", ".join(map(q, values))
    marks = ", ".join("?" for _ in values)
    return [
        f"{verb} INTO {q(table['name'])} ({names}) VALUES ({marks})",
        [encode(v) for v in values.values()],
    ]


def identity(table: dict[str, Any]) -> list[str]:
    """Columns that pick one row (the rowid under a name no column hides)."""
    if table["kind"] == "without_rowid":
        return ["k0", "k1"]
    return ["_rowid_" if table["kind"] == "rowid_column" else "rowid"]


def statements(
    conn: sqlite3.Connection, op: str, table: dict[str, Any], values: dict[str, Any], pick: int
) -> list[list[list[Any]]]:
    """The calls (each a list of statements) that perform ``op``."""
    name, ident = q(table["name"]), identity(table)
    if op in ("insert", "replace"):
        if table["kind"] == "autoincrement" and pick % 2:  # let AUTOINCREMENT pick the id
            values = {name: value for name, value in values.items() if name != "id"}
        return [[insert_sql(table, values, "INSERT" if op == "insert" else "INSERT OR REPLACE")]]
    found = conn.execute(
        f"SELECT {', '.join(map(q, ident))}, * FROM {name} ORDER BY {', '.join(map(q, ident))}"
    ).fetchall()
    if not found:
        return []
    row = found[pick % len(found)]
    where = " AND ".join(f"{q(c)} = ? COLLATE BINARY" for c in ident)
    at = [encode(v) for v in row[: len(ident)]]
    columns = [d[1] for d in conn.execute(f"PRAGMA table_info({name})")]
    old = dict(zip(columns, row[len(ident) :], strict=True))
    plain = [c for c, _ in table["columns"]]
    if op == "delete":
        return [[[f"DELETE FROM {name} WHERE {where}", at]]]
    if op == "reinsert":  # the same row deleted and put back, in one call
        again = {**old, **({} if pick % 2 else {plain[-1]: values[plain[-1]]})}
        return [[[f"DELETE FROM {name} WHERE {where}", at], insert_sql(table, again)]]
    keys = key_columns(table) or [c for c in ident if c in columns]
    targets = keys if op == "rekey" and keys else plain
    sets = ", ".join(f"{q(c)} = ?" for c in targets)
    change = [f"UPDATE {name} SET {sets} WHERE {where}", [encode(values[c]) for c in targets] + at]
    if op != "restore" or targets != plain:
        return [[change]]
    back = [f"UPDATE {name} SET {sets} WHERE {where}", [encode(old[c]) for c in targets] + at]
    return [[change], [back]]  # a change, then its restoration in a later call


# -- an independent diff, with plain SELECTs ---------------------------------------------------


def tag(value: Any) -> tuple[str, Any]:
    if isinstance(value, dict):
        value = bytes.fromhex(value["$blob"])
    return (type(value).__name__, value.hex() if isinstance(value, bytes) else repr(value))


def plain_rows(conn: sqlite3.Connection, schema: str, table: dict[str, Any]) -> dict[Any, Any]:
    keys = key_columns(table)
    alias = [] if keys else (["_rowid_"] if table["kind"] == "rowid_column" else ["rowid"])
    picked = keys or alias
    cursor = conn.execute(f"SELECT {', '.join(map(q, picked))}, * FROM {schema}.{q(table['name'])}")
    out = {}
    for row in cursor:
        # Keys as SQLite tells them apart, text byte for byte: 1 and 1.0 are one key.
        key = tuple(row[: len(picked)])
        out[key] = tuple(tag(value) for value in row[0 if alias else len(picked) :])
    return out


def _as_sql_compares(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row's tags as SQLite compares values (as ``sqldiff`` does): 0.0 and -0.0 are one
    value, so a sign-of-zero rewrite is no change in a diff (the state digest, over the
    stored values, still tells them apart)."""
    return tuple(("float", "0.0") if tagged == ("float", "-0.0") else tagged for tagged in row)


def plain_diff(conn: sqlite3.Connection, made: list[dict[str, Any]]) -> dict[str, Any]:
    diff = {}
    for table in made:
        old, new = plain_rows(conn, "main", table), plain_rows(conn, "cur", table)
        part = (
            sorted(new[k] for k in new.keys() - old.keys()),
            sorted(
                (old[k], new[k])
                for k in new.keys() & old.keys()
                if _as_sql_compares(old[k]) != _as_sql_compares(new[k])
            ),
            sorted(old[k] for k in old.keys() - new.keys()),
        )
        if any(part):
            diff[table["name"]] = part
    return diff


def normal(diff: dict[str, Any]) -> dict[str, Any]:
    """A kit diff in the shape of :func:`plain_diff`."""

    def row(values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(tag(v) for v in values.values())

    return {
        name: (
            sorted(row(r) for r in part["created"]),
            sorted((row(c["before"]), row(c["after"])) for c in part["changed"]),
            sorted(row(r) for r in part["deleted"]),
        )
        for name, part in diff.items()
    }


def full_state(conn: sqlite3.Connection) -> dict[str, Any]:
    """Schema and every row of every table (internal ones too), rowids included."""
    state: dict[str, Any] = {
        "schema": conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name"
        ).fetchall()
    }
    for name, without in conn.execute(
        "SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table'"
    ).fetchall():
        taken = {d[1].lower() for d in conn.execute(f"PRAGMA table_info({q(name)})")}
        alias = next(a for a in ("rowid", "_rowid_", "oid") if a not in taken)
        rows = conn.execute(f"SELECT {'' if without else alias + ', '}* FROM {q(name)}")
        state[name] = sorted(tuple(tag(v) for v in row) for row in rows)
    return state


def build(made: list[dict[str, Any]], seed: list[Any]) -> Snapshot:
    def populate(conn: sqlite3.Connection, _: Any) -> None:
        for name, values in seed:
            table = next(t for t in made if t["name"] == name)
            sql, params = insert_sql(table, values, "INSERT OR IGNORE")
            conn.execute(sql, [decode(v) for v in params])

    return Snapshot.build("property", "\n".join(map(create_sql, made)), populate)


def play(world: ToolWorld, made: list[dict[str, Any]], calls: list[Any]) -> None:
    for op, table, values, pick in calls:
        for batch in statements(world.conn, op, table, values, pick):
            event = world.call("run_sql", {"statements": batch})
            assert event["status"] in ("ok", "error"), event  # constraint errors roll back
            if event["status"] == "error":
                assert "IntegrityError" in event["error"]["message"], event


def check_diffs(world: ToolWorld, made: list[dict[str, Any]]) -> None:
    audit = world.diff()
    assert normal(audit) == normal(world.scan_diff())
    pristine = world.snapshot.connection
    pristine.execute("ATTACH DATABASE ? AS cur", (f"file:{world.path}?mode=ro",))
    try:
        assert normal(audit) == plain_diff(pristine, made)
    finally:
        pristine.execute("DETACH DATABASE cur")


@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_diffs_agree_and_reset_restores_the_snapshot(tmp_path_factory: Any, scenario: Any) -> None:
    made, seed, episodes = scenario
    snap = build(made, seed)
    pristine = full_state(snap.connection)
    saved = Snapshot.from_file(snap.save(tmp_path_factory.mktemp("snap") / "s.db"))
    assert saved.digest == snap.digest
    assert full_state(saved.connection) == pristine
    with ToolWorld(snap, [run_sql]) as world:
        assert full_state(world.conn) == pristine
        for calls in episodes:
            play(world, made, calls)
            check_diffs(world, made)
            world.reset()
            assert world.state_digest() == snap.digest
            assert full_state(world.conn) == pristine
            assert world.diff() == {}
            assert world.scan_diff() == {}
            assert world.audit_history() == []
