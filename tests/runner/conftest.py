"""Shared fixtures of the runner tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def onrecord(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess (the tests' modules importable)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [str(Path(sys.executable).parent / "onrecord"), *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh path for a run directory."""
    return tmp_path / "run"
