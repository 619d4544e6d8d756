"""The smoke experiment through the real command line (the session's shared run,
``tests/conftest.py``), then an offline replay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import writable_copy

CLI = [
    sys.executable,
    "-c",
    "import sys; from onrecord.cli.main import main; sys.exit(main(sys.argv[1:]))",
]


def onrecord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_smoke_run_replays_and_detects_tampering(
    smoke_world_model_run: Path, tmp_path: Path
) -> None:
    run_dir = smoke_world_model_run  # read only: tampered with below in a copy
    manifest = json.loads((run_dir / "manifest.json").read_text())["files"]
    assert "protocol.json" in manifest
    assert len(manifest) > 50
    assert {p.name for p in (run_dir / "plots").iterdir()} == {
        "error_vs_horizon.png",
        "coverage_vs_width.png",
        "reliability.png",
        "closed_loop.png",
    }
    headline = json.loads((run_dir / "tables.json").read_text())["headline"]
    loop = headline["closed_loop"]
    assert loop["bayes-linear/v1"]["reached_cap"] == loop["bayes-linear/v1"]["seeds"]
    assert loop["bayes-linear-blind/v1"]["mean_steps"] < 60
    assert loop["persistence/v1"]["mean_steps"] < 60
    assert headline["cart_velocity_h1_action_effect_error"]["ratio"] > 100
    assert headline["next_step_angle_decisions"]["bayes-linear-blind/v1"] == "accept"

    replay = onrecord("worldmodel", "analyze", "--replay", str(run_dir))
    assert replay.returncode == 0, replay.stderr
    assert f"verified {len(manifest)} files" in replay.stdout
    # The Python API takes the directory as a str too, as run_experiment does.
    from onrecord.dynamics.experiment import replay as replay_tables

    assert replay_tables(str(run_dir))["verified_files"] == len(manifest)

    run_dir = writable_copy(run_dir, tmp_path / "run")
    forecasts = run_dir / "forecasts" / "heldout" / "bayes-linear_v1.jsonl"
    forecasts.write_bytes(forecasts.read_bytes().replace(b'"status":"ok"', b'"status":"ko"', 1))
    tampered = onrecord("worldmodel", "analyze", "--replay", str(run_dir))
    assert tampered.returncode == 3
    assert "bayes-linear_v1.jsonl does not match its sha256" in tampered.stderr

    again = onrecord("worldmodel", "run", "--smoke", "--output-dir", str(run_dir))
    assert again.returncode == 3
    assert "is not empty" in again.stderr
