"""The Ray executor on real local clusters: an address naming a cluster other than the
one Ray is connected to is refused (it was ignored), a cluster without CPUs is refused
(the run waited forever), a run whose tasks wait for busy CPUs says so (it was silent),
and a worker ended by the episode timeout's watchdog is reported as timed out without
Ray's private key-value store."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.errors import InputError
from onrecord.runner import RayExecutor, make_executor, plan_run, start_run
from onrecord.runner import _ray as ray_executor
from onrecord.runner._raycluster import waiting_message
from tests.runner._ray_cluster import local_ray_cluster
from tests.runner.conftest import onrecord
from tests.runner.test_workers_probe import _walk

ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray

# A second cluster, without CPUs, started by another process (one Ray per process).
_NO_CPUS = """
import sys, ray
ray.init(address="local", num_cpus=0, include_dashboard=False, log_to_driver=False)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""
_NO_AUTH = {"RAY_AUTH_MODE": "disabled"}  # another driver may connect without a token


class _Starting:
    """A process starting the cluster without CPUs; ``address()`` waits for it."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _NO_CPUS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **_NO_AUTH},
            text=True,
            start_new_session=True,  # its own group, so cleanup can end what it started
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        self.lines.append(self.process.stdout.readline())

    def address(self) -> str:
        self.reader.join(timeout=90)
        address = self.lines[0].strip() if self.lines else ""
        assert address, "the cluster without CPUs did not start"
        return address

    def stop(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()  # it shuts its cluster down and exits
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.reader.join()
        self.process.stdout.close()


@pytest.fixture(scope="module")
def starting() -> Iterator[_Starting]:
    """The second cluster, started while the first one starts (each takes seconds)."""
    second = _Starting()
    yield second
    second.stop()


@pytest.fixture(scope="module")
def no_cpus(starting: _Starting) -> str:
    """The address of a running cluster that has no CPUs."""
    return starting.address()


@pytest.fixture(scope="module")
def cluster(starting: _Starting) -> Iterator[str]:
    """One local 2-CPU cluster for the module, connected as a user's own code would."""
    if ray.is_initialized():
        pytest.skip("a Ray cluster is already connected")
    with local_ray_cluster() as address:
        yield address


def _port(address: str) -> str:
    return address.rpartition(":")[2]


def test_an_address_naming_another_cluster_is_refused(cluster: str, no_cpus: str) -> None:
    # Before: the address was ignored and the run went to the connected cluster.
    for make in (lambda: RayExecutor(address=no_cpus), lambda: make_executor(address=no_cpus)):
        with pytest.raises(InputError) as raised:
            make()
        message = str(raised.value)
        assert f"already connected in this process to the cluster at {cluster}" in message
        assert f"not to the one at {no_cpus}" in message
        assert "ray.shutdown()" in message
    assert ray.get_runtime_context().gcs_address == cluster  # left connected as it was
    # The connected cluster, however spelled, or no address, runs as before.
    port = _port(cluster)
    for address in (None, cluster, f"127.0.0.1:{port}", f"localhost:{port}"):
        with RayExecutor(address) as executor:
            assert executor.workers == 2
    with pytest.raises(InputError, match=r"not to the one at 127\.0\.0\.1:1 "):
        RayExecutor(address="127.0.0.1:1")  # this machine, another port


