"""Whether an action may be sent to the environment, and why not when it may not.

An action is sent only if its space contains it *and* the record can hold it: an action
the environment ran but JSON cannot store would fail the episode's sealing and lose every
step, where an invalid action refused before execution loses nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from onrecord._canonical import to_portable
from onrecord._exceptions import json_text, shown_repr
from onrecord.errors import PortabilityError

__all__ = ["fast_contains", "invalid_action_message", "why_not_in"]

_TOP = "action"  # the path of the whole action in a refusal


def fast_contains(space: spaces.Space[Any] | None, action: Any) -> bool:
    """``space.contains`` with a shortcut for plain ints in ``Discrete`` spaces, and
    only for actions the record can hold (see ``_storable``)."""
    if space is None:
        return True
    if type(action) is int and type(space) is spaces.Discrete:
        start = int(space.start)
        return start <= action < start + int(space.n)
    try:
        return bool(space.contains(action)) and _storable(space, action)
    except Exception:  # a malformed action can make contains() itself fail
        return False


def _storable(space: spaces.Space[Any], action: Any) -> bool:
    """Whether every part of ``action``, which ``space`` contains, can be recorded.
    ``Box.contains`` converts with the Box's dtype, and anything converts to bool:
    ``object()`` was "in" ``Box(0, 1, (), bool)``; an unbounded Box contains an
    infinity, in a Tuple, a Dict, a OneOf, a Sequence or a Graph's nodes alike; and a
    Text whose charset holds a lone surrogate contains a string UTF-8 JSON cannot hold.
    Each was sent to the environment, and the episode then failed to seal, losing every
    step, instead of recording an invalid action. A masked array passes ``contains`` on
    its data alone, and is refused for the same reason."""
    if isinstance(action, np.ma.MaskedArray):
        return False
    if isinstance(space, spaces.Box):
        array = np.asarray(action)
        kind = array.dtype.kind
        if kind in "biu":
            return True
        return (
            kind == "f"
            and bool(np.isfinite(array).all())
            # a longdouble Box: a double may round its values
            and (array.dtype.itemsize <= 8 or _portable(array))
        )
    if isinstance(space, spaces.Tuple):
        return all(map(_storable, space.spaces, action))
    if isinstance(space, spaces.Dict):
        return all(_storable(space[key], action[key]) for key in space.spaces)
    if isinstance(space, spaces.OneOf):
        return _storable(space.spaces[int(action[0])], action[1])
    if isinstance(space, spaces.Sequence):
        if space.stack:
            return _storable(space.stacked_feature_space, action)
        return all(_storable(space.feature_space, item) for item in action)
    if isinstance(space, spaces.Graph):
        return _storable(space.node_space, action.nodes) and (
            space.edge_space is None
            or action.edges is None
            or _storable(space.edge_space, action.edges)
        )
    if isinstance(space, spaces.Text):
        return action.isascii() or _portable(action)
    return True


def _portable(value: Any) -> bool:
    return _unportable(value, _TOP) is None


def _unportable(value: Any, path: str) -> str | None:
    """Why the record cannot hold ``value``, named by its path, or None."""
    try:
        to_portable(value, path)
    except PortabilityError as exc:
        return str(exc)
    except Exception:  # e.g. a RecursionError: a list that contains itself
        return f"{path} cannot be stored"
    return None


def invalid_action_message(space: spaces.Space[Any] | None, action: Any) -> str:
    """The refusal of an action outside ``space``: what it was, why, and the fix."""
    shown = shown_repr(action, 200)  # a refusal is recorded: no addresses in it
    reason = why_not_in(space, action)
    # The space's repr as text JSON can hold: a Text charset may hold a lone surrogate.
    return json_text(
        f"action {shown} is not in the action space {space}"
        f"{': ' + reason if reason else ''}; it was refused before execution"
    )


def why_not_in(space: spaces.Space[Any] | None, action: Any) -> str:
    """Why ``fast_contains`` refused ``action``, and the fix, for the refusal message
    (an empty string when the space gives no more detail than its repr). In a Dict,
    Tuple, OneOf, Sequence or Graph action, the reason is the first refused part's,
    named by its path (``action['arm']: its dtype float64 …``)."""
    masked = _masked_part(action, _TOP)
    if masked:
        return (
            f"{masked} is a numpy masked array, whose masked values the environment would "
            "receive as real ones and JSON cannot record: send array.filled(value)"
        )
    if space is None:
        return ""
    try:
        return _reason(space, action, _TOP)
    except Exception:  # an action odd enough to break the explanation: the repr stays
        return ""


def _reason(space: spaces.Space[Any], action: Any, path: str) -> str:
    if isinstance(space, spaces.Box):
        return _named(path, _why_not_in_box(space, action, path))
    if isinstance(space, spaces.Discrete):
        return _named(path, _why_not_in_discrete(space, action, path))
    part = _refused_part(space, action, path)
    if part is not None:
        return _reason(*part)
    if bool(space.contains(action)):  # contained, but the record cannot hold it
        return _unportable(action, path) or ""
    return ""


def _named(path: str, reason: str) -> str:
    """A part's reason, after the path that says which part it is."""
    return reason if path == _TOP or not reason else f"{path}: {reason}"


