"""The per-episode time limit (``episode_timeout``).

An episode (run and grade: one ``run_job``) still going when its limit expires is
stopped and not recorded. On the main thread of the process running it, a one-shot
``SIGALRM`` raises ``EpisodeTimeout`` where the episode is: a ``BaseException``, so an
agent's ``except Exception:`` cannot swallow it, and environments close on the way out
as for Ctrl-C. The previous SIGALRM handler and timer are put back after every episode.

Code a signal cannot stop (stuck in C, or catching ``BaseException`` and carrying on)
is ended with its process, in worker processes only (process pool, Ray), never in the
user's own: a watchdog thread ends the worker ``os._exit`` after a grace period, first
leaving a note (a file for the pool, an actor of the run for Ray) so that the parent
reports a timeout rather than a dead worker.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from onrecord._async import suspended_frame
from onrecord.errors import InputError

__all__ = [
    "EpisodeTimeout",
    "TimedOut",
    "check_timeout",
    "marker_key",
    "parse_timeout",
    "refuse_unenforceable",
    "run_limited",
    "start_pool_worker",
    "start_worker",
    "take_markers",
]

T = TypeVar("T")

MAX_TIMEOUT = 1e9
"""Largest limit (about 31 years): longer is no limit, and thread waits overflow."""
RAISE_AGAIN = 0.005
"""Seconds after which a timeout Python swallowed (``_Alarm.swallowed``) is raised again."""
EXIT_TIMED_OUT = 124
"""Exit status of a worker the watchdog ended (as the ``timeout`` command's)."""
_PREFIX = "timed out: "


class EpisodeTimeout(BaseException):
    """Raised inside an episode that ran past its time limit."""


@dataclass(frozen=True)
class TimedOut:
    """An episode stopped by its time limit: why, for the run's errors."""

    message: str


def check_timeout(value: Any, where: str = "episode_timeout") -> float | None:
    """``value`` as a limit in seconds (None: no limit); anything else is bad input."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            f"{where} must be a number of seconds, e.g. 300 or 2.5, got {value!r}; "
            "leave it out for no limit"
        )
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise InputError(
            f"{where} must be a positive, finite number of seconds (at most {MAX_TIMEOUT:g}), "
            f"got {value!r}; leave it out for no limit"
        )
    return float(value)


def parse_timeout(text: str | None, where: str) -> float | None:
    """A limit written on the command line (None: not given)."""
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        raise InputError(
            f"{where} must be a number of seconds, e.g. 300 or 2.5, got {text!r}"
        ) from None
    return check_timeout(number, where)


def refuse_unenforceable(limit: float | None) -> None:
    """Refuse a limit that episodes run in this process cannot keep: the signal that
    stops them needs ``setitimer`` and the main thread (a watchdog would end the user's
    own process)."""
    if limit is not None and (why := _no_signal()) is not None:
        raise InputError(why)


def _no_signal() -> str | None:
    """Why the signal cannot stop an episode run here (None: it can)."""
    if not hasattr(signal, "setitimer"):
        return (
            "episode_timeout needs signal.setitimer, which this platform lacks, to stop an "
            "episode run in this process: use the process executor (--executor process)"
        )
    if threading.current_thread() is not threading.main_thread():
        return (
            "episode_timeout stops an episode run in this process with a signal, which "
            "only the main thread receives: start the run from the main thread, or use "
            "a process pool (ProcessPoolExecutor, --executor process) or Ray"
        )
    return None


def grace(limit: float) -> float:
    """How long a worker's episode has, after the signal, to stop before its worker is
    ended (time to close its environment)."""
    return min(max(limit / 2, 1.0), 30.0)


def run_limited(limit: float, run: Callable[[], T], key: str) -> T | TimedOut:
    """``run()`` under the limit: its result, or ``TimedOut`` if the limit expired
    (then anything it returned is discarded). ``key`` names the job for the watchdog."""
    watchdog = _WORKER.watchdog() if _WORKER is not None else None
    if (why := _no_signal()) is not None:
        if watchdog is None:  # the user's own process: never ended by a watchdog
            raise InputError(why)
        # A worker not running jobs on its main thread: only the watchdog remains.
        watchdog.watch(key, limit, limit, "it did not run on its worker's main thread")
        try:
            return run()
        finally:
            watchdog.clear()
    if watchdog is not None:
        watchdog.watch(key, limit, limit + grace(limit), "")
    try:
        return _with_alarm(limit, run)
    finally:
        if watchdog is not None:
            watchdog.clear()


class _Alarm:
    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.armed = False
        self.where: str | None = None
        self.between = False
        """The signal came between the episode's return and the disarming."""
        self.over = False
        """The episode ended: nothing to raise again."""

    def swallowed(self, unraisable: Any) -> bool:
        """Whether ``unraisable`` is the timeout, raised where Python cannot propagate it
        (a garbage-collector callback, a ``__del__``): then it is raised again shortly,
        where the episode runs. Found in CI: a long collection in a big process ended in
        a callback, where the signal was ignored, and the episode ran on."""
        if not isinstance(unraisable.exc_value, EpisodeTimeout) or self.over:
            return False
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, RAISE_AGAIN)
        return True

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if not self.armed:  # the episode ended as the signal came: nothing to stop
            return
        self.armed = False  # one-shot: cleanup after the first stop is not interrupted
        # An async agent awaiting (an LLM call that never answers) is named at its await,
        # not at the event loop's selector where the signal found the thread.
        self.where = _place(suspended_frame() or frame)
        self.between = frame is not None and frame.f_code is _with_alarm.__code__
        raise EpisodeTimeout(f"the episode exceeded its time limit of {self.limit:g} s")


