"""The Ray executor as a demanding user runs it: a wrong address fails at once as bad
input, ``--workers`` bounds concurrency, a ``runtime_env`` reaches a cluster the caller
connected to, and Ray's own failures are named rather than taken for dead workers."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.runner import RayExecutor, make_executor, plan_run
from tests.runner._ray_cluster import local_ray_cluster
from tests.runner.conftest import onrecord
from tests.runner.test_workers_probe import _walk

ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray

SPANS = "ONRECORD_PROBE_SPANS"
FLAG = "ONRECORD_PROBE_FLAG"


def records_its_span(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Writes when it started and ended to the folder named by ``ONRECORD_PROBE_SPANS``."""
    start = time.time()
    time.sleep(0.2)
    name = f"{os.getpid()}-{env.np_random_seed}"
    Path(os.environ[SPANS], name).write_text(f"{start} {time.time()}")
    return _walk(env)


def needs_the_flag(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Raises (the episode is then incomplete) unless ``ONRECORD_PROBE_FLAG`` is set."""
    if os.environ.get(FLAG) != "on":
        raise RuntimeError(f"{FLAG} is not set in this worker")
    return _walk(env)


@pytest.fixture(scope="module")
def spans(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spans")


@pytest.fixture(scope="module")
def cluster(spans: Path) -> Iterator[str]:
    """One local 2-CPU cluster for the module (started as a user's own code would)."""
    with local_ray_cluster(**{SPANS: str(spans)}) as address:
        yield address


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_address_where_no_cluster_answers_is_bad_input(tmp_path: Path) -> None:
    lake = ("run", "frozenlake", "--agent", "walks_to_goal", "--no-progress")
    port = _free_port()
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        run_dir = tmp_path / "run"
        # Before: Ray retried for about 13 minutes (the subprocess timed out here).
        done = onrecord(*lake, "--executor", "ray", "--address", address, "--out", str(run_dir))
        assert done.returncode == 3, done.stderr
        assert f"no Ray cluster answers at {address} (the given address)" in done.stderr
        assert not run_dir.exists()
    done = onrecord(
        *lake, "--executor", "ray", "--out", str(tmp_path / "env"), env={"RAY_ADDRESS": address}
    )
    assert done.returncode == 3, done.stderr
    assert f"no Ray cluster answers at {address} (RAY_ADDRESS)" in done.stderr
    # Before: Ray's ValueError, a traceback and exit code 1 (read as "reject").
    done = onrecord(*lake, "--executor", "ray", "--address", "", "--out", str(tmp_path / "e"))
    assert done.returncode == 3, done.stderr
    assert "the Ray address must be host:port" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_address_alone_means_the_ray_executor(cluster: str) -> None:
    # Before: --address without --executor ran every episode in-process.
    executor = make_executor(address=cluster)
    assert isinstance(executor, RayExecutor)
    executor.close()
    assert ray.is_initialized()  # a cluster the caller connected to stays connected


def _peak_concurrency(folder: Path) -> int:
    bounds = [tuple(map(float, path.read_text().split())) for path in folder.iterdir()]
    events = sorted([(start, 1) for start, _ in bounds] + [(end, -1) for _, end in bounds])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def test_workers_bounds_how_many_episodes_run_at_once(cluster: str, spans: Path) -> None:
    agent = "tests.runner.test_ray_probe:records_its_span"
    protocol = plan_run("frozenlake", agent, seeds=range(6))
    with RayExecutor(workers=1, chunk_size=1) as executor:
        results = list(executor.run(protocol.jobs("run-one-worker")))
    assert [r.error for r in results] == [None] * 6
    assert len(list(spans.iterdir())) == 6
    # Before: up to 4 tasks per worker were submitted and Ray ran one per CPU (2).
    assert _peak_concurrency(spans) == 1


def test_runtime_env_reaches_a_cluster_the_caller_connected_to(cluster: str) -> None:
    protocol = plan_run("frozenlake", "tests.runner.test_ray_probe:needs_the_flag", seeds=[0, 1])
    executor = RayExecutor(runtime_env={"env_vars": {FLAG: "on"}})
    # Before: it went to ray.init only, which the executor skips on a connected cluster.
    assert [r.outcome for r in executor.run(protocol.jobs("run-flag"))] == ["pass", "pass"]
    executor.close()
    assert ray.is_initialized()


def test_a_ray_failure_that_is_not_a_dead_worker_is_named(cluster: str) -> None:
    protocol = plan_run("frozenlake", "walks_to_goal", seeds=[0, 1, 2])
    executor = RayExecutor(runtime_env={"conda": "onrecord-no-such-conda-env"}, chunk_size=3)
    results = list(executor.run(protocol.jobs("run-bad-env")))
    assert sorted(r.repeat for r in results) == [0, 1, 2]
    for result in results:
        # Before: "the worker process running this episode died (os._exit, a signal or
        # out of memory)", after running every job again alone.
        assert (result.error or "").startswith(
            "Ray could not run the task: RuntimeEnvSetupError: "
        ), result.error
        assert "died" not in (result.error or "")


def test_a_module_the_nodes_cannot_import_names_the_node(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "only_on_the_driver.py").write_text(
        "def agent(env, observation, info):\n    return 'done'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver's path, not the workers'
    protocol = plan_run("frozenlake", "only_on_the_driver:agent", seeds=[0])
    with RayExecutor() as executor:
        [result] = list(executor.run(protocol.jobs("run-missing-module")))
    error = result.error or ""
    assert error.startswith("on Ray node "), error
    assert "No module named 'only_on_the_driver'" in error
    assert "the driver could load it, this node cannot" in error
