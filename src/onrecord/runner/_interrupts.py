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

__all__ = ["interrupts_kept"]


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
