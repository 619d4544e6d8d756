"""The values of one step as the recorder reads them: what was wrong with a result, a
flag, and a detached copy of a value kept for the record."""

from __future__ import annotations

from typing import Any

import numpy as np

from onrecord._exceptions import describe

__all__ = ["is_flag", "result_problem", "snapshot"]


def result_problem(result: Any, exc: Exception) -> str:
    """What was wrong with a step's result, for the error recorded in its place."""
    if result is None:
        return "None"
    if not isinstance(result, tuple):
        return f"a {type(result).__name__}"
    if len(result) != 5:
        return f"a tuple of {len(result)}"
    return f"a result whose parts could not be read ({describe(exc)})"


def is_flag(value: Any) -> bool:
    """A bool, a NumPy bool, or an int 0 or 1 (what older environments return)."""
    if type(value) is bool or isinstance(value, np.bool_):
        return True
    return isinstance(value, int | np.integer) and value in (0, 1)


def snapshot(value: Any) -> Any:
    """Detach a native value so later in-place changes by the environment or the agent
    cannot rewrite history."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, list | tuple):  # Tuple spaces' samples, actions given as lists
        if type(value) in (list, tuple):
            return type(value)(map(snapshot, value))
        if isinstance(value, tuple) and hasattr(value, "_make"):  # Graph's GraphInstance
            return value._make(map(snapshot, value))
    return value
