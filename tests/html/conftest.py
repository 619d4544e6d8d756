"""Finished runs the HTML tests render."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.runner import plan_run, start_run


def _small_remittance_run(path: Path, agent: str) -> Path:
    """``agent`` on the duplicate and full-payment tasks, two seeds, 30-row snapshots."""
    start_run(
        path,
        plan_run(
            "remittance",
            agent,
            seeds=[0, 1],
            environment_config={"size": 30, "kinds": ["duplicate", "full_payment"]},
        ),
    )
    return path


@pytest.fixture(scope="session")
def remittance_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """double_poster on duplicate and full-payment tasks: some episodes fail."""
    return _small_remittance_run(tmp_path_factory.mktemp("html") / "remittance", "double_poster")


@pytest.fixture(scope="session")
def careful_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """careful on the same tasks, every episode passed: the other side of a comparison."""
    return _small_remittance_run(tmp_path_factory.mktemp("html") / "careful", "careful")


@pytest.fixture(scope="session")
def lake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An agent that gives up on FrozenLake: incomplete episodes, coverage issues."""
    path = tmp_path_factory.mktemp("html") / "lake"
    start_run(path, plan_run("frozenlake", "gives_up_early", seeds=[0, 1], repeats=2))
    return path
