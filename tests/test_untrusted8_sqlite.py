"""A received tool-world episode's database is hostile input: settings stored in the
file (a WAL journal mode) must not make reading its end state write beside it."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.domains.remittance import load_tasks, run_demo_suite
from onrecord.envkit import ToolEpisode
from tests.cli_process import onrecord


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("untrusted8-sqlite")
    run_demo_suite(
        root / "suite",
        agents=["careful"],
        tasks=load_tasks()[:1],
        repeats=1,
        episodes_dir=root / "tool",
    )
    return root / "tool" / "careful" / "full-01" / "r0"


def _reseal_database(episode: Path) -> None:
    """Pin the current final.sqlite in the manifest, as a forger would."""
    manifest = orjson.loads((episode / "manifest.json").read_bytes())
    data = (episode / "final.sqlite").read_bytes()
    manifest["files"]["final.sqlite"] = hashlib.sha256(data).hexdigest()
    del manifest["digest"]
    manifest["digest"] = content_digest(manifest)
    (episode / "manifest.json").write_bytes(record_bytes(manifest))


def test_reading_a_wal_mode_database_writes_nothing_beside_it(saved: Path, tmp_path: Path) -> None:
    episode = tmp_path / "episode"
    shutil.copytree(saved, episode)
    expected = ToolEpisode.load(episode).end_state_digest()
    conn = sqlite3.connect(episode / "final.sqlite")
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)  # in the header
    conn.close()
    _reseal_database(episode)
    before = sorted(entry.name for entry in episode.iterdir())
    loaded = ToolEpisode.load(episode)
    assert loaded.end_state_digest() == expected
    connection = loaded.connect()
    assert connection.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] > 0
    connection.close()
    assert sorted(entry.name for entry in episode.iterdir()) == before  # no -shm, no -wal
    done = onrecord("verify", episode, timeout=60)
    assert done.returncode == 0, done.stderr
