"""A tool world's run imports neither Gymnasium nor NumPy: not the command, not its pool
workers, not a regrade. Before, ``onrecord run remittance`` imported both (~150 ms of
every start-up and of every worker process) through the registry, which imported the
Gymnasium provider at its top, and the remittance domain's Gymnasium face.

A ``sitecustomize`` on the processes' path logs every process that looks either up, so
the workers a pool spawns are watched too; a FrozenLake run shows the log works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.runner.conftest import ROOT, onrecord

_WATCH = """\
import os, sys

class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name in ("gymnasium", "numpy"):
            with open(os.environ["ONRECORD_TEST_IMPORT_LOG"], "a") as log:
                log.write(f"{os.getpid()} {name}\\n")
        return None

sys.meta_path.insert(0, _Watch())
"""


@pytest.fixture
def watched(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of watched processes, and the log they write."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_WATCH)
    log = tmp_path / "imports.log"
    path = os.pathsep.join(filter(None, [str(site), str(ROOT), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "ONRECORD_TEST_IMPORT_LOG": str(log)}, log


def _logged(log: Path) -> set[str]:
    return {line.split()[1] for line in log.read_text().splitlines()} if log.exists() else set()


def test_a_remittance_run_its_pool_workers_and_its_regrade_import_neither(
    watched: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, log = watched
    run = tmp_path / "run"
    pool = ["--executor", "process", "--workers", "2"]
    done = onrecord(
        "run", "remittance", "--agent", "careful", "--seeds", "0-1", *pool, "--out", str(run),
        "--no-progress", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert len((run / "episodes.jsonl").read_text().splitlines()) > 2  # 33 tasks x 2 seeds
    regraded = onrecord("regrade", str(run), "--no-progress", env=env)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert _logged(log) == set()


def test_a_gymnasium_run_is_seen_importing_both(
    watched: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, log = watched
    args = ["frozenlake", "--agent", "walks_to_goal", "--seeds", "0", "--no-progress"]
    done = onrecord("run", *args, "--out", str(tmp_path / "run"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _logged(log) == {"gymnasium", "numpy"}