def test_a_cluster_without_cpus_is_refused(no_cpus: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    lake = ("run", "frozenlake", "--agent", "walks_to_goal", "--no-progress", "--out", str(out))
    # Before: the run waited for a CPU forever, saying nothing (the subprocess timed out).
    done = onrecord(*lake, "--address", no_cpus, env=_NO_AUTH, timeout=90)
    assert done.returncode == 3, done.stderr
    assert f"the Ray cluster at {no_cpus} has no CPUs" in done.stderr
    assert "ray start --num-cpus N" in done.stderr
    assert not out.exists()


def occupies_a_cpu(release: str, within: float) -> None:
    """Holds its CPU until the file ``release`` exists (at most ``within`` seconds)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and not Path(release).exists():
        time.sleep(0.05)


class _Releases(logging.Handler):
    """Keeps the executor's warnings; the first one creates ``release``."""

    def __init__(self, release: Path) -> None:
        super().__init__()
        self.file, self.messages = release, list[str]()

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.file.touch()


def test_a_run_waiting_for_busy_cpus_says_so(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = tmp_path / "release"
    other_job = ray.remote(num_cpus=1)(occupies_a_cpu)
    blockers = [other_job.remote(str(release), 30.0) for _ in range(2)]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and ray.available_resources().get("CPU", 0) > 0:
        time.sleep(0.05)
    assert ray.available_resources().get("CPU", 0) == 0
    monkeypatch.setattr(ray_executor, "WAIT_NOTICE", 0.5, raising=False)
    handler = _Releases(release)
    logging.getLogger("onrecord.runner.ray").addHandler(handler)
    try:
        protocol = plan_run("frozenlake", "walks_to_goal", seeds=range(3))
        with RayExecutor() as executor:
            results = list(executor.run(protocol.jobs("run-busy")))
    finally:
        logging.getLogger("onrecord.runner.ray").removeHandler(handler)
        release.touch()
        ray.get(blockers)
    assert [r.error for r in results] == [None] * 3
    # Before: nothing said why nothing ran (the blockers ended after 30 s on their own).
    assert handler.messages, "no word of the wait"
    first = handler.messages[0]
    assert first.startswith("none of this run's ")
    assert "waiting for free CPUs: all 2 of its CPUs are in use by other jobs" in first
    assert f"on the Ray cluster at {cluster}" in first


def breaks_rays_store_then_hangs(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """On seed 1: makes Ray's private key-value store fail in this worker (as if a Ray
    upgrade had moved it), then catches every BaseException (only the watchdog ends it)."""
    if env.np_random_seed == 1:
        from ray.experimental import internal_kv

        def moved(*args: object, **kwargs: object) -> None:
            raise AttributeError("moved in this Ray version")

        internal_kv._internal_kv_put = moved
        internal_kv._internal_kv_get = moved
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(BaseException):
                time.sleep(10)
    return _walk(env)


def test_a_worker_ended_by_the_timeout_is_reported_without_rays_private_store(
    cluster: str, tmp_path: Path
) -> None:
    agent = "tests.runner.test_ray_followups:breaks_rays_store_then_hangs"
    protocol = plan_run("frozenlake", agent, seeds=range(3))
    with RayExecutor(chunk_size=3) as executor:
        # 4 s, not 0.5: the limit covers a worker importing the agent's module (and
        # Gymnasium) in its first episode, slower than 0.5 s on a loaded CI machine.
        result = start_run(tmp_path / "run", protocol, executor=executor, episode_timeout=4)
    # Before: the note went through Ray's private store; without it, the episode read
    # "the worker process running this episode died", after running it twice.
    assert len(result.errors) == 1, result.errors
    error = result.errors[0]
    assert error.startswith("frozenlake/goal#1: timed out: "), error
    assert "its worker process was ended" in error
    assert "(stuck at " in error
    assert "test_ray_followups.py" in error
    assert sorted(r.key[1] for r in result.store.records()) == [0, 2]


class _Resources:
    def __init__(self, cpus: float, free: float) -> None:
        self.cpus, self.free = cpus, free

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": self.cpus} if self.cpus else {}

    def available_resources(self) -> dict[str, float]:
        return {"CPU": self.free} if self.free else {}

    def get_runtime_context(self) -> Any:
        raise RuntimeError("not connected")


def test_the_wait_message_names_what_the_cluster_lacks() -> None:
    gone = waiting_message(_Resources(0, 0), 4, 31)
    assert gone.startswith("none of this run's 4 Ray tasks (1 CPU each) has started in 31 s")
    assert "has no CPUs now" in gone
    assert "waiting for free CPUs: all 8 of its CPUs are" in waiting_message(
        _Resources(8, 0), 4, 31
    )
    one = waiting_message(_Resources(1, 0), 1, 30)
    assert one.startswith("this run's Ray task (1 CPU) has not started in 30 s: ")
    assert "waiting for free CPUs: its only CPU is in use by other jobs" in one
    assert "Ray may still be starting workers" in waiting_message(_Resources(8, 3), 4, 31)
    # Through Ray Client, which does not say when a task starts: only when no CPU is free.
    assert waiting_message(_Resources(8, 3), 4, 31, started_known=False) is None
    busy = waiting_message(_Resources(8, 0), 4, 31, started_known=False) or ""
    assert busy.startswith("no Ray task of this run has finished in 31 s and all 8 of its CPUs")
    assert "by this run's episodes if they take that long, else by other jobs" in busy