def _refused_part(
    space: spaces.Space[Any], action: Any, path: str
) -> tuple[spaces.Space[Any], Any, str] | None:
    """The first part of a composite action its subspace refuses, with its path."""
    parts: list[tuple[spaces.Space[Any], Any, str]] = []
    if isinstance(space, spaces.Dict):
        if isinstance(action, dict) and action.keys() == space.spaces.keys():
            parts = [(sub, action[key], f"{path}[{key!r}]") for key, sub in space.spaces.items()]
    elif isinstance(space, spaces.Tuple):
        if isinstance(action, list | np.ndarray):
            action = tuple(action)  # as Tuple.contains takes them
        if isinstance(action, tuple) and len(action) == len(space.spaces):
            parts = [
                (sub, part, f"{path}[{i}]")
                for i, (sub, part) in enumerate(zip(space.spaces, action, strict=True))
            ]
    elif isinstance(space, spaces.OneOf):
        if isinstance(action, tuple) and len(action) == 2:
            index = action[0]
            if isinstance(index, int | np.integer) and 0 <= index < len(space.spaces):
                parts = [(space.spaces[int(index)], action[1], f"{path}[1]")]
    elif isinstance(space, spaces.Sequence):
        if not space.stack and isinstance(action, tuple):
            parts = [(space.feature_space, item, f"{path}[{i}]") for i, item in enumerate(action)]
    elif isinstance(space, spaces.Graph) and isinstance(action, spaces.GraphInstance):
        for name, sub in (("nodes", space.node_space), ("edges", space.edge_space)):
            items = getattr(action, name)
            if sub is not None and items is not None:
                parts += [(sub, item, f"{path}.{name}[{i}]") for i, item in enumerate(items)]
    return next(
        ((sub, part, where) for sub, part, where in parts if not fast_contains(sub, part)), None
    )


def _masked_part(value: Any, path: str) -> str:
    """The path of the first masked array in an action, or an empty string."""
    if isinstance(value, np.ma.MaskedArray):
        return path
    if isinstance(value, dict):
        items: Any = ((f"{path}[{key!r}]", item) for key, item in value.items())
    elif type(value) in (list, tuple):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return ""
    return next((found for where, item in items if (found := _masked_part(item, where))), "")


def _why_not_in_discrete(space: spaces.Discrete, action: Any, path: str) -> str:
    start, n = int(space.start), int(space.n)
    dtype = getattr(action, "dtype", None)
    # Discrete.contains takes a NumPy integer in range only if its dtype casts safely.
    if (
        isinstance(action, np.integer | np.ndarray)
        and dtype is not None
        and np.issubdtype(dtype, np.integer)
        and np.shape(action) == ()
        and start <= int(action) < start + n
        and not np.can_cast(dtype, space.dtype)
    ):
        return (
            f"its dtype {dtype} does not cast safely to the space's {space.dtype}: send int({path})"
        )
    return f"an action of this space is an int from {start} to {start + n - 1}"


def _why_not_in_box(space: spaces.Box, action: Any, path: str) -> str:
    try:
        array = np.asarray(action)
    except Exception:  # a ragged list
        return "it is not an array of numbers"
    if array.dtype.kind not in "biuf":
        return f"it holds {array.dtype} values, not numbers"
    if array.shape != space.shape:
        return f"its shape is {array.shape}, the space's is {space.shape}"
    # Box.contains converts a list with the space's dtype, but takes an array as it is.
    if isinstance(action, np.ndarray) and not np.can_cast(array.dtype, space.dtype):
        return (
            f"its dtype {array.dtype} does not cast safely to the space's {space.dtype}: "
            f"send {path}.astype(np.{space.dtype})"
        )
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        return (
            "it holds a NaN or an infinity, which no bounded Box contains and JSON cannot "
            "record: clip it to finite values"
        )
    if bool(space.contains(action)):  # in bounds, but a double would round it
        return _unportable(action, "it") or ""
    return f"it lies outside the space's bounds: clip it with np.clip({path}, low, high)"
