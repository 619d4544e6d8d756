"""A process pool whose worker died while writing a chunk's results.

``concurrent.futures.ProcessPoolExecutor`` reads each result whole: a worker killed in
the middle of writing one (Ctrl-C's stop, the out-of-memory killer, ``kill -9``) leaves
half a message in the result pipe, and the pool's manager thread waits for the rest
forever. Nothing else in the pool moves after that: Ctrl-C hung the run in
``shutdown()`` (about one time in five with two workers), and a worker killed that way
mid-run hung it for good, the dead worker never noticed.

The rest of the message can only end with end-of-file, once no process holds the pipe's
write end open: a dead worker's end is closed by the kernel, the other workers are
terminated, and this process closes its own. The manager thread then reads the pool as
broken, as it does for any dead worker, and the run's existing path takes over (every
chunk in flight runs again, alone).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import time
from typing import Any

__all__ = ["DeadWorkerWatch", "end_half_read_results", "workers_of"]

GRACE = 3.0
"""Seconds a worker may be dead before the pool is taken to be stuck on its half a
message: the manager thread notices a worker's death within milliseconds otherwise."""


def workers_of(pool: cf.ProcessPoolExecutor) -> list[Any]:
    """The worker processes of ``pool`` (a private attribute: absent, none)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def end_half_read_results(pool: cf.ProcessPoolExecutor) -> None:
    """Terminate the workers and close this process's write end of the result pipe, so a
    read waiting for the rest of a message ends (see the module's docstring)."""
    for process in workers_of(pool):
        process.terminate()
    writer: Any = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        with contextlib.suppress(OSError):  # already closed by a shutdown
            writer.close()


class DeadWorkerWatch:
    """Notices a pool that has had a dead worker for ``GRACE`` seconds without reading
    itself as broken: its manager thread is stuck on that worker's half a message."""

    def __init__(self, grace: float = GRACE) -> None:
        self.grace = grace
        self._since: float | None = None

    def stuck(self, pool: cf.ProcessPoolExecutor) -> bool:
        dead = any(process.exitcode is not None for process in workers_of(pool))
        if not dead or getattr(pool, "_broken", False):
            self._since = None
            return False
        now = time.monotonic()
        if self._since is None:
            self._since = now
        return now - self._since >= self.grace
