"""Tables and hints in a narrow CI log (``COLUMNS=80``, as pytest-xdist workers and many
CI runners set it): no number or name is cut to "…", a table too wide is printed in
parts, and the "more:" and "not recorded:" hints can be copied as printed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.runner.conftest import onrecord

NARROW = {"COLUMNS": "80"}
CUT = re.compile(r"[-+.\w]…")  # "7.73e…", "claims_don…": something cut short


@pytest.fixture
def world_model_run(smoke_world_model_run: Path) -> Path:
    """The shared smoke run of the world-model experiment, replayed by each test."""
    return smoke_world_model_run


def _replay(run: Path, columns: int) -> str:
    done = onrecord("worldmodel", "analyze", "--replay", str(run), env={"COLUMNS": str(columns)})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _cells(text: str) -> list[str]:
    return [cell.strip() for line in text.splitlines() for cell in line.split("│")]


def test_the_held_out_forecasts_show_every_number_whole_at_80_columns(
    world_model_run: Path,
) -> None:
    wide = _replay(world_model_run, 200)
    narrow = _replay(world_model_run, 80)
    # Before, nine number columns were cut: a CRPS of 7.73e-05 read "7.73e…".
    assert not CUT.search(narrow), narrow
    assert all(len(line) <= 80 for line in narrow.splitlines()), narrow
    forecasts = wide.split("held-out forecasts")[1].split("matched interventions")[0]
    numbers = {c for c in _cells(forecasts) if re.fullmatch(r"-?[\d.]+(e-\d+)?", c)}
    assert any("e-" in n for n in numbers), forecasts  # the case the cut lost
    assert numbers <= set(_cells(narrow)), narrow
    assert "held-out forecasts (CartPole) (part 1 of" in narrow, narrow
    # Wide enough, it stays the one table it was.
    assert "held-out forecasts (CartPole)" in wide, wide
    assert "(part 1 of" not in wide, wide


def test_every_world_model_table_keeps_numbers_whole_at_60_columns(
    world_model_run: Path,
) -> None:
    narrow = _replay(world_model_run, 60)
    # Before, the closed-loop table folded "21.3" into "21." over "3", "13–34" into
    # "13–3" over "4", and the decisions "indeterminate" into "indetermin" over "ate".
    cells = _cells(narrow)
    for whole in ("21.3", "13–34", "500–500", "indeterminate", "bayes-linear-blind/v1"):
        assert whole in cells, narrow
    assert not CUT.search(narrow), narrow


def stays(env: object, observation: object, info: object) -> str:
    """Walks into FrozenLake's wall until the step cap."""
    while True:
        _, _, terminated, truncated, _ = env.step(0)  # type: ignore[attr-defined]
        if terminated or truncated:
            return "stopped"


def test_the_more_steps_hint_names_the_steps_left_out(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = ["--agent", "tests.test_narrow_tables17:stays", "--seeds", "0", "--max-steps", "61"]
    onrecord("run", "frozenlake", *args, "--no-progress", "--out", str(run_dir))
    shown = onrecord("show", str(run_dir), "--episode", "frozenlake/goal#0", env=NARROW)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    hint = next(line for line in shown.stdout.splitlines() if line.startswith("more: "))
    command = shlex.split(hint.removeprefix("more: ").removesuffix(" (or --steps all)"))
    # Before, it read "--steps 100-160" whatever the episode: past the end of this one.
    assert command[-2:] == ["--steps", "40-61"], hint
    more = onrecord(*command[1:], env=NARROW)
    assert more.returncode == 0, more.stdout + more.stderr
    rows = [c[0] for c in (line.strip("│ ").split() for line in more.stdout.splitlines()) if c]
    assert {"40", "50", "60"} <= set(rows), more.stdout


def test_the_not_recorded_path_is_whole_on_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "a rather long directory name with spaces" / "[bold] x" / "out"
    args = ["tests.runner.helpers:unportable", "--agent", "noop", "--seeds", "0-11"]
    done = onrecord("run", *args, "--no-progress", "--out", str(run_dir), env=NARROW)
    assert done.returncode == 2, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if "every reason is in" in line)
    # Before, the path was cut where COLUMNS ended, across two lines.
    assert line.endswith(f"every reason is in {run_dir / 'errors.jsonl'}"), done.stdout
