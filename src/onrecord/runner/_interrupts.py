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
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

__all__ = [
    "NotedInterrupts",
    "interrupt_reports_quiet",
    "interrupts_held",
    "interrupts_kept",
    "raise_noted_interrupt",
    "terminations_interrupt",
]


class NotedInterrupts:
    """Python's SIGINT handler that also notes the interrupt until one guard passes it
    on as ``KeyboardInterrupt`` (``pending``). Guards nest by sharing the one
    installed: an inner guard acts on leaving its block, and an outer one does not
    raise the same interrupt a second time."""

    def __init__(self) -> None:
        self.pending = False

    def __call__(self, number: int, frame: FrameType | None) -> None:
        self.pending = True
        signal.default_int_handler(number, frame)


@contextlib.contextmanager
def interrupts_kept() -> Iterator[NotedInterrupts | None]:
    """Run the block with SIGINT handled as before, but noted: if one came and the block
    went on (it returned, or raised something else), ``KeyboardInterrupt`` is raised on
    leaving it, so what the block produced is never used. Only with Python's own
    handler (a handler of the caller's may mean Ctrl-C to do something else) and on the
    main thread (a Python handler runs nowhere else). Yields the noting handler (None
    when inactive); a caller that reported the interrupt itself clears its
    ``pending``."""
    previous = signal.getsignal(signal.SIGINT)
    outer = previous if isinstance(previous, NotedInterrupts) else None
    if threading.current_thread() is not threading.main_thread() or (
        outer is None and previous is not signal.default_int_handler
    ):
        yield None
        return
    noting = outer or NotedInterrupts()
    if outer is None:
        signal.signal(signal.SIGINT, noting)
    try:
        yield noting
    except KeyboardInterrupt:
        noting.pending = False  # passed on
        raise
    except BaseException as exc:
        if noting.pending:  # what it raised is what the swallowed interrupt made of it
            noting.pending = False
            raise KeyboardInterrupt from exc
        raise
    finally:
        if outer is None:
            signal.signal(signal.SIGINT, previous)
    if noting.pending:
        noting.pending = False
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_reports_quiet() -> Iterator[None]:
    """Within the block, Python does not print its "Exception ignored in: ...
    KeyboardInterrupt" report (with a traceback) when a Ctrl-C lands in a weakref
    callback or ``__del__`` while an ``interrupts_kept`` guard notes it: the command
    ends as interrupted, and the report is noise under its output. Other unraisable
    exceptions, and this one where no guard notes it, are reported as before."""
    previous = sys.unraisablehook

    def hook(report: UnraisableHookArgs) -> None:
        noted = isinstance(signal.getsignal(signal.SIGINT), NotedInterrupts)
        if not (noted and report.exc_type and issubclass(report.exc_type, KeyboardInterrupt)):
            previous(report)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def raise_noted_interrupt() -> None:
    """Raise, here, a Ctrl-C a guard noted and something swallowed: called where the
    caller can stop cleanly (a run, after recording each episode), so the interrupt
    ends it there and not only when the guard's block ends."""
    handler = signal.getsignal(signal.SIGINT)
    if isinstance(handler, NotedInterrupts) and handler.pending:
        handler.pending = False
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


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C back while the pool may start worker processes. A worker inherits the
    signal mask, so it never takes a Ctrl-C meant for onrecord (the terminal sends it to
    the whole process group): one that landed while a worker was still importing printed
    that worker's traceback under the run's "interrupted" line. The parent stops its
    workers itself; the held signal reaches it as soon as the pool has started them.

    The mask holds the signal back from this thread only: another thread (the pool's
    manager, a progress display) still takes it, and Python then raises
    KeyboardInterrupt here, possibly between starting a worker and sending it its
    start-up data, which the worker reported as a traceback ("EOFError: Ran out of
    input"). So the main thread's handler is deferred too, and run once the pool has
    started its workers."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    with _handler_deferred():
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextlib.contextmanager
def _handler_deferred() -> Iterator[None]:
    """Note a SIGINT instead of handling it; handle it on leaving (main thread only: a
    handler runs nowhere else, so work in other threads is never interrupted)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    noted: list[int] = []
    signal.signal(signal.SIGINT, lambda number, _frame: noted.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if noted:
            signal.raise_signal(signal.SIGINT)