def _with_alarm(limit: float, run: Callable[[], T]) -> T | TimedOut:
    alarm = _Alarm(limit)
    outer = signal.getitimer(signal.ITIMER_REAL)  # someone else's timer: re-armed after
    previous = signal.getsignal(signal.SIGALRM)
    hook = sys.unraisablehook
    started = time.monotonic()
    returned: list[T] = []

    def unraisable(unraisable: Any) -> None:
        if not alarm.swallowed(unraisable):
            hook(unraisable)

    try:
        signal.signal(signal.SIGALRM, alarm.handler)
        sys.unraisablehook = unraisable
        alarm.armed = True
        signal.setitimer(signal.ITIMER_REAL, limit)
        returned.append(run())
        alarm.armed = False
    except EpisodeTimeout:
        pass
    finally:
        alarm.armed = False
        alarm.over = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.unraisablehook = hook
        # None: a handler not set from Python; the default is the closest Python can do.
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if outer[0] > 0:  # delayed by the episode if it was due during it, never lost
            left = outer[0] - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), outer[1])
    if alarm.where is None or (returned and alarm.between):  # finished, just in time
        return returned[0]
    return TimedOut(stopped(limit, alarm.where, caught=bool(returned)))


def stopped(limit: float, where: str, *, caught: bool = False) -> str:
    """The error of an episode the signal stopped (``caught``: it caught the timeout,
    went on and returned; what it returned is not recorded)."""
    if caught:
        return (
            f"{_PREFIX}the episode exceeded its time limit of {limit:g} s (at {where}); it "
            "caught the timeout and went on, so what it returned was discarded; a resume "
            "retries it"
        )
    return (
        f"{_PREFIX}the episode exceeded its time limit of {limit:g} s and was stopped "
        f"(stuck at {where}); a resume retries it"
    )


def _place(frame: FrameType | None) -> str:
    if frame is None:
        return "an unknown line"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


# -- worker processes ----------------------------------------------------------------


@dataclass
class _WorkerState:
    notify: Callable[[str, str], None]
    started: _Watchdog | None = None

    def watchdog(self) -> _Watchdog:
        """The watchdog thread, started by the first episode that has a limit."""
        if self.started is None:
            self.started = _Watchdog()
        return self.started


_WORKER: _WorkerState | None = None
"""Set in worker processes only: the user's own process is never ended."""


def start_worker(notify: Callable[[str, str], None]) -> None:
    """Mark this process as a worker: a watchdog may end it, after ``notify(key,
    message)`` left word of the timeout for the parent."""
    global _WORKER
    if _WORKER is None:
        _WORKER = _WorkerState(notify)
    else:
        _WORKER.notify = notify


def start_pool_worker(directory: str) -> None:
    """Process-pool initializer: timeout notes are files in ``directory``."""

    def note(key: str, message: str) -> None:
        Path(directory, key).write_text(message, encoding="utf-8")

    start_worker(note)


def marker_key(run_id: str, case_id: str, repeat: int) -> str:
    """The name of a job's timeout note."""
    return hashlib.sha256(f"{run_id}\0{case_id}\0{repeat}".encode()).hexdigest()[:32]


def take_markers(directory: str, keys: Iterable[str]) -> dict[str, str]:
    """The notes a process pool's ended workers left for ``keys`` (removed once read)."""
    found = {}
    for key in keys:
        path = Path(directory, key)
        try:
            found[key] = path.read_text(encoding="utf-8")
            path.unlink()
        except OSError:
            continue
    return found


class _Watchdog:
    """A thread that ends this worker process when an episode overruns its deadline."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._job: tuple[str, float, float, str, int] | None = None
        threading.Thread(target=self._watch, name="onrecord-episode-watchdog", daemon=True).start()

    def watch(self, key: str, limit: float, after: float, why: str) -> None:
        with self._changed:
            self._job = (key, limit, time.monotonic() + after, why, threading.get_ident())
            self._changed.notify()

    def clear(self) -> None:
        with self._changed:
            self._job = None
            self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while True:
                job = self._job
                if job is None:
                    self._changed.wait()
                    continue
                left = job[2] - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                self._end(job)

    def _end(self, job: tuple[str, float, float, str, int]) -> None:
        key, limit, _, why, thread = job
        where = _place(sys._current_frames().get(thread))
        if why:
            reason = f"(stuck at {where}); {why}, where a signal could stop it"
        else:
            reason = (
                f"and did not stop within {grace(limit):g} s of being told to (stuck at "
                f"{where}: in code a signal cannot interrupt, or catching BaseException)"
            )
        message = (
            f"{_PREFIX}the episode exceeded its time limit of {limit:g} s {reason}, so its "
            "worker process was ended; a resume retries it"
        )
        state = _WORKER
        try:
            if state is not None:
                state.notify(key, message)
        finally:
            os._exit(EXIT_TIMED_OUT)
