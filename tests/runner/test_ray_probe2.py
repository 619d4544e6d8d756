"""The Ray executor on a real local cluster when agents misbehave: a worker killed by its
agent costs only that episode, and Ctrl-C stops a hung Ray run promptly."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.runner import RayExecutor, RunStore, plan_run, start_run
from tests.runner._ray_cluster import local_ray_cluster
from tests.runner.conftest import interrupt_run
from tests.runner.test_workers_probe import DIE, _walk

ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray


def hangs_on_seed_3(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Never returns on seed 3 (no environment variable needed in the workers)."""
    if env.np_random_seed == 3:
        time.sleep(3600)
    return _walk(env)


def hangs_through_interrupts(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Never returns on seed 3, even when interrupted (a hang in native code)."""
    if env.np_random_seed == 3:
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            with contextlib.suppress(KeyboardInterrupt):
                time.sleep(0.5)
    return _walk(env)


def _free_cpus(expected: float, within: float) -> float:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and ray.available_resources().get("CPU", 0) < expected:
        time.sleep(0.2)
    return float(ray.available_resources().get("CPU", 0))


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """One local cluster for the module; yields its address for other drivers."""
    with local_ray_cluster(**{DIE: "2"}) as address:
        yield address


def _fingerprints(path: Path) -> dict[tuple[str, int], str]:
    return {r.key: r.data["fingerprint"] for r in RunStore.open(path).records()}


def test_an_agent_killing_its_ray_worker_costs_only_its_episode(
    cluster: str, tmp_path: Path
) -> None:
    protocol = plan_run("frozenlake", "tests.runner.test_workers_probe:dies", seeds=range(6))
    start_run(tmp_path / "local", protocol)  # DIE is unset here: nothing dies
    with RayExecutor(chunk_size=3) as executor:
        # Before: Ray retried the chunk three times, then the run raised
        # WorkerCrashedError and lost every episode of the run.
        result = start_run(tmp_path / "ray", protocol, executor=executor)
    assert not result.complete
    assert result.exit_code == 2
    assert len(result.errors) == 1
    assert result.errors[0].startswith("frozenlake/goal#2: the worker process running")
    local, remote = _fingerprints(tmp_path / "local"), _fingerprints(tmp_path / "ray")
    assert sorted(remote) == [("frozenlake/goal", r) for r in (0, 1, 3, 4, 5)]
    assert remote == {key: value for key, value in local.items() if key[1] != 2}


def test_ctrl_c_stops_a_hung_ray_run_and_frees_the_cluster(cluster: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    agent = "tests.runner.test_ray_probe2:hangs_on_seed_3"
    code, stderr = interrupt_run(
        *("frozenlake", "--agent", agent, "--seeds", "0-5", "--executor", "ray"),
        *("--address", cluster, "--no-progress"),
        run_dir=run_dir,
        env={},
        hangs=True,
    )
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert len(_fingerprints(run_dir)) == 5
    assert _free_cpus(2, within=15) == 2  # the hung task does not hold a CPU


def test_an_interrupted_ray_run_stops_its_hung_tasks_on_a_shared_cluster(cluster: str) -> None:
    protocol = plan_run(
        "frozenlake", "tests.runner.test_ray_probe2:hangs_through_interrupts", seeds=range(6)
    )
    executor = RayExecutor(chunk_size=1)  # the cluster is the module's: left running
    results = executor.run(protocol.jobs("run-interrupted"))
    finished = [next(results) for _ in range(5)]
    assert sorted(r.repeat for r in finished) == [0, 1, 2, 4, 5]
    results.close()  # what Ctrl-C (or an error while appending) does to the generator
    # Before: the task was cancelled politely, ignored it, and held its CPU for good.
    assert _free_cpus(2, within=10) == 2
    executor.close()
    assert ray.is_initialized()


class JobThatFailsOnTheNode:
    """Stands for a job a node cannot run (onrecord or a module missing there): its key
    raises inside the Ray worker only (DIE is set in the cluster's workers alone)."""

    repeat = 0

    @property
    def key(self) -> tuple[str, int]:
        if os.environ.get(DIE):
            raise ModuleNotFoundError("No module named 'clinic_agents'")
        return ("frozenlake/goal", 0)


def test_a_task_that_raises_is_named_as_such_not_as_a_dead_worker(cluster: str) -> None:
    with RayExecutor(chunk_size=1) as executor:
        results = list(executor.run([JobThatFailsOnTheNode()]))  # type: ignore[list-item]
    assert [(r.case_id, r.repeat) for r in results] == [("frozenlake/goal", 0)]
    error = results[0].error or ""
    assert "the Ray task failed" in error
    assert "ModuleNotFoundError: No module named 'clinic_agents'" in error
    assert "died" not in error
