"""Where episodes run: in this process, in a local process pool, or on a Ray cluster.

Every executor takes the same jobs and yields the same results (as they complete); each
job builds its own environment inside the worker, so nothing is shared between episodes
or workers except the read-only provider template each worker builds for itself.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from onrecord._scratch import ScratchDirectory
from onrecord.errors import InputError
from onrecord.runner._interrupts import interrupts_held, interrupts_kept
from onrecord.runner._job import EpisodeJob, JobResult, run_chunk
from onrecord.runner._orphans import end_with_parent
from onrecord.runner._pool_pipe import DeadWorkerWatch, end_half_read_results, workers_of
from onrecord.runner._timeout import marker_key, start_pool_worker, take_markers
from onrecord.runner._worker_scratch import remove_scratch_of

__all__ = [
    "EXECUTORS",
    "Executor",
    "InProcessExecutor",
    "ProcessPoolExecutor",
    "make_executor",
    "stopped_in_loop",
]

EXECUTORS = ("inprocess", "process", "ray")
_WATCH_EVERY = 1.0
"""Seconds between looks at a pool's workers while no chunk finishes (``_pool_pipe``)."""


def _chunks(
    jobs: Sequence[EpisodeJob], workers: int, chunk_size: int | None
) -> list[list[EpisodeJob]]:
    # Several episodes per message amortize pickling and scheduling; small enough that
    # every worker gets many chunks and progress stays smooth.
    if chunk_size:
        return [list(jobs[i : i + chunk_size]) for i in range(0, len(jobs), chunk_size)]
    size = max(1, min(32, len(jobs) // (workers * 8) or 1))
    # A worker builds a case's environment (a task snapshot) the first time it meets
    # the case, so a case split across chunks is built by several workers: keep a case's
    # jobs together up to ``whole`` (still a few chunks per worker), pack small cases.
    whole = max(size, min(_CASE_CHUNK, len(jobs) // (workers * 4)))
    chunks: list[list[EpisodeJob]] = []
    for run in _case_runs(jobs):
        parts = -(-len(run) // whole)
        for index in range(parts):
            piece = run[index * len(run) // parts : (index + 1) * len(run) // parts]
            if chunks and len(chunks[-1]) + len(piece) <= size:
                chunks[-1].extend(piece)
            else:
                chunks.append(list(piece))
    return chunks


_CASE_CHUNK = 256


def _case_runs(jobs: Sequence[EpisodeJob]) -> list[Sequence[EpisodeJob]]:
    """Consecutive jobs of one case (a protocol lists jobs task by task)."""
    runs: list[Sequence[EpisodeJob]] = []
    start = 0
    for index in range(1, len(jobs) + 1):
        if index == len(jobs) or jobs[index].case["case_id"] != jobs[start].case["case_id"]:
            runs.append(jobs[start:index])
            start = index
    return runs


class Executor:
    """Runs jobs and yields their results in completion order."""

    name = "executor"
    workers = 1

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        """Yield one result per job."""
        raise NotImplementedError

    def close(self) -> None:
        """Release workers."""

    def settings(self) -> dict[str, Any] | None:
        """What a resume builds this executor again from (kept in ``run.json``); None
        for an executor of your own, which ``make_executor`` cannot build."""
        return None

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcessExecutor(Executor):
    """One episode after another, in this process (the default; easiest to debug)."""

    name = "inprocess"

    def settings(self) -> dict[str, Any] | None:
        return {"name": self.name}

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        for job in jobs:
            # The episode runs here: a Ctrl-C it swallowed (an agent catching
            # BaseException, sqlite3 making one "not authorized") stops the run, and
            # the episode it disturbed is not recorded. Yielded outside: the handler
            # must not be left in place while the caller runs.
            with interrupts_kept():
                results = run_chunk([job])
            yield from results


def stopped_in_loop(path: str | os.PathLike[str], *, started: bool = True) -> str:
    """Why an in-process run met an async agent it cannot await, and the two ways out
    (both checked: a pool worker and a loop-free thread each run it to completion).
    Not ``started``: ``start_run`` refused it before making the run directory, so the
    ways out start the run rather than resume it."""
    where = str(path)
    if started:
        ended, kept, verb, call, args = (
            "stopped",
            "the episodes recorded before are kept",
            "Resume",
            "resume_run",
            repr(where),
        )
    else:
        ended, kept, verb, call, args = (
            "was not started",
            "nothing was written",
            "Start",
            "start_run",
            f"{where!r}, protocol",
        )
    return (
        f"the run in {where} {ended}: its agent is async, and start_run (or resume_run) "
        "was called while an event loop is running in this thread (Jupyter, an async "
        f"application), where the in-process executor cannot await it; {kept}. {verb} it "
        "with its episodes in worker processes, which run the agent on a loop of their "
        f"own: `{call}({args}, executor=ProcessPoolExecutor(1))` (onrecord.runner's; an "
        "episode_timeout works there too); or from a thread with no running loop: `await "
        f"asyncio.to_thread({call}, {args})` (without an episode_timeout: its signal needs "
        "the main thread)"
    )


class ProcessPoolExecutor(Executor):
    """A pool of ``workers`` local processes (started with ``spawn``: no inherited state).

    A worker that dies (``os._exit``, a signal, out of memory) breaks the pool and every
    chunk in flight with it. Those jobs run again in a fresh pool, one at a time, so the
    one that kills its worker again is known: it comes back as an error (a resume
    retries it) and the others are recorded. An interrupted run (Ctrl-C) stops the
    workers instead of waiting for their chunks, which may never end.
    """

    name = "process"

    def __init__(self, workers: int, *, chunk_size: int | None = None) -> None:
        if type(workers) is not int or workers < 1:
            raise InputError(f"workers must be a positive integer, got {workers!r}")
        self.workers = workers
        self.chunk_size = chunk_size
        # Where a worker ended by the episode timeout's watchdog leaves word of it;
        # removed by close(), when the executor is dropped unclosed, or (killed) by the
        # next run's sweep.
        self._scratch = ScratchDirectory("timeouts")
        self._notes = self._scratch.name
        self._pool = self._new_pool()
        self._stopped = False
        self._pids: set[int] = set()  # of every worker started: whose scratch is ours

    def settings(self) -> dict[str, Any] | None:
        return {"name": self.name, "workers": self.workers}

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(self._notes, os.getpid()),
        )

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        if self._stopped:  # an earlier run was interrupted: its pool is gone
            self._restart()
        chunks = iter(_chunks(jobs, self.workers, self.chunk_size))
        retries: list[EpisodeJob] = []  # jobs a dead worker took down, run alone
        pending: dict[cf.Future[list[JobResult]], _Chunk] = {}
        watch = DeadWorkerWatch()
        try:
            while True:
                broken = not self._fill(pending, chunks, retries)
                if not pending and not broken:
                    return
                # A pool found broken at submit: collect every chunk in flight first.
                until = cf.ALL_COMPLETED if broken else cf.FIRST_COMPLETED
                finished = self._wait(pending, until, watch)
                for future in finished:
                    chunk = pending.pop(future)
                    try:
                        results = future.result()
                    except BrokenProcessPool:
                        broken = True
                        yield from chunk.lost(retries, self._timed_out)
                        continue
                    yield from results
                if broken:  # every chunk still in flight died with the pool
                    for chunk in pending.values():
                        yield from chunk.lost(retries, self._timed_out)
                    pending.clear()
                    self._restart()
        finally:
            if pending:  # interrupted (Ctrl-C, an error while appending)
                self._stop_workers()

    def _wait(
        self,
        pending: dict[cf.Future[list[JobResult]], _Chunk],
        until: str,
        watch: DeadWorkerWatch,
    ) -> set[cf.Future[list[JobResult]]]:
        """``cf.wait`` for ``until``, looking at the workers every ``_WATCH_EVERY``
        seconds meanwhile: a pool stuck on a dead worker's half-written results is
        made to read as broken, and its futures then complete."""
        while True:
            finished, running = cf.wait(pending, timeout=_WATCH_EVERY, return_when=until)
            if finished and (until == cf.FIRST_COMPLETED or not running):
                return finished
            if watch.stuck(self._pool):
                end_half_read_results(self._pool)

    def _timed_out(self, names: Sequence[str]) -> dict[str, str]:
        return take_markers(self._notes, names)

    def _restart(self) -> None:
        self._shutdown()
        self._pool, self._stopped = self._new_pool(), False

    def _shutdown(self) -> None:
        """Shut the pool down; then remove what its workers left in ``TMPDIR``: one
        stopped (Ctrl-C, SIGTERM) or ended by its time limit runs no cleanup."""
        self._pool.shutdown(wait=True, cancel_futures=not self._stopped)
        remove_scratch_of(self._pids)
        self._pids.clear()

    def _fill(
        self,
        pending: dict[cf.Future[list[JobResult]], _Chunk],
        chunks: Iterator[list[EpisodeJob]],
        retries: list[EpisodeJob],
    ) -> bool:
        """Submit work; False when the pool turned out broken (nothing is lost: an
        unsubmitted chunk's jobs go to ``retries``)."""
        if retries:
            if not pending:
                job = retries.pop()
                return self._submit(pending, _Chunk([job], alone=True), retries)
            return True
        # A bounded number of chunks in flight keeps memory flat on huge runs.
        while len(pending) < self.workers * 4 and (chunk := next(chunks, None)):
            if not self._submit(pending, _Chunk(chunk, alone=False), retries):
                return False
        return True

    def _submit(
        self,
        pending: dict[cf.Future[list[JobResult]], _Chunk],
        chunk: _Chunk,
        retries: list[EpisodeJob],
    ) -> bool:
        try:
            with interrupts_held():  # the pool starts its workers inside submit
                future = self._pool.submit(run_chunk, chunk.jobs)
            pending[future] = chunk
            self._pids.update(process.pid for process in workers_of(self._pool))
        except BrokenProcessPool:  # a worker died since the last wait
            retries.extend(chunk.jobs)
            return False
        return True

    def _stop_workers(self) -> None:
        # Waiting for running chunks could take minutes (or forever: a hung agent);
        # their episodes are not recorded, so a resume runs them again. Futures are not
        # cancelled first: Python 3.11's pool then fails setting their exception.
        # A worker ended while writing its results would leave the pool's manager
        # thread, and so close(), waiting forever for the rest of them.
        self._stopped = True
        end_half_read_results(self._pool)

    def close(self) -> None:
        try:
            self._shutdown()
        finally:
            self._scratch.cleanup()


def _start_worker(notes: str, parent: int) -> None:
    """Pool initializer: timeout notes go to ``notes``; the worker ends with ``parent``
    (killed with SIGKILL or SIGTERM, the parent cannot stop its workers itself)."""
    start_pool_worker(notes)
    end_with_parent(parent)


@dataclass(frozen=True)
class _Chunk:
    jobs: list[EpisodeJob]
    alone: bool
    """Run by itself after a worker died: if its worker dies too, this job killed it."""

    def lost(
        self, retries: list[EpisodeJob], timed_out: Callable[[Sequence[str]], dict[str, str]]
    ) -> Iterator[JobResult]:
        """The worker running this chunk died: a job whose time limit's watchdog ended
        it (``timed_out`` reads their notes) or the job that killed it is an error, any
        other is queued to run again, alone."""
        names = {marker_key(job.context.run_id, *job.key): job for job in self.jobs}
        notes = timed_out(list(names)) if any(j.context.episode_timeout for j in self.jobs) else {}
        for name, message in notes.items():
            job = names[name]
            yield JobResult(job.key[0], job.repeat, error=message)
        rest = [job for name, job in names.items() if name not in notes]
        if not self.alone:
            retries.extend(rest)
            return
        yield from _Chunk(rest, alone=True).failed(
            "the worker process running this episode died (os._exit, a signal or out of "
            "memory); a resume retries it"
        )

    def failed(self, reason: str) -> Iterator[JobResult]:
        """Every job of this chunk as not recorded, for ``reason``."""
        for job in self.jobs:
            yield JobResult(job.key[0], job.repeat, error=reason)


def _next(chunks: Iterator[list[EpisodeJob]], retries: list[EpisodeJob]) -> _Chunk | None:
    """The next task's chunk: a job to retry alone first, else the next planned chunk."""
    if retries:
        return _Chunk([retries.pop()], alone=True)
    jobs = next(chunks, None)
    return None if jobs is None else _Chunk(jobs, alone=False)


def make_executor(
    name: str | None = None, *, workers: int | None = None, address: str | None = None
) -> Executor:
    """An executor by name: ``inprocess``, ``process`` (``workers`` processes, default the
    CPU count) or ``ray`` (``address`` of a cluster, default a local one). Without a
    name: ``ray`` when an ``address`` is given, else ``inprocess``, or ``process`` when
    ``workers`` is more than 1."""
    # ``is None`` rather than ``or``: --workers 0 is a mistake to report, not a default.
    if workers is not None and (type(workers) is not int or workers < 1):
        raise InputError(f"workers must be a positive integer, got {workers!r}")
    if name is None and address is not None:
        # An address is a Ray cluster's: it used to be ignored, the run going in-process.
        name = "ray"
    if address is not None and name in ("inprocess", "process"):
        # Ignored too, with the executor named: the run went here, not to the cluster.
        raise InputError(
            f"--address names a Ray cluster, but the {name} executor runs episodes on this "
            f"machine: drop --address, or use --executor ray --address {shlex.quote(address)}"
        )
    if name is None:
        name = "inprocess" if workers in (None, 1) else "process"
    if name == "inprocess":
        if workers not in (None, 1):
            # Asked for by name, it must not quietly become a pool of processes.
            raise InputError(
                f"the inprocess executor runs one episode at a time, not {workers} workers: "
                f"drop --workers, or use --executor process --workers {workers}"
            )
        return InProcessExecutor()
    if name == "process":
        return ProcessPoolExecutor(workers if workers is not None else os.cpu_count() or 1)
    if name == "ray":
        from onrecord.runner._ray import RayExecutor  # _ray builds on this module

        return RayExecutor(address, workers=workers)
    raise InputError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
