"""The Ray executor: episodes as Ray tasks on a local or remote cluster."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from onrecord.errors import InputError
from onrecord.runner._executors import Executor, _Chunk, _chunks, _next
from onrecord.runner._job import EpisodeJob, JobResult, _resolved, run_job
from onrecord.runner._timeout import start_worker

__all__ = ["RayExecutor"]


class RayExecutor(Executor):
    """Ray tasks on a local or remote cluster (``pip install 'onrecord[ray]'``).

    As with the process pool, a task whose worker dies (``os._exit``, a signal, out of
    memory, a lost node) costs only the episode that killed it: the chunk's jobs run
    again one per task, and the one whose worker dies again comes back as an error. Ray
    does not retry tasks itself (a retried chunk would only kill its worker again).

    ``workers`` bounds how many tasks run at once (default: every CPU of the cluster).
    ``runtime_env`` goes with the cluster connection this executor makes, or with each
    task on a cluster the caller connected to; a cluster the caller connected to is left
    connected by ``close()``.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        chunk_size: int | None = None,
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise InputError("the Ray executor needs Ray: pip install 'onrecord[ray]'") from exc
        if workers is not None and (type(workers) is not int or workers < 1):
            raise InputError(f"workers must be a positive integer, got {workers!r}")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            # Ray reads an empty address as a format error (a traceback, exit 1).
            raise InputError(
                f"the Ray address must be host:port, ray://host:port or auto, got {address!r}; "
                "leave it out for a local cluster"
            )
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            _connect(ray, address, runtime_env)
        remote = ray.remote(num_cpus=1, max_retries=0)(_run_on_node)
        if runtime_env is not None and not self._started:
            # ray.init's runtime_env is the connection's: on a cluster the caller had
            # connected to already it was silently dropped (the modules it should bring
            # were missing on the workers). A task's own runtime_env applies there too.
            remote = remote.options(runtime_env=runtime_env)
        self._remote: Any = remote
        cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
        self.workers = workers or max(1, int(cpus))
        # Ray runs as many tasks at once as the cluster has CPUs, so --workers N only
        # bounds concurrency (a shared cluster, an agent's rate-limited API) if at most N
        # tasks are submitted; without it, a few tasks queued per CPU keep every CPU busy.
        self._in_flight = workers if workers is not None else self.workers * 4
        self.chunk_size = chunk_size

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        ray = self._ray
        chunks = iter(_chunks(jobs, self.workers, self.chunk_size))
        retries: list[EpisodeJob] = []  # jobs of a chunk whose worker died, run alone
        pending: dict[Any, _Chunk] = {}
        # Names the notes of workers ended by the episode timeout's watchdog this run.
        notes = f"{_NOTES}{secrets.token_hex(8)}:"
        try:
            while True:
                # A bounded number of tasks in flight keeps memory flat on huge runs.
                while len(pending) < self._in_flight and (chunk := _next(chunks, retries)):
                    pending[self._remote.remote(chunk.jobs, notes)] = chunk
                if not pending:
                    return
                finished, _ = ray.wait(list(pending), num_returns=1)
                for ref in finished:
                    chunk = pending.pop(ref)
                    try:
                        results = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:  # raised, not died: no retry
                        yield from chunk.failed(_task_failure(exc))
                        continue
                    except ray.exceptions.RayError as exc:
                        if _worker_lost(ray, exc):  # the worker (or its node) died
                            yield from chunk.lost(retries, partial(_take_notes, notes))
                        else:  # Ray could not run it (runtime_env setup, ...): no retry
                            yield from chunk.failed(_ray_failure(exc))
                        continue
                    yield from results
        finally:
            # Interrupted (Ctrl-C, an error while appending): stop the tasks in flight
            # rather than let them run on (a hung agent would hold its CPU for good).
            for ref in pending:
                # It may have finished meanwhile, or the cluster be gone already.
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()


_CONNECT_TIMEOUT = 10.0


def _connect(ray: Any, address: str | None, runtime_env: dict[str, Any] | None) -> None:
    """``ray.init``, with its failures as bad input naming the address (exit 3)."""
    target, source = _target(address)
    where = f"connect to the Ray cluster at {target}" if target else "start or find a Ray cluster"
    if target:
        # Ray retries an address where nothing answers for about 13 minutes (20 tries of
        # 40 s), printing log lines: a plain TCP connection tells at once.
        _check_reachable(target, source)
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env=runtime_env,
        )
    except Exception as exc:
        # Ray raises ConnectionError (an OSError, which the CLI would report as "a
        # file"), ValueError, RuntimeError...: name the cluster and the usual causes.
        hint = (
            "; is the address right and the cluster up? (a cluster started with token "
            "authentication needs RAY_AUTH_MODE=token and its token here too)"
            if target
            else ""
        )
        raise InputError(f"could not {where}: {_first_line(exc)}{hint}") from exc


def _target(address: str | None) -> tuple[str | None, str]:
    """The ``host:port`` (or ``ray://``) address ``ray.init(address)`` will connect to,
    if known, and where it came from; None when it starts a local cluster or resolves
    the address itself (``auto``, ``local``, other ``scheme://`` clients)."""
    if address is not None:
        return (None if address in ("auto", "local") else address), "the given address"
    if environ := os.environ.get("RAY_ADDRESS"):
        return (None if environ in ("auto", "local") else environ), "RAY_ADDRESS"
    try:  # the address a `ray start --head` on this machine left behind for ray.init()
        from ray._private.utils import read_ray_address

        last = read_ray_address()
    except Exception:  # Ray's private helper moved: Ray will find it (or not) itself
        return None, ""
    return (last or None), "left by the last `ray start` on this machine; `ray stop` clears it"


