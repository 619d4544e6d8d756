from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord.envkit import Snapshot, SnapshotError, ToolWorld, state_digest

from . import claims_env
from .test_state_property import full_state

HERE = Path(__file__).parent


def _dump(world: ToolWorld) -> list[str]:
    return list(world.conn.iterdump())


def test_reset_restores_snapshot_digest_and_counters(world: ToolWorld) -> None:
    pristine = full_state(world.snapshot.connection)  # plain SQL, rowids and audit included
    assert world.state_digest() == world.snapshot.digest
    world.call("allocate", {"claim_id": 1, "amount": 1.0})
    world.call("set_status", {"claim_id": 2, "status": "closed"})
    assert world.state_digest() != world.snapshot.digest
    assert (world.step, world.state_version, len(world.log.events)) == (2, 2, 2)
    world.reset(seed=5)
    assert full_state(world.conn) == pristine
    assert world.conn.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
    assert world.conn.execute("SELECT status FROM claims WHERE id = 2").fetchone() == ("open",)
    assert world.state_digest() == world.snapshot.digest
    assert (world.step, world.state_version, world.log.events) == (0, 0, [])
    assert world.audit_history() == []
    assert world.diff() == {}


def test_repeated_runs_begin_byte_identically(world: ToolWorld) -> None:
    world.reset(seed=3)
    start = _dump(world)
    first = [world.call("log_event", {"kind": "x"})["result"] for _ in range(3)]
    end = _dump(world)
    world.reset(seed=3)
    assert _dump(world) == start
    assert [world.call("log_event", {"kind": "x"})["result"] for _ in range(3)] == first
    assert _dump(world) == end


def test_reseed_changes_tool_randomness(world: ToolWorld) -> None:
    world.reset(seed=1)
    world.call("log_event", {"kind": "x"})
    one = world.state_digest()
    world.reset(seed=2)
    world.call("log_event", {"kind": "x"})
    assert world.state_digest() != one


def test_builder_is_deterministic_and_seed_matters() -> None:
    again = Snapshot.build("claims-basic", claims_env.SCHEMA, claims_env.populate, seed=1)
    other = Snapshot.build("claims-basic", claims_env.SCHEMA, claims_env.populate, seed=2)
    assert again.digest == claims_env.snapshot().digest
    assert other.digest != again.digest


def test_reader_connected_during_reset_sees_snapshot_not_old_rows(world: ToolWorld) -> None:
    observer = world.connect_readonly()
    try:
        for _ in range(3):
            world.call("allocate", {"claim_id": 1, "amount": 1.0})
            assert observer.execute("SELECT count(*) FROM allocations").fetchone() == (1,)
            world.reset()
            assert observer.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
            assert state_digest(observer) == world.snapshot.digest
    finally:
        observer.close()


