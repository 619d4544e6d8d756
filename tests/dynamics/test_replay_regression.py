"""Regression: a worldmodel run saved before ``failed_runs`` existed still replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.dynamics.experiment._analyze import replay
from onrecord.dynamics.experiment._store import read_json, write_json, write_manifest
from onrecord.errors import ConsistencyError
from tests.conftest import writable_copy


def _as_written_before_failed_runs(run_dir: Path) -> None:
    """Rewrite tables.json as the code before the closed-loop ``failed_runs`` count did."""
    path = run_dir / "tables.json"
    tables = read_json(path)
    for row in tables["closed_loop"]:
        assert row.pop("failed_runs") == 0
    write_json(path, tables)
    write_manifest(run_dir)


@pytest.mark.slow
def test_a_run_saved_without_failed_runs_replays(
    smoke_world_model_run: Path, tmp_path: Path
) -> None:
    run_dir = writable_copy(smoke_world_model_run, tmp_path / "run")  # a real smoke run
    _as_written_before_failed_runs(run_dir)
    assert replay(run_dir)["closed_loop"]

    # Anything else that differs is still refused.
    path = run_dir / "tables.json"
    tables = read_json(path)
    tables["closed_loop"][0]["reached_cap"] += 1
    write_json(path, tables)
    write_manifest(run_dir)
    with pytest.raises(ConsistencyError, match=r"tables\.json differs"):
        replay(run_dir)
