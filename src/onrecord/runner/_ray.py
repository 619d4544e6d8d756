"""The Ray executor: episodes as Ray tasks on a local or remote cluster."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from onrecord._exceptions import describe
from onrecord.errors import InputError
from onrecord.runner._executors import Executor, _Chunk, _chunks, _next
from onrecord.runner._job import EpisodeJob, JobResult, _resolved, run_job
from onrecord.runner._raycluster import (
    check_connected,
    connect,
    first_line,
    require_cpus,
    through_client,
    waiting_message,
)
from onrecord.runner._timeout import start_worker

__all__ = ["RayExecutor"]

log = logging.getLogger("onrecord.runner.ray")
"""Where a run that waits on its cluster says so (a warning: shown on stderr unless
logging is configured otherwise)."""

WAIT_NOTICE = 30.0
"""Seconds without any of a run's tasks running before it says what it waits for (then
again after twice as long, up to every ``10 * WAIT_NOTICE`` seconds)."""
_NOTE_TIMEOUT = 10.0
"""Seconds to leave, or read, an episode's timeout note."""


class RayExecutor(Executor):
    """Ray tasks on a local or remote cluster (``pip install 'onrecord[ray]'``).

    As with the process pool, a task whose worker dies (``os._exit``, a signal, out of
    memory, a lost node) costs only the episode that killed it: the chunk's jobs run
    again one per task, and the one whose worker dies again comes back as an error. Ray
    does not retry tasks itself (a retried chunk would only kill its worker again).

    ``workers`` bounds how many tasks run at once (default: every CPU of the cluster).
    ``runtime_env`` goes with the cluster connection this executor makes, or with each
    task on a cluster the caller connected to; a cluster the caller connected to is left
    connected by ``close()``. If Ray is connected already, ``address`` must name that
    cluster (or be left out): another one is refused. A cluster without CPUs is refused;
    a run whose tasks wait for free CPUs says so (a warning on the
    ``onrecord.runner.ray`` logger).
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
        self._asked = {"workers": workers, "address": address}  # for settings()
        self._started = not ray.is_initialized()
        # ray.init points breakpoint() at Ray's debugger for the rest of the process,
        # over the caller's PYTHONBREAKPOINT (0 in a CI job: a stray breakpoint() then
        # waited for a debugger); close() puts the caller's back.
        self._breakpoint_hook = os.environ.get("PYTHONBREAKPOINT")
        if self._started:
            try:
                connect(ray, address, runtime_env)
            except InputError:
                _restore("PYTHONBREAKPOINT", self._breakpoint_hook)
                raise
        else:
            # The address used to be ignored: the run went to the connected cluster.
            check_connected(ray, address)
        try:
            # Before, a cluster without CPUs made the run wait forever, silently.
            cpus = require_cpus(ray)
        except InputError:
            self.close()
            raise
        # A task yields once when it starts, then its results: the run knows whether
        # any of its tasks runs. Ray Client cannot wait on such tasks: there, a task
        # returns its results only.
        self._streams = not through_client(ray)
        remote = ray.remote(num_cpus=1, max_retries=0)(
            _run_on_node if self._streams else _run_chunk
        )
        notes = ray.remote(num_cpus=0, max_restarts=0)(_Notes)
        if runtime_env is not None and not self._started:
            # ray.init's runtime_env is the connection's: on a cluster the caller had
            # connected to already it was silently dropped (the modules it should bring
            # were missing on the workers). A task's own runtime_env applies there too.
            remote = remote.options(runtime_env=runtime_env)
            notes = notes.options(runtime_env=runtime_env)
        self._remote: Any = remote
        self._notes: Any = notes
        self.workers = workers or cpus
        # Ray runs as many tasks at once as the cluster has CPUs, so --workers N only
        # bounds concurrency (a shared cluster, an agent's rate-limited API) if at most N
        # tasks are submitted; without it, a few tasks queued per CPU keep every CPU busy.
        self._in_flight = workers if workers is not None else self.workers * 4
        self.chunk_size = chunk_size

    def settings(self) -> dict[str, Any] | None:
        # What was asked, not what the cluster had: a resume without --workers uses
        # every CPU of the cluster it finds, as the run did.
        asked = {key: value for key, value in self._asked.items() if value is not None}
        return {"name": self.name, **asked}

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        ray = self._ray
        chunks = iter(_chunks(jobs, self.workers, self.chunk_size))
        retries: list[EpisodeJob] = []  # jobs of a chunk whose worker died, run alone
        pending: dict[Any, _Chunk] = {}
        running: set[Any] = set()  # tasks that said they started (unknown: none)
        # Where workers ended by the episode timeout's watchdog leave word of it.
        board = self._notes.remote() if any(map(_limited, jobs)) else None
        waiting = _Waiting()
        try:
            while True:
                # A bounded number of tasks in flight keeps memory flat on huge runs.
                while len(pending) < self._in_flight and (chunk := _next(chunks, retries)):
                    pending[self._remote.remote(chunk.jobs, board, _DRIVER)] = chunk
                if not pending:
                    return
                timeout = None if running else waiting.left()
                finished, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
                if not finished and (notice := waiting.notice(ray, len(pending), self._streams)):
                    log.warning(notice)  # none of the run's tasks runs: say what it waits for
                for ref in finished:
                    yield from self._collect(ref, pending, running, retries, board)
                if running or (finished and not self._streams):
                    waiting.reset()
                if not running:
                    waiting.idle()
        finally:
            # Interrupted (Ctrl-C, an error while appending): stop the tasks in flight
            # rather than let them run on (a hung agent would hold its CPU for good).
            for ref in pending:
                # It may have finished meanwhile, or the cluster be gone already.
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            if board is not None:
                with contextlib.suppress(Exception):
                    ray.kill(board)

    def _collect(
        self,
        ref: Any,
        pending: dict[Any, _Chunk],
        running: set[Any],
        retries: list[EpisodeJob],
        board: Any,
    ) -> Iterator[JobResult]:
        """The next item of a task that has one: that it started, or its results."""
        ray = self._ray
        chunk = pending[ref]
        try:
            results = ray.get(next(ref) if self._streams else ref)
        except StopIteration:  # no results: not expected of Ray, but never lose the jobs
            del pending[ref]
            running.discard(ref)
            yield from chunk.failed("the Ray task ended without its results; a resume retries it")
            return
        except ray.exceptions.RayTaskError as exc:  # raised, not died: no retry
            del pending[ref]
            running.discard(ref)
            yield from chunk.failed(_task_failure(exc))
            return
        except ray.exceptions.RayError as exc:
            del pending[ref]
            running.discard(ref)
            if _worker_lost(ray, exc):  # the worker (or its node) died
                yield from chunk.lost(retries, lambda names: _take_notes(ray, board, names))
            else:  # Ray could not run it (runtime_env setup, ...): no retry
                yield from chunk.failed(_ray_failure(exc))
            return
        if results is None:  # it started
            running.add(ref)
            return
        del pending[ref]  # its last item
        running.discard(ref)
        yield from results

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
            _restore("PYTHONBREAKPOINT", self._breakpoint_hook)


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


class _Waiting:
    """When a run none of whose tasks runs says what it waits for: after
    ``WAIT_NOTICE`` seconds, then after twice as long each time (at most
    ``10 * WAIT_NOTICE`` seconds apart)."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.idle()

    def idle(self) -> None:
        """None of the run's tasks is known to run (since now, unless that was so
        already)."""
        if self.since is None:
            self.since = time.monotonic()
            self.interval = WAIT_NOTICE
            self.due = self.since + self.interval

    def reset(self) -> None:
        """Some task of the run runs, or (not knowing when tasks start) one finished."""
        self.since = None

    def left(self) -> float:
        """Seconds until the next notice is due."""
        return max(0.0, self.due - time.monotonic())

    def notice(self, ray: Any, waiting: int, known: bool) -> str | None:
        now = time.monotonic()
        message = waiting_message(ray, waiting, now - (self.since or now), started_known=known)
        self.interval = min(self.interval * 2, 10 * WAIT_NOTICE)
        self.due = now + self.interval
        return message


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
        f"Ray could not run the task: {first_line(exc)}; the episodes did not start; "
        "a resume retries them"
    )


