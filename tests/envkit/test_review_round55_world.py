"""Review round 55: a bad reset log path changes nothing, NULL keys in diff_databases,
files that are never overwritten silently, and bad arguments named as InputErrors."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from onrecord.case import EvalCase
from onrecord.envkit import (
    Snapshot,
    SnapshotError,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    diff_databases,
    diff_through_step,
    replay,
    save_episode,
    step_diff,
    tool,
)
from onrecord.envkit.checker import check_environment
from onrecord.envkit.log import ActionLog
from onrecord.errors import InputError

SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"


@tool(writes=True)
def put(ctx: ToolContext, v: str) -> None:
    """Insert a row."""
    ctx.execute("INSERT INTO t (v) VALUES (?)", (v,))


@pytest.fixture
def snap() -> Snapshot:
    return Snapshot.build("round55", SCHEMA)


@pytest.fixture
def live(snap: Snapshot, tmp_path: Path) -> ToolWorld:
    """A world mid-episode: one row written, its call in a log file."""
    world = ToolWorld(snap, [put], path=tmp_path / "world.db")
    world.reset(run_id="r2", case=EvalCase("c", {}, case_id="c"), log_path=tmp_path / "a.jsonl")
    assert world.call("put", {"v": "live"})["status"] == "ok"
    return world


# -- 1. reset(log_path=<bad>) ----------------------------------------------------------


@pytest.mark.parametrize("bad", ["directory", 5])
def test_a_bad_log_path_is_refused_before_the_reset_changes_anything(
    live: ToolWorld, tmp_path: Path, bad: Any
) -> None:
    log_path = tmp_path if bad == "directory" else bad
    with pytest.raises(InputError, match="reset log_path") as raised:
        live.reset(log_path=log_path)
    assert "pass the path of a file" in str(raised.value) or "must be a path" in str(raised.value)
    # The episode goes on: its row, its diff, its log.
    assert live.table_rows("t") == [{"id": 1, "v": "live"}]
    assert live.diff() == {"t": {"created": [{"id": 1, "v": "live"}], "changed": [], "deleted": []}}
    assert not live.ended
    assert (live.run_id, live.step, live.state_version) == ("r2", 1, 1)
    assert live.call("put", {"v": "again"})["status"] == "ok"
    episode = save_episode(live, tmp_path / "ep")
    assert [(a["tool"], a["status"]) for a in episode.actions] == [("put", "ok")] * 2
    assert len(episode.diff["t"]["created"]) == 2
    assert ToolEpisode.load(tmp_path / "ep").manifest["state_version"] == 2
    assert len((tmp_path / "a.jsonl").read_bytes().splitlines()) == 2  # nothing lost


def test_a_log_that_fails_to_open_after_the_restore_leaves_an_empty_ended_episode(
    live: ToolWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The path passed the checks, then the file would not open (a disk filled, a
    # permission changed in between): the old log must not be sealed over the rows the
    # reset put back.
    opened = ActionLog.__init__

    def refuse(log: ActionLog, path: Any = None) -> None:
        if path is not None:
            raise PermissionError(13, "Permission denied", str(path))
        opened(log, path)

    monkeypatch.setattr(ActionLog, "__init__", refuse)
    with pytest.raises(InputError, match=r"reset log_path .*Permission denied"):
        live.reset(run_id="r3", log_path=tmp_path / "b.jsonl")
    assert live.ended
    assert live.table_rows("t") == []
    assert live.diff() == {}
    episode = save_episode(live, tmp_path / "ep")
    assert episode.actions == ()
    assert episode.diff == {}
    assert (episode.manifest["steps"], episode.manifest["state_version"]) == (0, 0)


# -- 2. NULL keys in diff_databases ------------------------------------------------------

NULL_KEYS = """
CREATE TABLE cp (a INTEGER, b TEXT, v, PRIMARY KEY(a, b));
INSERT INTO cp VALUES (NULL, 'x', 1), (1, NULL, 2);
CREATE TABLE tk (k TEXT PRIMARY KEY, v); INSERT INTO tk VALUES (NULL, 'n');
"""


def _database(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    return path


def test_diff_databases_refuses_a_null_key_as_from_file_does(tmp_path: Path) -> None:
    before = _database(tmp_path / "b.sqlite", NULL_KEYS)
    after = _database(tmp_path / "a.sqlite", NULL_KEYS)
    with pytest.raises(InputError, match=r"table 'cp' holds a row whose primary key"):
        Snapshot.from_file(after)
    with pytest.raises(
        InputError, match=r"table 'cp' of before_path .*b\.sqlite' holds a row whose primary key"
    ) as raised:
        diff_databases(before, after)
    assert "['a', 'b'] is NULL" in str(raised.value)


def test_diff_databases_refuses_a_null_key_on_either_side_and_in_a_table_of_one_side(
    tmp_path: Path,
) -> None:
    keyed = "CREATE TABLE tk (k TEXT PRIMARY KEY, v);"
    clean = _database(tmp_path / "clean.sqlite", keyed + "INSERT INTO tk VALUES ('k', 'n');")
    null = _database(tmp_path / "null.sqlite", keyed + "INSERT INTO tk VALUES (NULL, 'n');")
    with pytest.raises(InputError, match=r"'tk' of after_path .*null\.sqlite'.*\['k'\] is NULL"):
        diff_databases(clean, null)
    with pytest.raises(InputError, match=r"'tk' of before_path .*null\.sqlite'"):
        diff_databases(null, clean)
    empty = _database(tmp_path / "empty.sqlite", "CREATE TABLE other (x INTEGER PRIMARY KEY);")
    with pytest.raises(InputError, match=r"'tk' of after_path"):
        diff_databases(empty, null)
    assert diff_databases(clean, clean) == {}  # keys that are not NULL diff as before
    assert diff_databases(empty, clean)["tk"]["created"] == [{"k": "k", "v": "n"}]


# -- 3. existing files are not overwritten silently --------------------------------------


def _precious(path: Path) -> bytes:
    _database(path, "CREATE TABLE keep (x); INSERT INTO keep VALUES ('mine');")
    return path.read_bytes()


def test_snapshot_save_refuses_an_existing_file_unless_asked(
    snap: Snapshot, tmp_path: Path
) -> None:
    path = tmp_path / "precious.sqlite"
    before = _precious(path)
    with pytest.raises(InputError, match=r"already exists .*pass overwrite=True"):
        snap.save(path)
    assert path.read_bytes() == before
    assert Snapshot.from_file(snap.save(path, overwrite=True)).digest == snap.digest
    with pytest.raises(InputError, match="overwrite must be True or False"):
        snap.save(tmp_path / "new.sqlite", overwrite="yes")  # type: ignore[arg-type]
    empty = tmp_path / "placeholder.sqlite"
    empty.touch()  # an empty file (a tempfile placeholder) holds nothing to lose
    assert Snapshot.from_file(snap.save(empty)).digest == snap.digest


def test_a_world_refuses_an_unrelated_existing_database(snap: Snapshot, tmp_path: Path) -> None:
    path = tmp_path / "precious.sqlite"
    before = _precious(path)
    with pytest.raises(InputError, match=r"ToolWorld path .*already exists"):
        ToolWorld(snap, [put], path=path)
    assert path.read_bytes() == before
    with ToolWorld(snap, [put], path=path, overwrite=True) as world:
        assert world.state_digest() == snap.digest


def test_a_world_reuses_the_file_a_world_left(snap: Snapshot, tmp_path: Path) -> None:
    path = tmp_path / "world.db"
    for _ in range(2):  # a script run twice with the same path
        with ToolWorld(snap, [put], path=path) as world:
            assert world.state_digest() == snap.digest
            assert world.call("put", {"v": "x"})["status"] == "ok"
    saved = snap.save(tmp_path / "saved.sqlite")  # a saved snapshot is no world's file
    with pytest.raises(InputError, match="already exists"):
        ToolWorld(snap, [put], path=saved)


def test_the_source_of_a_loaded_snapshot_is_never_written(snap: Snapshot, tmp_path: Path) -> None:
    source = tmp_path / "src.sqlite"
    _database(source, SCHEMA + "; INSERT INTO t VALUES (1, 'seed');")
    before = source.read_bytes()
    loaded = Snapshot.from_file(source)
    link = tmp_path / "link.sqlite"
    os.symlink(source, link)
    (tmp_path / "sub").mkdir()
    for path in (source, link, tmp_path / "sub" / ".." / "src.sqlite"):
        for overwrite in (False, True):
            with pytest.raises(InputError, match="the file the snapshot was loaded from"):
                ToolWorld(loaded, [put], path=path, overwrite=overwrite)
            with pytest.raises(InputError, match="the file the snapshot was loaded from"):
                loaded.save(path, overwrite=overwrite)
    assert source.read_bytes() == before
    assert not Path(f"{source}-wal").exists()


# -- 4. bad arguments are InputErrors naming them ----------------------------------------


def test_bad_world_arguments_are_named(snap: Snapshot, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"ToolWorld path .* is a directory"):
        ToolWorld(snap, [put], path=tmp_path)
    with pytest.raises(InputError, match="ToolWorld snapshot must be a Snapshot"):
        ToolWorld(None, [put])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="ToolWorld path must be a path"):
        ToolWorld(snap, [put], path=5)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"ToolWorld path .* cannot be opened as a SQLite"):
        ToolWorld(snap, [put], path=tmp_path / "file" / "world.db")
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(InputError, match="cannot be opened as a SQLite database"):
        ToolWorld(snap, [put], path=text, overwrite=True)
    assert text.read_text() == "not a database"


def test_bad_file_arguments_are_named(snap: Snapshot, tmp_path: Path) -> None:
    good = snap.save(tmp_path / "good.sqlite")
    with pytest.raises(SnapshotError, match="diff_databases before_path 'missing1' does not"):
        diff_databases("missing1", good)
    with pytest.raises(SnapshotError, match=r"diff_databases after_path .* is a directory"):
        diff_databases(good, tmp_path)
    (tmp_path / "junk").write_bytes(b"not a database at all" * 100)
    with pytest.raises(SnapshotError, match=r"after_path .*junk' is not a readable SQLite"):
        diff_databases(good, tmp_path / "junk")
    with pytest.raises(SnapshotError, match="diff_databases before_path must be a path"):
        diff_databases(None, good)  # type: ignore[arg-type]
    with pytest.raises(SnapshotError, match=r"snapshot file must be a path .* NoneType"):
        Snapshot.from_file(None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"Snapshot.save path must be a path"):
        snap.save(3)  # type: ignore[arg-type]


def test_bad_episode_arguments_are_named(live: ToolWorld, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"save_episode directory must be a path .* int 5"):
        save_episode(live, 5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="save_episode world must be a ToolWorld"):
        save_episode("world", tmp_path / "ep")  # type: ignore[arg-type]
    for database in ("no", 0, None):
        with pytest.raises(InputError, match="save_episode database must be True or False"):
            save_episode(live, tmp_path / "ep", database=database)  # type: ignore[arg-type]
    assert not live.ended  # refused before the episode was ended
    with pytest.raises(InputError, match="replay episode must be a ToolEpisode"):
        replay(live, "ep_dir")  # type: ignore[arg-type]
    episode = save_episode(live, tmp_path / "ep")
    with pytest.raises(InputError, match="replay world must be a ToolWorld"):
        replay("world", episode)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="check_environment world must be a ToolWorld"):
        check_environment(5)  # type: ignore[arg-type]


# -- 5. steps of step_diff and diff_through_step -----------------------------------------


@pytest.mark.parametrize("step", ["1", 0, -1, 3, 999, True, 1.0, None])
@pytest.mark.parametrize("function", [step_diff, diff_through_step])
def test_a_step_outside_the_episode_is_refused(
    live: ToolWorld, tmp_path: Path, step: Any, function: Any
) -> None:
    assert live.call("put", {"v": "second"})["status"] == "ok"
    episode = save_episode(live, tmp_path / "ep")
    with pytest.raises(InputError, match=r"step must be .*valid steps: an int from 1 to 2"):
        function(episode, step)
    assert function(episode, 2)["t"]["created"][-1]["v"] == "second"


def test_an_episode_without_calls_has_no_step(snap: Snapshot, tmp_path: Path) -> None:
    with ToolWorld(snap, [put]) as world:
        episode = save_episode(world, tmp_path / "ep")
    with pytest.raises(InputError, match="valid steps: none: the episode made no call"):
        step_diff(episode, 1)
    with pytest.raises(InputError, match="step_diff episode must be a ToolEpisode"):
        step_diff(str(tmp_path / "ep"), 1)  # type: ignore[arg-type]
