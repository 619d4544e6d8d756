"""Small things a new user hits on the way to their own `onrecord run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.errors import InputError
from onrecord.runner import InProcessExecutor, ProcessPoolExecutor, make_executor
from onrecord.runner._registry import import_object
from tests.runner.conftest import onrecord


def test_an_explicit_inprocess_executor_is_not_quietly_a_process_pool() -> None:
    # Before: --executor inprocess --workers 2 ran "process × 2".
    with pytest.raises(InputError, match="inprocess executor runs one episode at a time"):
        make_executor("inprocess", workers=2)
    assert isinstance(make_executor("inprocess", workers=1), InProcessExecutor)
    assert isinstance(make_executor(), InProcessExecutor)
    pool = make_executor(workers=2)  # --workers alone still means a pool
    assert isinstance(pool, ProcessPoolExecutor)
    assert pool.workers == 2


def test_the_cli_refuses_inprocess_with_workers(tmp_path: Path) -> None:
    done = onrecord(
        "run", "frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0",
        "--executor", "inprocess", "--workers", "2", "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "--executor process --workers 2" in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_task_file_with_task_tables_names_the_difference(tmp_path: Path) -> None:
    # Before: "holds no tasks", with no word on [[task]] versus [[tasks]].
    tasks = tmp_path / "tasks.toml"
    tasks.write_text('[[task]]\nid = "a"\nprompt = "do it"\n')
    done = onrecord(
        "run", "frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0",
        "--tasks-file", str(tasks), "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "[[tasks]] tables (plural)" in done.stderr


def test_import_errors_suggest_names_and_the_path() -> None:
    with pytest.raises(InputError, match=r"did you mean 'walker'"):
        import_object("tests.runner.helpers:walkr")
    with pytest.raises(InputError, match="PYTHONPATH"):
        import_object("no_such_module_of_mine:make")
