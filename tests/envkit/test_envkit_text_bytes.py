"""TEXT whose bytes are not valid UTF-8 (``CAST(x'ff' AS TEXT)``) on real SQLite files.

Python's ``sqlite3`` cannot read such a value, and before the fix every reader of the
kit (audit diff, digest, save_episode, observer, reveal, scan) raised
``OperationalError: Could not decode to UTF-8``, losing the episode's evidence. Such
text is ``{"$text": hex}`` in JSON and ``RawText`` in memory: distinct from valid text
and from the BLOB with the same bytes, and restored byte for byte by reset.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import canonical_bytes
from onrecord.envkit import (
    RawText,
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    changed,
    check_rules,
    created,
    deleted,
    diff_databases,
    diff_from_events,
    environment_problems,
    replay,
    run_checks,
    save_episode,
    state_digest,
    step_diff,
    tool,
)
from onrecord.envkit._sql import native_value, portable_value, sort_key, sql_param
from onrecord.envkit._text import lossless
from onrecord.envkit.audit import audit_tables

SCHEMA = """
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
CREATE TABLE tags (k PRIMARY KEY, v INTEGER) WITHOUT ROWID;
CREATE TABLE secrets (id INTEGER PRIMARY KEY, body TEXT);
"""
HEX = Annotated[str, {"pattern": "^([0-9a-f]{2})*$"}]


def populate(conn: sqlite3.Connection, rng: Any) -> None:
    conn.execute("INSERT INTO notes VALUES (1, 'hello'), (3, 'é😀')")
    conn.execute("INSERT INTO notes VALUES (2, CAST(x'fe' AS TEXT))")
    conn.execute("INSERT INTO secrets VALUES (1, CAST(x'c0af' AS TEXT))")


@tool(writes=True, example={"id": 1, "data": "ff"})
def put_text(ctx: ToolContext, id: int, data: HEX) -> dict[str, Any]:
    """Store bytes as TEXT (an agent hiding a change behind undecodable text)."""
    ctx.execute(
        "INSERT INTO notes VALUES (?, CAST(? AS TEXT)) "
        "ON CONFLICT(id) DO UPDATE SET body = excluded.body",
        (id, bytes.fromhex(data)),
    )
    return {}


@tool(writes=True, example={"id": 1, "data": "ff"})
def put_blob(ctx: ToolContext, id: int, data: HEX) -> dict[str, Any]:
    """Store bytes as a BLOB."""
    ctx.execute(
        "INSERT INTO notes VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body",
        (id, bytes.fromhex(data)),
    )
    return {}


@tool(writes=True, example={"id": 1, "text": "hi"})
def put_str(ctx: ToolContext, id: int, text: str) -> dict[str, Any]:
    """Store a string."""
    ctx.execute(
        "INSERT INTO notes VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body",
        (id, text),
    )
    return {}


@tool(writes=True, example={"data": "ff", "blob": False})
def tag(ctx: ToolContext, data: HEX, blob: bool) -> dict[str, Any]:
    """A tag keyed by bytes, as TEXT or as a BLOB."""
    cast = "?" if blob else "CAST(? AS TEXT)"
    ctx.execute(f"INSERT INTO tags VALUES ({cast}, 1)", (bytes.fromhex(data),))
    return {}


@tool(writes=True, example={"id": 3})
def drop_note(ctx: ToolContext, id: int) -> dict[str, Any]:
    """Delete a note."""
    ctx.execute("DELETE FROM notes WHERE id = ?", (id,))
    return {}


@tool(example={"id": 1})
def read_secret(ctx: ToolContext, id: int) -> Any:
    """Reveal a hidden record."""
    return ctx.reveal("secrets", id)


@tool(example={"id": 3})
def read_note(ctx: ToolContext, id: int) -> Any:
    """Read a note with plain sqlite3 decoding."""
    return ctx.one("SELECT body FROM notes WHERE id = ?", (id,))


TOOLS = [put_text, put_blob, put_str, tag, drop_note, read_secret, read_note]


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("text-bytes", SCHEMA, populate, seed=0)


@pytest.fixture
def world(snap: Snapshot, tmp_path: Path) -> Iterator[ToolWorld]:
    with ToolWorld(snap, TOOLS, path=tmp_path / "world.db", hidden=["secrets"]) as built:
        yield built


def shown(data: bytes) -> Any:
    """How a TEXT value with these bytes appears in JSON."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"$text": data.hex()}


