"""The world-model loaders read only regular files: a FIFO or a device given as
forecasts or closed-loop records (or found beside them as their episodes) is refused
naming it, as every other onrecord record reader does, rather than waited on for ever
(a FIFO; a device such as ``/dev/zero`` was read until memory ran out, and is refused
by the same check, not exercised here for that reason). A link the user names is still
followed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onrecord.dynamics import (
    ExhaustivePlanner,
    ForecastEvidence,
    RandomModel,
    get_simulator,
    load_forecasts,
    load_runs,
    run_closed_loop,
    save_forecasts,
    save_runs,
)
from onrecord.errors import SchemaError

LOADERS: list[Callable[[Path], Any]] = [
    load_forecasts,
    ForecastEvidence.load,
    lambda path: load_runs(path, {}),
]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.mark.timeout(120)  # before the fix each call blocked for ever
@pytest.mark.parametrize("load", LOADERS)
def test_a_fifo_is_refused_naming_it(fifo: Path, load: Callable[[Path], Any]) -> None:
    with pytest.raises(SchemaError, match=r"pipe\.jsonl is a FIFO"):
        load(fifo)


def closed_loop(tmp_path: Path) -> tuple[Path, list[Any]]:
    cartpole = get_simulator("CartPole-v1")
    runs = run_closed_loop(
        cartpole, RandomModel(cartpole), ExhaustivePlanner(1), seeds=[0], max_steps=3
    )
    return save_runs(tmp_path / "runs.jsonl", runs), runs


@pytest.mark.timeout(120)
def test_a_fifo_as_the_episodes_beside_the_runs_is_refused(tmp_path: Path) -> None:
    path, _ = closed_loop(tmp_path)
    os.mkfifo(tmp_path / "runs.episodes.jsonl")
    # Before: reported as missing ("no runs.episodes.jsonl beside runs.jsonl").
    with pytest.raises(SchemaError, match=r"runs\.episodes\.jsonl is a FIFO"):
        load_runs(path)


def test_a_link_the_user_names_is_followed(tmp_path: Path, forecasts: Any) -> None:
    saved = save_forecasts(tmp_path / "forecasts.jsonl", forecasts["persistence"][:2])
    (tmp_path / "link.jsonl").symlink_to(saved)
    assert [f.digest for f in load_forecasts(tmp_path / "link.jsonl")] == [
        f.digest for f in forecasts["persistence"][:2]
    ]
    path, runs = closed_loop(tmp_path)
    (tmp_path / "runs-link.jsonl").symlink_to(path)
    episodes = {run.episode.digest: run.episode for run in runs}
    assert [r.digest for r in load_runs(tmp_path / "runs-link.jsonl", episodes)] == [
        r.digest for r in runs
    ]
