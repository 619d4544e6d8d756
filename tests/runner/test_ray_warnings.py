"""``onrecord run --executor ray`` under ``PYTHONWARNINGS=error`` (a CI job's strict
setting): Ray's own processes inherited it, a deprecation warning ended Ray's dashboard
process, and the local cluster never started ("The current node timed out during
startup", exit 3 after 30 s). The cluster now starts without it; the episodes' tasks
still run with warnings as errors, as in the other executors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runner.conftest import onrecord
from tests.runner.test_workers_probe import _walk

pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray


def walks_if_warnings_are_errors(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """To the goal, in a process where warnings are errors; else the episode's error."""
    if "error" not in sys.warnoptions:
        raise RuntimeError(f"this task runs without PYTHONWARNINGS=error: {sys.warnoptions}")
    return _walk(env)


def test_a_local_cluster_starts_under_warnings_as_errors(tmp_path: Path) -> None:
    agent = "tests.runner.test_ray_warnings:walks_if_warnings_are_errors"
    done = onrecord(
        *("run", "frozenlake", "--agent", agent, "--seeds", "0-1", "--executor", "ray"),
        *("--no-progress", "--out", str(tmp_path / "run")),
        env={"PYTHONWARNINGS": "error"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "decision: accept" in done.stdout
    assert "Exception ignored" not in done.stderr  # no process left running at exit