def _limited(job: EpisodeJob) -> bool:
    """Whether ``job`` has a time limit (a stand-in job without a context has none)."""
    return getattr(getattr(job, "context", None), "episode_timeout", None) is not None


class _Notes:
    """A run's notes from workers ended by the episode timeout's watchdog, keyed by job
    (an actor: Ray's public API, where the key-value store it replaces was private)."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {}

    def put(self, name: str, message: str) -> None:
        self.notes[name] = message

    def take(self, names: Sequence[str]) -> dict[str, str]:
        return {name: self.notes.pop(name) for name in names if name in self.notes}


def _take_notes(ray: Any, board: Any, names: Sequence[str]) -> dict[str, str]:
    """The notes left for ``names`` (read once); none if the board cannot be read (the
    episode then reads as its worker dying)."""
    if board is None:
        return {}
    try:
        return dict(ray.get(board.take.remote(list(names)), timeout=_NOTE_TIMEOUT))
    except Exception:  # the actor died, or never started (a runtime_env it lacks)
        return {}


def _note_on(board: Any) -> Callable[[str, str], None]:
    def note(name: str, message: str) -> None:
        import ray

        ray.get(board.put.remote(name, message), timeout=_NOTE_TIMEOUT)

    return note


_DRIVER = secrets.token_hex(8)
"""This process's token: each process importing this module draws its own, so a task
given the driver's token runs in a worker (a watchdog may end it) unless it equals the
token here (it runs in the driver, which is never ended). Ray's own way to tell is
private (``ray._private.worker``)."""


def _run_on_node(
    jobs: Sequence[EpisodeJob], board: Any = None, driver: str = _DRIVER
) -> Iterator[list[JobResult] | None]:
    """``_run_chunk`` as a Ray task that yields None when it starts, then the results."""
    yield None
    yield _run_chunk(jobs, board, driver)


def _run_chunk(
    jobs: Sequence[EpisodeJob], board: Any = None, driver: str = _DRIVER
) -> list[JobResult]:
    """``run_chunk`` in a Ray worker.

    The driver loaded the environment, agent and checks when it planned the run, so a
    node that cannot load them runs another Python environment: the loader's own advice
    (PYTHONPATH for ``onrecord run``) is about the driver, so say where it failed and
    what a node needs."""
    results: list[JobResult] = []
    watched = board is None or driver == _DRIVER  # no watchdog in the driver
    for job in jobs:
        case_id, repeat = job.key
        if not watched and job.context.episode_timeout is not None:
            watched = True  # the watchdog is set up for the first job with a limit
            start_worker(_note_on(board))
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
                        f"on Ray node {node}: {describe(exc)}; the driver could "
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