def stored(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every user row as (table, key, typeof, hex): byte-exact, independent of decoding."""
    return [
        *conn.execute("SELECT 'notes', id, typeof(body), hex(body) FROM notes ORDER BY id"),
        *conn.execute("SELECT 'tags', hex(k), typeof(k), v FROM tags ORDER BY k"),
        *conn.execute("SELECT 'secrets', id, typeof(body), hex(body) FROM secrets ORDER BY id"),
    ]


def oracle_value(kind: str, hexed: str | None, number: Any) -> Any:
    if kind == "null":
        return None
    if kind in ("integer", "real"):
        return number
    data = bytes.fromhex(hexed or "")
    return {"$blob": data.hex()} if kind == "blob" else shown(data)


def oracle_digest(conn: sqlite3.Connection) -> str:
    """The digest as docs/envkit.md defines it, computed from typeof() and hex() alone."""
    tables = []
    for table in audit_tables(conn):
        layout = table[0]
        sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (layout.name,))
        parts = ", ".join(
            f'typeof("{c}"), hex("{c}"), CASE WHEN typeof("{c}") IN (\'integer\', \'real\') '
            f'THEN "{c}" END'
            for c in layout.columns
        )
        order = ", ".join(f'"{c}"' for c in layout.key)
        rows = conn.execute(f'SELECT {parts} FROM "{layout.name}" ORDER BY {order}').fetchall()
        values = [[oracle_value(*row[i : i + 3]) for i in range(0, len(row), 3)] for row in rows]
        tables.append([layout.name, sql.fetchone()[0], values])
    return hashlib.sha256(canonical_bytes(tables)).hexdigest()


def layouts(world: ToolWorld) -> dict[str, Any]:
    return {table.name: table for table, _ in audit_tables(world.conn)}


# -- diff, audit, digest --------------------------------------------------------------


def test_a_change_to_undecodable_text_shows_in_the_diff(world: ToolWorld) -> None:
    assert world.call("put_text", {"id": 1, "data": "ff"})["status"] == "ok"
    diff = world.diff()
    assert diff == {
        "notes": {
            "created": [],
            "changed": [
                {
                    "key": 1,
                    "before": {"id": 1, "body": "hello"},
                    "after": {"id": 1, "body": {"$text": "ff"}},
                }
            ],
            "deleted": [],
        }
    }
    assert world.scan_diff() == diff
    history = world.audit_history()
    assert [event["new"]["body"] for event in history] == [{"$text": "ff"}]
    assert world.history_and_diff() == (history, diff)
    assert diff_from_events(history, layouts(world)) == diff


def test_a_change_between_two_undecodable_values_is_a_change(world: ToolWorld) -> None:
    world.call("put_text", {"id": 2, "data": "ff"})  # the snapshot holds x'fe' there
    change = world.diff()["notes"]["changed"]
    assert change == [
        {
            "key": 2,
            "before": {"id": 2, "body": {"$text": "fe"}},
            "after": {"id": 2, "body": {"$text": "ff"}},
        }
    ]
    world.call("put_text", {"id": 2, "data": "fe"})  # back: no end-state change
    assert world.diff() == {} == world.scan_diff()
    assert len(world.audit_history()) == 2  # but the history keeps both


def test_text_and_blob_with_the_same_bytes_are_different_keys(world: ToolWorld) -> None:
    world.call("tag", {"data": "ff", "blob": False})
    world.call("tag", {"data": "ff", "blob": True})
    world.call("tag", {"data": "61", "blob": False})
    world.call("tag", {"data": "c3a9", "blob": False})
    created_rows = world.diff()["tags"]["created"]
    # SQLite's order: text (byte order, so U+00E9 before 0xff) before BLOBs.
    assert created_rows == [
        {"k": "a", "v": 1},
        {"k": "é", "v": 1},
        {"k": {"$text": "ff"}, "v": 1},
        {"k": {"$blob": "ff"}, "v": 1},
    ]
    assert world.scan_diff() == world.diff()
    keys = [event["key"] for event in world.audit_history()]
    assert keys == [{"$text": "ff"}, {"$blob": "ff"}, "a", "é"]


def test_digest_tells_undecodable_text_from_valid_text_and_from_a_blob(
    world: ToolWorld, snap: Snapshot
) -> None:
    assert snap.digest == oracle_digest(snap.connection)  # x'fe', x'c0af' in the snapshot
    digests = {}
    for label, call in {
        "text ff": ("put_text", {"id": 1, "data": "ff"}),
        "blob ff": ("put_blob", {"id": 1, "data": "ff"}),
        "replacement character": ("put_str", {"id": 1, "text": "\ufffd"}),
        "latin-1 reading": ("put_str", {"id": 1, "text": "ÿ"}),
        "text fe": ("put_text", {"id": 1, "data": "fe"}),
    }.items():
        world.reset()
        assert world.call(*call)["status"] == "ok"
        digests[label] = world.state_digest()
        assert digests[label] == oracle_digest(world.conn)
    assert len(set(digests.values())) == len(digests)


def test_valid_text_keeps_its_representation(world: ToolWorld) -> None:
    world.call("put_text", {"id": 1, "data": "c3a9f09f9880"})  # 'é😀' cast from bytes
    world.call("put_str", {"id": 4, "text": "é😀"})
    diff = world.diff()["notes"]
    assert diff["changed"][0]["after"]["body"] == "é😀"
    assert diff["created"] == [{"id": 4, "body": "é😀"}]
    digest = world.state_digest()
    assert digest == oracle_digest(world.conn)
    # The same state written as str: the same digest (nothing about it says "bytes").
    world.reset()
    world.call("put_str", {"id": 1, "text": "é😀"})
    world.call("put_str", {"id": 4, "text": "é😀"})
    assert world.state_digest() == digest


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(first=st.binary(max_size=6), second=st.binary(max_size=6))
def test_any_bytes_as_text(world: ToolWorld, snap: Snapshot, first: bytes, second: bytes) -> None:
    world.reset()
    before = stored(world.conn)
    world.call("put_text", {"id": 1, "data": first.hex()})
    world.call("put_text", {"id": 1, "data": second.hex()})
    diff = world.diff()
    if second == b"hello":
        assert "notes" not in diff
    else:
        assert diff["notes"]["changed"] == [
            {
                "key": 1,
                "before": {"id": 1, "body": "hello"},
                "after": {"id": 1, "body": shown(second)},
            }
        ]
    assert world.scan_diff() == diff
    history = world.audit_history()
    step_two = diff_from_events([e for e in history if e["step"] == 2], layouts(world))
    assert ("notes" in step_two) == (first != second)
    text_digest = world.state_digest()
    assert text_digest == oracle_digest(world.conn)
    assert world.table_rows("notes")[0]["body"] == RawText.decode(second)
    world.call("put_blob", {"id": 1, "data": second.hex()})
    assert world.diff()["notes"]["changed"][0]["after"]["body"] == {"$blob": second.hex()}
    assert world.state_digest() != text_digest
    world.reset()
    assert stored(world.conn) == before
    assert world.state_digest() == snap.digest


@given(data=st.binary(max_size=8))
def test_raw_text_encoding_round_trips(data: bytes) -> None:
    value = RawText.decode(data)
    try:
        assert value == data.decode()
    except UnicodeDecodeError:
        assert isinstance(value, RawText)
        assert value.data == data
        assert portable_value(value) == {"$text": data.hex()}
        assert native_value(portable_value(value)) == value
        assert hash(native_value(portable_value(value))) == hash(value)
    assert value != data  # never the BLOB with those bytes
    assert native_value(portable_value(data)) == data
    assert portable_value(data) != portable_value(RawText(data))
    assert RawText(data) != data.decode("latin-1")


def test_mixed_text_keys_sort_as_sqlite_sorts_them() -> None:
    keys = ["b", RawText(b"\xff"), "a", RawText(b"\x80"), "é", b"\x00", 3, None]
    ordered = sorted(keys, key=sort_key)
    assert ordered == [None, 3, "a", "b", RawText(b"\x80"), "é", RawText(b"\xff"), b"\x00"]


# -- saved episodes, replay, checks ---------------------------------------------------


@pytest.mark.parametrize("data", ["ff", "c0af", "edb080", "66ff6f", "f4908080"])
def test_save_episode_round_trips_and_verifies(world: ToolWorld, tmp_path: Path, data: str) -> None:
    rules = [changed("notes", where={"id": 1}, to={"body": {"$text": data}}), created("tags")]
    case = EvalCase("hide a change", {"rules": rules}, case_id="hide")
    world.reset(case=case, run_id="r1")
    world.call("put_text", {"id": 1, "data": data})
    world.call("tag", {"data": data, "blob": False})
    history, diff = world.history_and_diff()
    episode = save_episode(world, tmp_path / "ep")
    assert f'{{"$text":"{data}"}}'.encode() in (tmp_path / "ep" / "diff.json").read_bytes()
    loaded = ToolEpisode.load(tmp_path / "ep")
    assert loaded.diff == diff == episode.diff
    assert loaded.audit == history
    assert diff_from_events(loaded.audit, loaded.tables) == loaded.diff
    assert step_diff(loaded, 1)["notes"]["changed"][0]["after"]["body"] == {"$text": data}
    assert loaded.end_state_digest() == loaded.manifest["end_state_digest"]
    assert loaded.manifest["end_state_digest"] == world.state_digest()
    with loaded.connect() as conn:
        assert conn.execute("SELECT hex(body) FROM notes WHERE id = 1").fetchone() == (
            data.upper(),
        )
    verdicts = run_checks(loaded, ["envkit/diff_satisfies_rules"])
    assert [v.status for v in verdicts] == ["pass"]
    assert replay(world, loaded).matches


def test_rules_over_undecodable_text(world: ToolWorld) -> None:
    world.call("put_text", {"id": 1, "data": "ff"})
    world.call("tag", {"data": "ff", "blob": False})
    world.call("drop_note", {"id": 2})
    diff = world.diff()
    assert (
        check_rules(diff, [changed("notes", where={"id": 1}, to={"body": {"$text": "ff"}})]) == []
    )
    assert (
        check_rules(diff, [changed("notes", where={"id": 1}, to={"body": RawText(b"\xff")})]) == []
    )
    assert check_rules(diff, [deleted("notes", where={"body": RawText(b"\xfe")})]) == []
    assert check_rules(diff, [created("tags", where={"k": {"$text": "ff"}})]) == []
    # The lossy readings of the bytes, and the BLOB with them, are other values.
    for wrong in ("\ufffd", "ÿ", {"$blob": "ff"}, {"$text": "fe"}, b"\xff"):
        problems = check_rules(diff, [changed("notes", where={"id": 1}, to={"body": wrong})])
        assert len(problems) == 1
        assert '{"$text":"ff"}' in problems[0]
    problems = check_rules(diff, [created("tags", where={"k": b"\xff"})])
    assert problems == ['expected exactly 1 row created in tags where k = {"$blob":"ff"}; found 0']


def test_a_write_hidden_behind_undecodable_text_is_caught(world: ToolWorld, tmp_path: Path) -> None:
    rules = [changed("notes", where={"id": 1}, to={"body": "done"}), {"rule": "no_other_changes"}]
    world.reset(case=EvalCase("mark note 1 done", {"rules": rules}, case_id="done"))
    world.call("put_str", {"id": 1, "text": "done"})
    world.call("put_text", {"id": 3, "data": "80"})  # the agent also clobbers note 3
    episode = save_episode(world, tmp_path / "ep")
    [verdict] = run_checks(ToolEpisode.load(tmp_path / "ep"), ["envkit/diff_satisfies_rules"])
    assert verdict.status == "fail"
    assert '{"$text":"80"}' in verdict.evidence["broken"][0]
    assert episode.diff["notes"]["changed"][1]["after"] == {"id": 3, "body": {"$text": "80"}}


# -- reset, observers, hidden state, files --------------------------------------------


def test_reset_restores_undecodable_text_byte_for_byte(world: ToolWorld, snap: Snapshot) -> None:
    start = stored(world.conn)
    assert ("notes", 2, "text", "FE") in start
    for _ in range(3):  # episode after episode, through undo or page copy alike
        world.call("put_text", {"id": 2, "data": "ff"})
        world.call("drop_note", {"id": 2})
        world.call("put_text", {"id": 1, "data": "c0"})
        world.call("tag", {"data": "ff", "blob": False})
        world.reset()
        assert stored(world.conn) == start
        assert world.state_digest() == snap.digest
        world.call("put_str", {"id": 1, "text": "plain"})  # an ordinary episode in between
        world.reset()
        assert stored(world.conn) == start
    with world.connect_readonly() as reader:
        assert stored(reader) == start


def test_the_undecodable_snapshot_row_an_episode_deletes_comes_back(world: ToolWorld) -> None:
    start = stored(world.conn)
    world.call("drop_note", {"id": 2})
    assert world.diff()["notes"]["deleted"] == [{"id": 2, "body": {"$text": "fe"}}]
    world.reset()
    assert stored(world.conn) == start


def test_observer_reveal_and_table_rows(world: ToolWorld) -> None:
    world.call("put_text", {"id": 1, "data": "ff"})
    observed = world.observer()()
    assert observed["tables"]["notes"][:2] == [
        {"id": 1, "body": {"$text": "ff"}},
        {"id": 2, "body": {"$text": "fe"}},
    ]
    assert "secrets" not in observed["tables"]
    event = world.call("read_secret", {"id": 1})
    assert event["status"] == "ok"
    assert event["result"] == {"id": 1, "body": {"$text": "c0af"}}
    assert event["reads"] == [{"table": "secrets", "key": 1}]
    assert world.table_rows("secrets") == [{"id": 1, "body": RawText(b"\xc0\xaf")}]
    # A tool reading with plain sqlite3 decoding fails, and the failure is logged.
    failed = world.call("read_note", {"id": 1})
    assert failed["status"] == "error"
    assert failed["error"]["type"] == "tool_error"
    assert world.call("read_note", {"id": 3})["result"] == {"body": "é😀"}


def test_environment_check_passes(world: ToolWorld) -> None:
    assert environment_problems(world) == []


def test_user_database_that_already_holds_such_text(tmp_path: Path) -> None:
    before, after = tmp_path / "before.db", tmp_path / "after.db"
    with sqlite3.connect(before) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO t VALUES (1, CAST(x'ff00ff' AS TEXT)), (2, 'ok')")
    conn.close()
    snap = Snapshot.from_file(before)
    assert snap.digest == oracle_digest(snap.connection)
    with sqlite3.connect(before) as plain:
        assert state_digest(plain) == snap.digest
        assert plain.text_factory is str  # the retry leaves the connection as it was
    plain.close()
    with ToolWorld(snap, [], path=tmp_path / "w.db") as world:
        assert world.table_rows("t")[0] == {"id": 1, "name": RawText(b"\xff\x00\xff")}
        assert world.scan_diff() == {}
    with sqlite3.connect(after) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO t VALUES (1, CAST(x'ff00fe' AS TEXT)), (2, 'ok')")
    conn.close()
    assert diff_databases(before, after)["t"]["changed"] == [
        {
            "key": 1,
            "before": {"id": 1, "name": {"$text": "ff00ff"}},
            "after": {"id": 1, "name": {"$text": "ff00fe"}},
        }
    ]


def test_lossless_passes_other_errors_through() -> None:
    conn = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        lossless(conn, lambda: conn.execute("SELECT * FROM missing").fetchall())
    assert conn.text_factory is str
    bad = "SELECT CAST(x'ff' AS TEXT)"
    assert lossless(conn, lambda: conn.execute(bad).fetchall()) == [(RawText(b"\xff"),)]
    assert conn.text_factory is str
    with pytest.raises(sqlite3.OperationalError, match="Could not decode to UTF-8"):
        conn.execute(bad).fetchall()


@given(values=st.lists(st.tuples(st.booleans(), st.binary(max_size=4)), max_size=4))
def test_sql_param_writes_native_values_back_exactly(values: list[tuple[bool, bytes]]) -> None:
    """What a re-grade does with a saved diff: native values written back byte for byte."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, v)")
    for index, (as_text, data) in enumerate(values):
        mark, param = sql_param(native_value({"$text" if as_text else "$blob": data.hex()}))
        conn.execute(f"INSERT INTO t VALUES (?, {mark})", (index, param))
    stored_values = conn.execute("SELECT typeof(v), hex(v) FROM t ORDER BY i").fetchall()
    expected = [("text" if as_text else "blob", data.hex().upper()) for as_text, data in values]
    assert stored_values == expected
