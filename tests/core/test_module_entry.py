"""``python -m onrecord.cli.main`` and ``python -m onrecord`` run the command line without
a warning, with the exit codes of the ``onrecord`` script.

Before: ``onrecord/cli/__init__.py`` imported ``onrecord.cli.main``, so runpy warned
"'onrecord.cli.main' found in sys.modules after import of package 'onrecord.cli', but
prior to execution of 'onrecord.cli.main'; this may result in unpredictable behaviour"
on every ``python -m onrecord.cli.main``; ``python -m onrecord`` did not exist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task

SCRIPT = [str(Path(sys.executable).parent / "onrecord")]
# -W error: a warning would be an error, and fail the run visibly.
MODULES = {
    "script": SCRIPT,
    "-m onrecord.cli.main": [sys.executable, "-W", "error", "-m", "onrecord.cli.main"],
    "-m onrecord": [sys.executable, "-W", "error", "-m", "onrecord"],
}


def _run(command: list[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "200", "PYTHONWARNINGS": "error"},
    )


@pytest.fixture(scope="module")
def gate_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate")
    task = frozenlake_task()
    episodes = [run_gym_task(task, FROZENLAKE_AGENTS["walks_into_hole"](), seed=1)]
    return {
        "report": evaluate_episodes(episodes, list(task.checks)).save_json(root / "r.json"),
        "policy": AcceptancePolicy((CheckRequirement("reached_goal"),)).save_json(root / "p.json"),
    }


@pytest.mark.parametrize("how", list(MODULES))
def test_module_runs_cleanly_with_the_script_exit_codes(
    how: str, gate_files: dict[str, Path], tmp_path: Path
) -> None:
    command = MODULES[how]
    version = _run(command, "--version")
    assert version.returncode == 0
    assert version.stdout.startswith("onrecord ")
    assert version.stderr == ""
    cases: list[tuple[tuple[str | Path, ...], int]] = [
        (("verify", gate_files["policy"]), 0),
        (("gate", gate_files["report"], "--policy", gate_files["policy"]), 1),  # reject
        (("verify", tmp_path / "missing.json"), 3),
        (("--no-such-flag",), 3),
        ((), 3),
    ]
    for args, code in cases:
        done = _run(command, *args)
        assert done.returncode == code, (args, done.stderr)
        assert "Warning" not in done.stderr
        assert "unpredictable behaviour" not in done.stderr
