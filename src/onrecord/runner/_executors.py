"""Where episodes run: in this process, in a local process pool, or on a Ray cluster.

Every executor takes the same jobs and yields the same results (as they complete); each
job builds its own environment inside the worker, so nothing is shared between episodes
or workers except the read-only provider template each worker builds for itself.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from typing import Any

from onrecord.errors import InputError
from onrecord.runner._job import EpisodeJob, JobResult, run_chunk

__all__ = [
    "EXECUTORS",
    "Executor",
    "InProcessExecutor",
    "ProcessPoolExecutor",
    "RayExecutor",
    "make_executor",
]

EXECUTORS = ("inprocess", "process", "ray")


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

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcessExecutor(Executor):
    """One episode after another, in this process (the default; easiest to debug)."""

    name = "inprocess"

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        for job in jobs:
            yield from run_chunk([job])


class ProcessPoolExecutor(Executor):
    """A pool of ``workers`` local processes (started with ``spawn``: no inherited state)."""

    name = "process"

    def __init__(self, workers: int, *, chunk_size: int | None = None) -> None:
        if type(workers) is not int or workers < 1:
            raise InputError(f"workers must be a positive integer, got {workers!r}")
        self.workers = workers
        self.chunk_size = chunk_size
        self._pool = cf.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn")
        )

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        chunks = iter(_chunks(jobs, self.workers, self.chunk_size))
        pending: set[cf.Future[list[JobResult]]] = set()
        try:
            while True:
                # A bounded number of chunks in flight keeps memory flat on huge runs.
                while len(pending) < self.workers * 4 and (chunk := next(chunks, None)):
                    pending.add(self._pool.submit(run_chunk, chunk))
                if not pending:
                    return
                finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for future in finished:
                    yield from future.result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor):
    """Ray tasks on a local or remote cluster (``pip install 'onrecord[ray]'``)."""

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
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env=runtime_env,
            )
        cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
        self.workers = workers or max(1, int(cpus))
        self.chunk_size = chunk_size
        self._remote = ray.remote(num_cpus=1)(run_chunk)

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        ray = self._ray
        chunks = iter(_chunks(jobs, self.workers, self.chunk_size))
        pending: list[Any] = []
        try:
            while True:
                while len(pending) < self.workers * 4 and (chunk := next(chunks, None)):
                    pending.append(self._remote.remote(chunk))
                if not pending:
                    return
                finished, pending = ray.wait(pending, num_returns=1)
                for ref in finished:
                    yield from ray.get(ref)
        finally:
            for ref in pending:
                ray.cancel(ref)

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(
    name: str = "inprocess", *, workers: int | None = None, address: str | None = None
) -> Executor:
    """An executor by name: ``inprocess``, ``process`` (``workers`` processes, default the
    CPU count) or ``ray`` (``address`` of a cluster, default a local one)."""
    if name == "inprocess":
        if workers not in (None, 1):
            return ProcessPoolExecutor(int(workers or 1))
        return InProcessExecutor()
    if name == "process":
        return ProcessPoolExecutor(workers or os.cpu_count() or 1)
    if name == "ray":
        return RayExecutor(address, workers=workers)
    raise InputError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
