"""Shared timing helper: best-of-N wall time, robust on a noisy machine."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(function: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """The fastest of ``repeat`` runs of ``number`` calls, in seconds per call."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            function()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def row(name: str, value: str, target: str, ok: bool) -> str:
    """One printed line: figure, target and whether it is met."""
    return f"{name:<58} {value:>16}   target {target:<14} {'OK' if ok else 'MISSED'}"
