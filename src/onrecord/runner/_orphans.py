"""A process-pool worker ends when the ``onrecord`` process that started it is gone.

Only a Ctrl-C (or an error) lets the parent stop its workers itself. Killed outright —
``SIGKILL``, the out-of-memory killer, or the ``SIGTERM`` a CI job's cancel or
``docker stop`` sends, whose default action ends Python with no cleanup — it left them
behind: reparented, blocked for ever on the pool's queue (or still running a hung
agent), holding memory and CPU on the CI machine long after the job, and nothing of
what they might still finish can reach the run directory anyway.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["EXIT_ORPHANED", "end_with_parent"]

EXIT_ORPHANED = 75
"""Exit status of a worker that ended because its parent was gone."""

_POLL = 0.5
"""Seconds between looks at the parent: a worker outlives its parent by at most this."""


def end_with_parent(parent: int) -> None:
    """Start a thread that ends this process once ``parent`` is no longer its parent
    (a dead process's children are reparented, so the parent pid changes). A thread,
    not a signal: it also ends a worker stuck in C code or ignoring signals."""
    if os.getppid() != parent:  # the parent died while this worker was starting
        os._exit(EXIT_ORPHANED)
    threading.Thread(
        target=_watch, args=(parent,), name="onrecord-parent-watch", daemon=True
    ).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL)
    os._exit(EXIT_ORPHANED)
