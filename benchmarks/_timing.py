"""Shared timing helper: best-of-N wall time, robust on a noisy machine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def best_time(function: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """The fastest of ``repeat`` runs of ``number`` calls, in seconds per call."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            function()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def best_times_interleaved(
    functions: Sequence[Callable[[], object]], *, rounds: int = 41
) -> list[float]:
    """The fastest run of each function, timed in rounds that run every function once,
    so a noisy spell on the machine slows all of them rather than just one."""
    best = [float("inf")] * len(functions)
    for _ in range(rounds):
        for index, function in enumerate(functions):
            start = time.perf_counter()
            function()
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def row(name: str, value: str, target: str, ok: bool) -> str:
    """One printed line: figure, target and whether it is met."""
    return f"{name:<58} {value:>16}   target {target:<14} {'OK' if ok else 'MISSED'}"
