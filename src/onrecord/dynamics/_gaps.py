"""Why a state of the reference is not observed.

A reference state the observer could not give as one real number per coordinate (it
raised, returned a vector of another length, lacked the state key, held text) leaves
its horizon *not measured*. The forecast keeps the reason for each such step, so a
check scored on fewer horizons than asked names the step and the cause instead of a
bare "not observed" (the episode alone knew, and only when the observer raised).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord.dynamics._protocol import state_vector

__all__ = ["unobserved_steps"]


def unobserved_steps(
    episode: Any, state_key: str, dim: int, truth: list[list[float] | None]
) -> list[dict[str, Any]]:
    """One ``{"step", "reason"}`` per executed action whose state is missing from
    ``truth``; ``step`` counts actions from 1, so it is the horizon that state scores."""
    missing = [position for position, row in enumerate(truth) if row is None]
    if not missing:
        return []
    transitions = episode.transitions()
    failed = _observer_failures(episode)
    return [
        {
            "step": position + 1,
            "reason": _reason(transitions[position], failed, state_key, dim),
        }
        for position in missing
    ]


def _observer_failures(episode: Any) -> dict[int, str]:
    """The observer's error message by step attempt index (the reads after each step:
    the read after reset has index 0 too)."""
    return {
        int(f["index"]): str(f["message"])
        for f in episode.failures()
        if f["phase"] == "observe" and f["read"] == "after_step"
    }


def _reason(transition: Mapping[str, Any], failed: dict[int, str], key: str, dim: int) -> str:
    observed = transition["state"]
    if observed is None and transition["index"] in failed:
        return f"the observer failed: {failed[transition['index']]}"
    if isinstance(observed, Mapping):
        if key not in observed:
            return f"the observer's output has no {key!r} (its keys: {sorted(map(str, observed))})"
        value = observed[key]
        where = f"the observer's {key!r}"
    else:
        value, where = observed, "the observer's state"
    vector = state_vector(value, key)
    if vector is not None and len(vector) != dim:
        count = f"{len(vector)} number" + ("" if len(vector) == 1 else "s")
        return f"{where} holds {count}, but {dim} coordinates are declared"
    return f"{where} is not a list of {dim} real numbers: {value!r:.60}"
