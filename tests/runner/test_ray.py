"""The Ray executor on a real local cluster gives the same results as in-process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from onrecord.runner import RayExecutor, RunStore, plan_run, start_run
from tests.runner._ray_cluster import local_ray_cluster

ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    with local_ray_cluster():
        yield


def _fingerprints(path: Path) -> dict[tuple[str, int], tuple[str, list[str]]]:
    return {
        r.key: (r.data["fingerprint"], [x["status"] for x in r.data["trial"]["results"]])
        for r in RunStore.open(path).records()
    }


def test_ray_matches_in_process(cluster: None, tmp_path: Path) -> None:
    protocol = plan_run(
        "remittance",
        "double_poster",
        seeds=[0, 1],
        environment_config={"size": 30, "kinds": ["duplicate", "split"]},
    )
    start_run(tmp_path / "local", protocol)
    executor = RayExecutor(chunk_size=2)
    with executor:
        result = start_run(tmp_path / "ray", protocol, executor=executor)
    assert ray.is_initialized()  # the executor leaves a cluster it did not start running
    assert result.complete
    assert executor.workers == 2
    assert _fingerprints(tmp_path / "ray") == _fingerprints(tmp_path / "local")
    local = RunStore.open(tmp_path / "local")
    assert sum(1 for _ in local.records()) == 12


def test_gymnasium_episodes_on_ray(cluster: None, tmp_path: Path) -> None:
    protocol = plan_run("CartPole-v1", "random", seeds=list(range(8)))
    start_run(tmp_path / "local", protocol)
    with RayExecutor() as executor:
        start_run(tmp_path / "ray", protocol, executor=executor)
    assert _fingerprints(tmp_path / "ray") == _fingerprints(tmp_path / "local")


def test_an_async_agent_on_ray(cluster: None, tmp_path: Path) -> None:
    """Ray runs a task on its worker's main thread, with no event loop there: an async
    agent is awaited on a loop of its own, as in process."""
    protocol = plan_run("frozenlake", "tests.runner.test_async_run_limits:to_goal", seeds=[0, 1])
    start_run(tmp_path / "local", protocol)
    with RayExecutor() as executor:
        result = start_run(tmp_path / "ray", protocol, executor=executor)
    assert result.complete
    assert result.decision.decision == "accept"
    assert _fingerprints(tmp_path / "ray") == _fingerprints(tmp_path / "local")
