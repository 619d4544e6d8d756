"""A Ctrl-C that code running in onrecord's own process swallowed is not lost.

The Python handler of SIGINT raises ``KeyboardInterrupt`` wherever the main thread is,
and some places turn it into something else: ``sqlite3`` reports an exception raised in
an authorizer or an SQL function (the environment kit's statement guard is both) as the
statement being "not authorized", and an agent may catch ``BaseException``. The
interrupt was then gone: planning failed with a bogus ``DatabaseError`` (exit 3), a
resume refused the run, a re-grading read it as an edited directory, or the run went on
and recorded an episode whose tool calls had failed because of the Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["interrupts_kept", "terminations_interrupt"]


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Run the block with SIGINT handled as before, but noted: if one came and the block
    went on (it returned, or raised something else), ``KeyboardInterrupt`` is raised on
    leaving it, so what the block produced is never used. Only with Python's own
    handler (a handler of the caller's may mean Ctrl-C to do something else) and on the
    main thread (a Python handler runs nowhere else)."""
    previous = signal.getsignal(signal.SIGINT)
    if (
        threading.current_thread() is not threading.main_thread()
        or previous is not signal.default_int_handler
    ):
        yield
        return
    noted: list[int] = []

    def handler(number: int, frame: FrameType | None) -> None:
        noted.append(number)
        signal.default_int_handler(number, frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        if noted:  # what it raised is what the swallowed interrupt made of it
            raise KeyboardInterrupt from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if noted:
        raise KeyboardInterrupt


@contextlib.contextmanager
def terminations_interrupt() -> Iterator[None]:
    """Run the block with SIGTERM taken as Ctrl-C. A cancelled CI job, ``timeout`` or
    ``docker stop`` sends SIGTERM, whose default ends Python at once: the episodes
    finished in the last commit interval were lost, process-pool workers were left
    running, and the job exited 143 with no word of how to continue. As Ctrl-C, the
    run saves what finished, stops its workers and exits 130. Only where SIGTERM has
    its default action (a handler of the caller's is theirs) and on the main thread."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def handler(number: int, frame: FrameType | None) -> None:
        # Whatever handles Ctrl-C right now (noted, deferred while workers start): the
        # same path. A SIGINT the caller ignores must not make SIGTERM ignored too.
        current = signal.getsignal(signal.SIGINT)
        (current if callable(current) else signal.default_int_handler)(signal.SIGINT, frame)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