def test_stale_wal_from_a_crashed_process_cannot_bring_rows_back(
    tmp_path: Path, snap: Snapshot
) -> None:
    path = tmp_path / "world.db"
    # A process writes rows into the world's WAL and dies without checkpointing.
    script = (
        f"import sys, os; sys.path.insert(0, {str(HERE.parent.parent)!r})\n"
        "from tests.envkit import claims_env\n"
        f"w = claims_env.world(path={str(path)!r})\n"
        "w.call('allocate', {'claim_id': 1, 'amount': 2.0})\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    assert Path(f"{path}-wal").exists()
    with claims_env.world(snap, path=path) as world:
        assert world.state_digest() == snap.digest
        assert world.table_rows("allocations") == []


def test_in_place_copy_under_an_open_reader_is_what_reset_avoids(
    tmp_path: Path, snap: Snapshot
) -> None:
    # The hazard reset avoids: copying a snapshot file over a WAL database while its
    # old -wal file survives brings the old rows back. Reset goes through SQLite instead.
    pristine = snap.save(tmp_path / "pristine.db")
    live = tmp_path / "live.db"
    with claims_env.world(snap, path=live) as world:
        world.call("allocate", {"claim_id": 1, "amount": 2.0})
        reader = world.connect_readonly()
        live.write_bytes(pristine.read_bytes())  # the naive "reset"
        naive = reader.execute("SELECT count(*) FROM allocations").fetchone()
        reader.close()
    assert naive == (1,)  # old row still visible through the stale -wal
    with claims_env.world(snap, path=live) as world:
        assert world.table_rows("allocations") == []  # a real reset clears it


def test_from_file_loads_without_changing_the_file(tmp_path: Path, snap: Snapshot) -> None:
    source = tmp_path / "plain.db"
    conn = sqlite3.connect(source)
    conn.executescript(claims_env.SCHEMA)
    conn.close()
    before = source.read_bytes()
    loaded = Snapshot.from_file(source)
    assert source.read_bytes() == before
    assert loaded.name == "plain"
    saved = Snapshot.from_file(snap.save(tmp_path / "copy.db"), name="copy")
    assert saved.digest == snap.digest


def test_from_file_clears_history_of_a_saved_world(tmp_path: Path, snap: Snapshot) -> None:
    with claims_env.world(snap, path=tmp_path / "w.db") as world:
        world.call("allocate", {"claim_id": 1, "amount": 2.0})
        digest = world.state_digest()
    again = Snapshot.from_file(tmp_path / "w.db")
    assert again.digest == digest
    with ToolWorld(again, claims_env.TOOLS) as world:
        assert world.audit_history() == []


def test_snapshot_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="does not exist"):
        Snapshot.from_file(tmp_path / "missing.db")
    (tmp_path / "junk.db").write_bytes(b"not a database" * 100)
    with pytest.raises(SnapshotError, match="is not a readable SQLite database"):
        Snapshot.from_file(tmp_path / "junk.db")
    with pytest.raises(SnapshotError, match="the schema script failed"):
        Snapshot.build("bad", "CREATE TABLE (")
    with pytest.raises(SnapshotError, match="non-empty string"):
        Snapshot.build(" ", "CREATE TABLE t (id INTEGER PRIMARY KEY)")


def test_observer_connection_cannot_write(world: ToolWorld) -> None:
    observer = world.connect_readonly()
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly database"):
            observer.execute("INSERT INTO claims (id, payer, amount) VALUES (99, 'x', 1)")
    finally:
        observer.close()
    assert world.state_digest() == world.snapshot.digest


def _independent_digest(conn: sqlite3.Connection) -> str:
    """docs/envkit.md's definition, read with plain SQL: sha256 of the canonical JSON
    of [[table, create_sql, rows], ...] over user tables in name order, rows as value
    lists in key order (rowid where no key is declared), BLOBs as {"$blob": hex}."""
    import hashlib
    import json

    tables = conn.execute(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'table'"
        " AND name NOT LIKE 'sqlite!_%' ESCAPE '!' AND name NOT LIKE '!_onrecord!_%' ESCAPE '!'"
        " ORDER BY name"
    ).fetchall()
    whole = []
    for name, sql in tables:
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        columns = [row[1] for row in info]
        key = [row[1] for row in sorted(info, key=lambda row: row[5]) if row[5]]
        if not key:
            columns, key = ["rowid", *columns], ["rowid"]
        rows = conn.execute(
            f'SELECT {", ".join(columns)} FROM "{name}" ORDER BY {", ".join(key)}'
        ).fetchall()
        encoded = [[{"$blob": v.hex()} if isinstance(v, bytes) else v for v in row] for row in rows]
        whole.append([name, sql, encoded])
    text = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_state_digest_follows_its_documented_definition(world: ToolWorld) -> None:
    # The expectation is built with plain SQL and json, not with the kit's own readers.
    assert world.state_digest() == _independent_digest(world.conn)
    world.call("allocate", {"claim_id": 3, "amount": 1.5, "memo": "m"})
    world.call("tag_claim", {"claim_id": 2, "tag": "a"})  # sorts before (17, 'urgent')
    world.call("log_event", {"kind": "x"})  # a BLOB payload in a rowid-keyed table
    world.call("set_status", {"claim_id": 9, "status": "closed"})
    assert world.state_digest() == _independent_digest(world.conn)
    assert world.state_digest() != world.snapshot.digest
