"""The providers a process keeps between episodes, a few at most.

A provider may hold an expensive template (a snapshot database every episode copies),
so it is built once per process and reused by every episode of a run, and by a later run
of the same environment, agent and checks. Kept as they were, the providers of earlier
runs piled up in a process that runs many (a notebook or script evaluating agent after
agent in-process), each holding its open files (a tool world's database, journal and
scratch directory): five runs of the remittance domain exhausted ``ulimit -n 1024``.

So a provider another run moves on from is released (``EnvironmentProvider.release``:
its files closed, its templates kept), and only the ``capacity`` most recently used are
kept at all; an older one is closed. A provider an episode is using right now (two runs
in two threads) is neither, until that episode ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from onrecord.episode import OutcomeCheck
from onrecord.runner._provider import EnvironmentProvider

__all__ = ["ProviderCache", "Resolved"]

Resolved = tuple[EnvironmentProvider, Any, list[OutcomeCheck]]
"""A provider, the agent built for it, and the checks its episodes are graded with."""


class ProviderCache:
    """Providers by key, the ``capacity`` most recently used kept (in-use ones always):
    an episode runs as ``with cache.tidied(key): ... with cache.using(key, build)``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, Resolved] = OrderedDict()
        self._busy: Counter[str] = Counter()
        self._released: set[str] = set()
        """Keys released since last used (released once, not before every episode)."""
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, build: Callable[[], Resolved]) -> Resolved:
        """The entry of ``key``, built by ``build()`` if not kept (then kept)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            # Built under the lock: two threads of one run must not build the same
            # provider twice (one would leak); building is rare. Closing the ones beyond
            # capacity is left to ``tidied``.
            self._entries[key] = entry = build()
            return entry

    @contextlib.contextmanager
    def tidied(self, key: str) -> Iterator[None]:
        """Around an episode of ``key``'s provider, outside its time limit: before it, the
        idle providers of other runs are released (each once until used again); after
        it, the oldest idle ones beyond ``capacity`` are closed. Closing another run's
        worlds is no episode's time: inside the limit it timed out a quick episode of
        the next run (found under load, in an in-process run with a 0.3 s limit)."""
        with self._lock:
            self._release_others(key)
        try:
            yield
        finally:
            with self._lock:
                self._trim()

    @contextlib.contextmanager
    def using(self, key: str, build: Callable[[], Resolved]) -> Iterator[Resolved]:
        """The entry of ``key``, never released or closed while the block runs."""
        with self._lock:
            entry = self.get(key, build)
            self._busy[key] += 1
            self._released.discard(key)
        try:
            yield entry
        finally:
            with self._lock:
                self._busy[key] -= 1
                if not self._busy[key]:
                    del self._busy[key]

    def forget(self, key: str) -> None:
        """Drop and close the entry of ``key`` (rebuilt when next asked for)."""
        with self._lock:
            entry = self._entries.pop(key, None)
            self._released.discard(key)
        if entry is not None:
            _quietly(entry[0].close)

    def _release_others(self, key: str) -> None:
        for other, entry in self._entries.items():
            if other != key and not self._busy[other] and other not in self._released:
                self._released.add(other)
                _quietly(entry[0].release)

    def _trim(self) -> None:
        idle = [key for key in self._entries if not self._busy[key]]
        # Oldest first, the most recently used always kept.
        for key in idle[: max(len(self._entries) - self.capacity, 0)]:
            if key != next(reversed(self._entries)):
                self._released.discard(key)
                _quietly(self._entries.pop(key)[0].close)


def _quietly(close: Callable[[], None]) -> None:
    # A world left mid-call (stopped by a timeout) may refuse to close: dropped anyway.
    with contextlib.suppress(Exception):
        close()