def _check_reachable(target: str, source: str) -> None:
    scheme, sep, rest = target.partition("://")
    if sep and scheme != "ray":
        return  # another Ray client (its own URL format): let Ray connect
    hostport = rest if sep else target
    host, colon, port = hostport.rpartition(":")
    if not colon and sep:  # ray://host: Ray Client's default port
        host, port = hostport, "10001"
    host = host.strip("[]")  # [::1]:6379
    if not host or not port.isdigit():
        raise InputError(
            f"the Ray address {target!r} ({source}) is not host:port or ray://host:port"
        )
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(
            f"no Ray cluster answers at {target} ({source}): {reason}; is the address "
            "right, the cluster up and its port reachable from here?"
        ) from exc


def _worker_lost(ray: Any, exc: BaseException) -> bool:
    """A Ray error meaning the task's worker, node or result is gone (retrying the job
    alone tells whether it was the episode's doing); other errors will not go away."""
    errors = ray.exceptions
    lost = (
        errors.WorkerCrashedError,
        errors.OutOfMemoryError,
        errors.NodeDiedError,
        errors.LocalRayletDiedError,
        errors.ObjectLostError,
    )
    return isinstance(exc, lost)


def _ray_failure(exc: BaseException) -> str:
    # Before, every Ray error was taken for a dead worker: a runtime_env that cannot be
    # set up read "died (os._exit, a signal or out of memory)", after a retry per job.
    return (
        f"Ray could not run the task: {_first_line(exc)}; the episodes did not start; "
        "a resume retries them"
    )


def _first_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` in one line; Ray's multi-line messages (a remote
    traceback) also give their last line, where the cause is."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1:
        text += f" ... {lines[-1]}"
    return f"{type(exc).__name__}: {text}"


_NOTES = "onrecord-timeout:"
"""Prefix of the keys (in Ray's key-value store) of the notes a worker ended by the
episode timeout's watchdog leaves for the driver."""


def _note_on_cluster(prefix: str) -> Callable[[str, str], None]:
    def note(name: str, message: str) -> None:
        from ray.experimental import internal_kv

        internal_kv._internal_kv_put(
            f"{prefix}{name}".encode(), message.encode(), overwrite=True, namespace="onrecord"
        )

    return note


def _take_notes(prefix: str, names: Sequence[str]) -> dict[str, str]:
    """The notes left for ``names`` (read once); none if Ray's store cannot be read (the
    episode then reads as its worker dying)."""
    found = {}
    try:
        from ray.experimental import internal_kv

        for name in names:
            key = f"{prefix}{name}".encode()
            value = internal_kv._internal_kv_get(key, namespace="onrecord")
            if value is not None:
                found[name] = bytes(value).decode()
                internal_kv._internal_kv_del(key, namespace="onrecord")
    except Exception:  # a private Ray API: moved, or not available to this client
        return found
    return found


def _in_worker() -> bool:
    """Whether this process is a Ray worker (never the driver, which a watchdog must not
    end); False when Ray cannot tell."""
    try:
        from ray._private.worker import WORKER_MODE, global_worker

        return bool(global_worker.mode == WORKER_MODE)
    except Exception:
        return False


def _run_on_node(jobs: Sequence[EpisodeJob], notes: str | None = None) -> list[JobResult]:
    """``run_chunk`` in a Ray worker. The driver loaded the environment, agent and
    checks when it planned the run, so a node that cannot load them runs another Python
    environment: the loader's own advice (PYTHONPATH for ``onrecord run``) is about the
    driver, so say where it failed and what a node needs."""
    results: list[JobResult] = []
    watched = notes is None  # the watchdog is set up for the first job with a limit
    for job in jobs:
        case_id, repeat = job.key
        if not watched and job.context.episode_timeout is not None and notes is not None:
            watched = True
            if _in_worker():
                start_worker(_note_on_cluster(notes))
        try:
            _resolved(job.context)  # cached per worker: run_job finds it there
        except Exception as exc:
            import ray

            node = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
            results.append(
                JobResult(
                    case_id,
                    repeat,
                    error=(
                        f"on Ray node {node}: {type(exc).__name__}: {exc}; the driver could "
                        "load it, this node cannot: install the modules on every node, "
                        "start the nodes (ray start) with them on PYTHONPATH, or pass "
                        "RayExecutor(runtime_env=...)"
                    ),
                )
            )
            continue
        results.append(run_job(job))
    return results


def _task_failure(exc: BaseException) -> str:
    """A Ray task that raised outside the episode (episodes catch their own errors): most
    often onrecord or the task's modules missing on a node. Its cause, in one line."""
    cause = getattr(exc, "cause", None) or exc
    first = str(cause).strip().splitlines()[:1] or [""]
    return (
        f"the Ray task failed before or after its episodes: {type(cause).__name__}: "
        f"{first[0]}; is onrecord, with the environment's and agent's modules, installed "
        "on every node? a resume retries it"
    )
