"""Every command's output in a narrow CI log (``COLUMNS=80``, as pytest-xdist workers and
many CI runners set it) with a run directory whose path holds spaces and "[bold]":
commands to copy stay whole, quoted, one line; reasons stay one searchable line; table
cells are never cut to "…"."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from tests.cli_process import line_after
from tests.runner.conftest import interrupt_run, onrecord

NARROW = {"COLUMNS": "80"}
HANGS = "tests.runner.test_episode_timeout:sleeps"  # seed 0 finishes, seed 1 hangs


def stays(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Walks into FrozenLake's wall until the step cap: a long episode."""
    while True:
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            return "stopped"


def _deep(tmp_path: Path) -> Path:
    return tmp_path / "a dir with spaces" / "[bold] x" / "out"


def test_the_more_steps_hint_of_a_long_episode_is_one_quoted_line(tmp_path: Path) -> None:
    run_dir = _deep(tmp_path)
    args = ["--agent", "tests.test_narrow_logs16:stays", "--seeds", "0", "--max-steps", "60"]
    made = onrecord("run", "frozenlake", *args, "--no-progress", "--out", str(run_dir))
    assert made.returncode == 2, made.stdout + made.stderr  # the cap left it unmeasured
    shown = onrecord("show", str(run_dir), "--episode", "frozenlake/goal#0", env=NARROW)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    hint = line_after("more: ", shown.stdout).removesuffix(" (or --steps all)")
    # Before, "[bold]" vanished as markup, the path was unquoted and cut at 80 columns.
    assert shlex.split(hint)[:5] == [
        "onrecord",
        "show",
        str(run_dir),
        "--episode",
        "frozenlake/goal#0",
    ]


def test_the_resume_hint_of_an_interrupted_run_is_quoted(tmp_path: Path) -> None:
    run_dir = _deep(tmp_path)
    args = ["frozenlake", "--agent", HANGS, "--seeds", "0-2", "--no-progress"]
    code, stderr = interrupt_run(*args, run_dir=run_dir, env=NARROW, after=1, hangs=True)
    assert code == 130, stderr
    command = line_after("interrupted; ", stderr).split("`")[1]
    assert shlex.split(command) == ["onrecord", "run", "--resume", "--out", str(run_dir)]


def test_the_ledger_table_names_every_episode_whole(tmp_path: Path) -> None:
    done = onrecord("ledger", "run", "--output-dir", str(tmp_path / "ledger"), env=NARROW)
    assert done.returncode == 0, done.stdout + done.stderr
    table = done.stdout.split("ablation")[0]
    # Before, rich cut cells to "…": four rows read "safe_recover…", decisions "indetermina…".
    assert "…" not in table, table
    for name in ("safe_recovery-seed7-attempt1", "safe_recovery-seed8-attempt2"):
        assert f"│ {name}" in table or f"\n{name} " in table, table


def test_the_world_model_tables_name_every_model_whole(smoke_world_model_run: Path) -> None:
    out = smoke_world_model_run
    replayed = onrecord("worldmodel", "analyze", "--replay", str(out), env=NARROW)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    loop = replayed.stdout.split("held-out forecasts")[0]
    # Before, two rows of the closed-loop table both read "bayes-lin…".
    assert "…" not in loop, loop
    assert "bayes-linear-blind/v1" in loop, loop
    assert "bayes-linear/v1" in loop, loop
