"""A resume that cannot import the run's agent names the folder that holds it when the
agent's module sits above the run (``project/runs/NAME``) or in the working directory:
the printed command is the one to paste."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.cli_process import onrecord
from tests.sleeping_agent import write_sleeping_agent


def _started(project: Path) -> Path:
    """A 2-episode run in ``project/runs/first`` whose seed 1 timed out: one to go."""
    write_sleeping_agent(project, "agent_hint", seeds=(1,))
    run = project / "runs" / "first"
    done = onrecord(
        *("run", "remittance", "--agent", "agent_hint:make", "--tasks", "full-01"),
        *("--seeds", "0-1", "--episode-timeout", "0.5", "--no-progress", "--out", run),
        pythonpath=project,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr  # incomplete
    (project / "slow").unlink()
    return run


def _refusal(run: Path, cwd: Path, pythonpath: Path) -> str:
    done = onrecord("run", "--resume", run, "--no-progress", cwd=cwd, pythonpath=pythonpath)
    assert done.returncode == 3, done.stdout + done.stderr
    return " ".join(done.stderr.split())


def test_the_hint_names_the_folder_above_the_run_and_its_command_finishes_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "my project"  # a space: the folder is quoted to be pasted
    run = _started(project)
    elsewhere = tmp_path / "ci-job"
    elsewhere.mkdir()
    error = _refusal(run, cwd=elsewhere, pythonpath=elsewhere)
    assert f"({project / 'agent_hint.py'} is there)" in error, error
    assert f"(PYTHONPATH={shlex.quote(str(project))} onrecord run --resume" in error, error
    assert "FOLDER" not in error
    done = onrecord("run", "--resume", run, "--no-progress", cwd=elsewhere, pythonpath=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 episodes recorded" in done.stdout


def test_from_the_project_itself_the_hint_is_a_dot(tmp_path: Path) -> None:
    project = tmp_path / "project"
    run = _started(project)
    empty = tmp_path / "empty"
    empty.mkdir()
    error = _refusal(run, cwd=project, pythonpath=empty)
    assert "(PYTHONPATH=. onrecord run --resume" in error, error


def test_a_package_is_found_too_and_a_module_nowhere_near_keeps_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    run = _started(project)
    package = tmp_path / "project" / "agent_hint"
    (project / "agent_hint.py").rename(tmp_path / "agent_hint.py")
    error = _refusal(run, cwd=tmp_path / "project", pythonpath=tmp_path / "project" / "runs")
    # tmp_path is above the run too (two levels): the file moved there is found.
    assert f"({tmp_path / 'agent_hint.py'} is there)" in error, error
    (tmp_path / "agent_hint.py").unlink()
    package.mkdir()
    (package / "__init__.py").write_text("")
    error = _refusal(run, cwd=project, pythonpath=project / "runs")
    assert f"({package} is there)" in error
    assert "(PYTHONPATH=. onrecord run --resume" in error, error
    (package / "__init__.py").unlink()
    package.rmdir()
    error = _refusal(run, cwd=tmp_path, pythonpath=project / "runs")
    assert "(PYTHONPATH=FOLDER onrecord run --resume" in error, error


def test_a_working_directory_removed_under_the_command_gives_no_hint_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onrecord.runner._resumable import _module_above

    def removed() -> Path:
        raise FileNotFoundError(2, "No such file or directory")

    (tmp_path / "mine.py").write_text("")
    run = tmp_path / "runs" / "first"
    assert _module_above("mine", run) == tmp_path / "mine.py"
    monkeypatch.setattr(Path, "cwd", staticmethod(removed))
    assert _module_above("elsewhere", run) is None  # searched above the run, then stopped


def test_a_package_that_imports_but_lost_its_submodule_asks_for_the_fix_not_a_path(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    package = project / "agent_pkg"
    write_sleeping_agent(package, "agent", seeds=(1,))
    (package / "__init__.py").write_text("")
    run = project / "runs" / "first"
    done = onrecord(
        *("run", "remittance", "--agent", "agent_pkg.agent:make", "--tasks", "full-01"),
        *("--seeds", "0-1", "--episode-timeout", "0.5", "--no-progress", "--out", run),
        pythonpath=project,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    (package / "agent.py").unlink()
    error = _refusal(run, cwd=project, pythonpath=project)
    assert "No module named 'agent_pkg.agent'" in error, error
    assert f"fix the import, then `onrecord run --resume {run}`" in error, error
    assert "PYTHONPATH=" not in error
