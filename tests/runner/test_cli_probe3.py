"""``onrecord run`` argument and config handling, through the real CLI: bad input is
exit 3 with a message naming the field, never a traceback, never a silent default."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.runner.conftest import onrecord

LAKE = ["frozenlake", "--agent", "walks_to_goal", "--no-progress"]


def _protocol(run: Path) -> dict[str, object]:
    manifest = orjson.loads((run / "run.json").read_bytes())
    return manifest["protocol"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tasks", ","], "--tasks names nothing"),
        (["--tasks", ""], "--tasks names nothing"),
        (["--seeds", ""], "--seeds is empty"),
        (["--checks", " , "], "--checks names nothing"),
        (["--env-config", "x=1", "--env-config", "x=2"], "--env-config x is given twice"),
    ],
)
def test_flags_that_name_nothing_are_bad_input(
    run_dir: Path, flags: list[str], message: str
) -> None:
    # Each of these silently ran the default (every task, seed 0, the default checks, the
    # last value) and exited 0.
    done = onrecord("run", *LAKE, *flags, "--out", str(run_dir))
    assert done.returncode == 3, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not run_dir.exists()


def test_a_config_that_is_not_utf8_is_exit_3(tmp_path: Path, run_dir: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_bytes(b'environment = "frozenlake"\nagent = "walks\xe9"\n')
    done = onrecord("run", "--config", str(config), "--out", str(run_dir))
    assert done.returncode == 3, done.stderr  # was a UnicodeDecodeError traceback, exit 1
    assert "run.toml is not UTF-8 text" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_factory_that_raises_is_exit_3(run_dir: Path) -> None:
    done = onrecord(
        "run", "tests.runner.test_registry_probe3:raising_factory", "-a", "random",
        "--out", str(run_dir),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # was a traceback, exit 1
    assert "RuntimeError: the simulator licence expired" in done.stderr
    assert "Traceback" not in done.stderr
    assert not run_dir.exists()


def test_a_keyword_gymnasium_does_not_take_is_exit_3(run_dir: Path) -> None:
    done = onrecord(
        "run", "CartPole-v1", "-a", "random", "--env-config", "bogus=5", "--no-progress",
        "--out", str(run_dir),
    )  # fmt: skip
    # Was a run whose every episode was a setup error: exit 2, indeterminate.
    assert done.returncode == 3, done.stderr
    assert "unexpected keyword argument 'bogus'" in done.stderr
    assert not run_dir.exists()


def test_tasks_pick_among_a_config_files_tasks_file(tmp_path: Path, run_dir: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        '{"case_id": "a", "input": {"n": 1}, "completion": "either"}\n'
        '{"case_id": "b", "input": {"n": 2}, "completion": "either"}\n'
    )
    config = tmp_path / "run.toml"
    config.write_text('tasks_file = "tasks.jsonl"\n')
    done = onrecord("run", *LAKE, "--config", str(config), "--tasks", "b", "--out", str(run_dir))
    assert done.returncode == 0, done.stderr
    # --tasks was silently ignored: both tasks ran.
    assert [task["case_id"] for task in _protocol(run_dir)["tasks"]] == ["b"]  # type: ignore[index]
    done = onrecord("run", *LAKE, "--config", str(config), "--tasks", "c", "--out", str(tmp_path))
    assert done.returncode == 3
    assert "unknown task 'c'" in done.stderr


def test_resume_keeps_env_config_keys_left_out(run_dir: Path) -> None:
    start = [
        "run", "tests.runner.helpers:lake", "-a", "tests.runner.helpers:walker",
        "--env-config", "map_name=4x4", "--env-config", "max_episode_steps=20",
        "--no-progress", "--out", str(run_dir),
    ]  # fmt: skip
    assert onrecord(*start).returncode == 0
    done = onrecord(
        "run", "--resume", str(run_dir), "--env-config", "max_episode_steps=20", "--no-progress"
    )
    # Was refused: "environment: the run has {map_name, max_episode_steps}, the new
    # settings say {max_episode_steps}", although map_name was simply left out.
    assert done.returncode == 0, done.stderr
    done = onrecord(
        "run", "--resume", str(run_dir), "--env-config", "max_episode_steps=9", "--no-progress"
    )
    assert done.returncode == 3
    assert "the settings differ" in done.stderr


def test_options_json_cannot_hold_fail_before_the_run_directory_is_made(
    tmp_path: Path, run_dir: Path
) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'environment = "frozenlake"\nagent = "walks_to_goal"\n[options]\nt = 1979-05-27\n'
    )
    done = onrecord("run", "--config", str(config), "--out", str(run_dir))
    assert done.returncode == 3, done.stderr
    assert "options.t holds a datetime.date" in done.stderr
    assert not run_dir.exists()  # was left behind, holding a lock file
