"""Paths and commands a summary prints to be copied stay whole on one line, quoted, at
any log width: a CI log with ``COLUMNS=80`` (pytest-xdist workers, many CI runners)
had rich cut ``verify with: onrecord ledger analyze '/long/path'`` in two, and the
resume hint of an incomplete run held an unquoted path."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.cli_process import line_after
from tests.runner.conftest import onrecord

NARROW = {"COLUMNS": "60"}
AGENT = "tests.runner.test_episode_timeout:sleeps"  # hangs on seed 1


def _deep(tmp_path: Path) -> Path:
    return tmp_path / "a directory with spaces" / ("long name " * 4).strip() / "out dir"


def test_the_ledger_hint_is_one_pasteable_line_in_a_narrow_log(tmp_path: Path) -> None:
    out = _deep(tmp_path)
    done = onrecord("ledger", "run", "--output-dir", str(out), env=NARROW)
    assert done.returncode == 0, done.stdout + done.stderr
    hint = line_after("verify with: ", done.stdout).removesuffix(")")
    assert shlex.split(hint) == ["onrecord", "ledger", "analyze", str(out)]
    assert f"saved to {out}/ " in done.stdout


def test_the_resume_hint_of_an_incomplete_run_is_one_quoted_line(tmp_path: Path) -> None:
    run_dir = _deep(tmp_path)
    args = ["frozenlake", "--agent", AGENT, "--seeds", "0-2", "--no-progress"]
    done = onrecord(
        "run", *args, "--episode-timeout", "0.5", "--out", str(run_dir), env=NARROW, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    # (Not "incomplete: ": the verdict's reason says "the run is incomplete: " too.)
    hint = line_after("episodes are missing; ", done.stdout)
    command = hint.split("`")[1]
    assert shlex.split(command) == ["onrecord", "run", "--resume", str(run_dir)]
    # The summary line names the run directory whole too.
    assert f"→ {run_dir}  " in done.stdout
