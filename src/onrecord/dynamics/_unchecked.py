"""The coordinates a world-model report never checks, as its readers print them.

``forecast_case_result`` given tolerances for some coordinates only records the others
as ``unchecked_coordinates`` in each trial's settings, hence in the report's lock. The
lock alone is not what a reviewer reads: ``onrecord show``, ``gate`` (its terminal and
Markdown summaries) and the HTML page said nothing, so a gate on ``dynamics/*/h1``
accepted Pendulum with theta_dot never compared and no line saying so. Each of them
prints the line made here; a report without such coordinates gets none.

Kept free of numpy and the simulators: the commands that only read records import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LABEL", "unchecked_coordinates", "unchecked_line"]

LABEL = "unchecked coordinates"


def unchecked_coordinates(lock: Mapping[str, Any]) -> list[str]:
    """Every coordinate some environment of ``lock`` lists as unchecked, once, in the
    order the environments list them."""
    names: list[str] = []
    for environment in lock.get("environments") or ():
        if not isinstance(environment, Mapping):
            continue
        listed = environment.get("unchecked_coordinates")
        # A trial built by hand may hold anything under this key: shown as text, never
        # a reason to refuse a report that loaded and verified.
        items = listed if isinstance(listed, list) else [] if listed is None else [listed]
        for name in map(str, items):
            if name not in names:
                names.append(name)
    return names


def unchecked_line(lock: Mapping[str, Any]) -> str | None:
    """``unchecked coordinates: theta_dot (no tolerance)``, or None when every
    coordinate of every forecast environment is checked (or the report has none)."""
    names = unchecked_coordinates(lock)
    return f"{LABEL}: {', '.join(names)} (no tolerance)" if names else None
