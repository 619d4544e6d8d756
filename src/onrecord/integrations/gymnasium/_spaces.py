"""Batched encoding of actions and observations with the spaces' own ``to_jsonable``.

The batch layout is recorded next to the values, so a reader can take one element out
of a batch (``unbatch``) without the original space objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from onrecord._canonical import to_portable
from onrecord._exceptions import json_text, shown_repr, without_addresses
from onrecord._portable import key_path, masked_refusal
from onrecord.episode._blobs import BLOB_THRESHOLD, blob_ref
from onrecord.errors import PortabilityError

# Re-exported: where the refusal of an action lived before it had its own module.
from onrecord.integrations.gymnasium._actions import (
    fast_contains,
    invalid_action_message,
    why_not_in,
)

__all__ = [
    "batch_layout",
    "decode_sample",
    "describe_space",
    "encode_batch",
    "fast_contains",
    "invalid_action_message",
    "rounds",
    "stacked_box",
    "why_not_in",
]


def batch_layout(space: spaces.Space[Any]) -> Any:
    """How ``space.to_jsonable`` lays out a batch: ``"list"`` (one item per sample) or a
    nested ``{"dict": {...}}`` / ``{"tuple": [...]}`` of per-subspace batches."""
    if isinstance(space, spaces.Dict):
        return {"dict": {key: batch_layout(sub) for key, sub in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"tuple": [batch_layout(sub) for sub in space.spaces]}
    return "list"


def decode_sample(space: spaces.Space[Any], encoded: Any) -> Any:
    """One recorded action or observation (``transitions()[i]["observation"]``,
    ``initial["observation"]``) back as the native sample of ``space``, the declared
    space it was recorded under. A Dict or Tuple is decoded part by part (Gymnasium's
    own ``from_jsonable`` cannot size the batch of an empty one); each other part is
    put back into a batch of one for its space's ``from_jsonable``."""
    if isinstance(space, spaces.Dict):
        return {key: decode_sample(sub, encoded[key]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        parts = zip(space.spaces, encoded, strict=True)
        return tuple(decode_sample(sub, part) for sub, part in parts)
    return space.from_jsonable([encoded])[0]


def describe_space(space: spaces.Space[Any] | None) -> dict[str, Any]:
    """A diagnostic description; decoding needs the same declared upstream space."""
    if space is None:
        return {"repr": None, "layout": "list"}
    if type(space) is not spaces.Box:
        return _description(space)
    # A fresh environment per episode brings fresh, equal spaces, and a Box's repr costs
    # ~25 us (array printing, dtype naming): describe each distinct Box once.
    key = (space.dtype.str, space.shape, space.low.tobytes(), space.high.tobytes())
    found = _BOXES.get(key)
    if found is None:
        if len(_BOXES) >= _BOXES_KEPT:
            _BOXES.clear()
        found = _BOXES[key] = _description(space)
    return dict(found)


_BOXES: dict[tuple[Any, ...], dict[str, Any]] = {}
_BOXES_KEPT = 64


def _description(space: spaces.Space[Any]) -> dict[str, Any]:
    # A space class without its own __repr__ (here or nested in a Dict) prints its memory
    # address, which differs in every process: the same episode would record differently
    # under two executors. The address says nothing about the space, so it is dropped.
    # A Text charset may hold a lone surrogate, which UTF-8 JSON cannot: kept escaped.
    described = json_text(without_addresses(repr(space)))
    return {"repr": described, "type": type(space).__name__, "layout": batch_layout(space)}


def encode_batch(
    space: spaces.Space[Any] | None,
    values: list[Any],
    field: str,
    blobs: dict[str, bytes] | None = None,
) -> Any:
    """Many samples at once, in the space's batched ``to_jsonable`` layout. Box and
    Discrete (the common spaces) are converted by one NumPy call; other spaces go
    through their own ``to_jsonable``. Non-finite numbers are refused with the path.
    Box samples of ``BLOB_THRESHOLD`` bytes or more go to ``blobs`` as one array."""
    if isinstance(space, spaces.Box) and values:
        stacked = stacked_box(values, field)
        if stacked is None:
            return _as_returned(values, field)
        if stacked.dtype.kind == "f" and not np.isfinite(stacked).all():
            to_portable(stacked, f"$.{field}")  # raises, naming the first bad element
        if blobs is not None and stacked[0].nbytes >= BLOB_THRESHOLD:
            return blob_ref(stacked, blobs)
        return stacked.tolist()
    if isinstance(space, spaces.Discrete):
        if all(isinstance(value, int | np.integer) for value in values):
            return [int(value) for value in values]
        return _as_returned(values, field)  # a float is not truncated to an int
    if space is None or (not values and batch_layout(space) == "list"):
        return to_portable(list(values), f"$.{field}")
    if not _fits(space, values):
        return _off_space(space, values, field)
    _refuse_masked_parts(space, values, field)
    try:
        encoded = space.to_jsonable(values)
    except NotImplementedError as exc:
        raise PortabilityError(
            f"$.{field}: {type(space).__name__} has no to_jsonable; "
            "give the environment a space gymnasium can encode",
            f"$.{field}",
        ) from exc
    except Exception:  # a sample off the space: a list where it holds arrays, a short tuple
        return _off_space(space, values, field)
    return to_portable(encoded, f"$.{field}")


def stacked_box(values: Sequence[Any], field: str) -> np.ndarray | None:
    """Box samples as one array, or None when each must be kept on its own: samples of
    different shapes (an environment off its space), a dtype JSON has no numbers for, or
    a sample whose dtype or exact value stacking would change. A masked sample is
    refused, naming it. An array (the recorder's column of matching samples) is taken
    as it is. A longdouble column is kept apart too: written as doubles in one cast (or
    as a blob whose bytes differ between platforms), its values were rounded silently;
    one by one, each is stored as the double that holds it exactly, or refused."""
    if isinstance(values, np.ndarray):
        return values if _columnar(values.dtype) else None
    refuse_masked(values, field)
    try:
        stacked = np.array(values)  # far cheaper than np.stack for many small arrays
    except ValueError:
        return None
    if not _columnar(stacked.dtype) or promoted(values, stacked.dtype):
        return None
    return stacked


def _columnar(dtype: np.dtype[Any]) -> bool:
    """Whether a column of ``dtype`` is written exactly by one cast: bools, integers,
    and floats no wider than a double."""
    kind = dtype.kind
    return kind in "biu" or (kind == "f" and dtype.itemsize <= 8)


def refuse_masked(values: Sequence[Any], field: str) -> None:
    """Refuse a ``numpy.ma.MaskedArray`` sample, naming it: stacking keeps its data and
    drops its mask, so masked values would be recorded as if they were real."""
    # The types first, in one C-level pass: a whole column is read here.
    if not any(issubclass(kind, np.ma.MaskedArray) for kind in set(map(type, values))):
        return
    for index, value in enumerate(values):
        if isinstance(value, np.ma.MaskedArray):
            raise masked_refusal(f"$.{field}[{index}]")


def _refuse_masked_parts(space: spaces.Space[Any], values: list[Any], field: str) -> None:
    """``refuse_masked`` for each part of the samples ``to_jsonable`` will encode: its
    ``tolist()`` writes ``None`` where an array is masked, which a numeric column cannot
    decode, where a masked Box sample on its own is refused. A part the layout cannot
    reach is left to ``to_jsonable``, whose failure takes the samples off the space."""
    parts: list[tuple[Any, str, spaces.Space[Any]]]
    if isinstance(space, spaces.Dict):
        parts = [(key, key_path("", key), sub) for key, sub in space.spaces.items()]
    elif isinstance(space, spaces.Tuple):
        parts = [(index, f"[{index}]", sub) for index, sub in enumerate(space.spaces)]
    else:
        refuse_masked(values, field)
        return
    for key, path, sub in parts:
        try:
            column = [value[key] for value in values]
        except Exception:  # a nested sample off its layout
            continue
        _refuse_masked_parts(sub, column, f"{field}{path}")


def promoted(values: Sequence[Any], dtype: np.dtype[Any]) -> bool:
    """Whether stacking changed some sample's dtype: one step off its Box's dtype (an
    int64 array among uint64 ones, a bool array among uint8 ones) made ``np.array``
    promote the whole column, rounding every uint64 or int64 beyond 2**53 to a float
    and writing bools as 0 and 1, on the steps that matched the space too. The byte
    order is no change: ``np.array`` stacks big-endian ``>f4`` samples into a native
    float32 column of the same values (which went to JSON lists, not a blob)."""
    dtypes = {getattr(value, "dtype", None) for value in values}
    if dtypes == {dtype}:
        return False  # the usual column: arrays (or NumPy scalars) of one dtype, at half the cost
    native = dtype.newbyteorder("=")
    if {_native(found) for found in dtypes} == {native}:
        return False  # arrays of one dtype, in either byte order
    return any(
        _native(np.asarray(value).dtype) != native or rounds(value, dtype) for value in values
    )


def _native(dtype: np.dtype[Any] | None) -> np.dtype[Any] | None:
    return dtype if dtype is None or dtype.isnative else dtype.newbyteorder("=")


_EXACT_IN_DOUBLE = 2**53


def rounds(value: Any, dtype: np.dtype[Any]) -> bool:
    """Whether a sample given as Python numbers (a list or tuple, or one number) holds
    an integer that a float ``dtype`` rounds: ``[2**60 + 1, 0.5]`` makes a float64
    array, so the stacked column, at the sample's own dtype, would silently lose it."""
    if dtype.kind != "f" or isinstance(value, np.ndarray):
        return False
    if isinstance(value, list | tuple):
        return any(rounds(item, dtype) for item in value)
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        number = int(value)
        return abs(number) > _EXACT_IN_DOUBLE and _not_a_double(number)
    return False


def _not_a_double(number: int) -> bool:
    try:
        return float(number) != number  # Python compares an int and a float exactly
    except OverflowError:
        return True


def _off_space(space: spaces.Space[Any], values: list[Any], field: str) -> Any:
    """Samples the space's ``to_jsonable`` could not encode, in its layout all the same:
    a Dict or Tuple part by part (never as blobs: only a Box column is one), any other
    sample kept as the environment returned it (as a sample off its Box is). A sample
    whose keys or length the Dict or Tuple layout cannot hold is refused, naming it:
    ``to_jsonable`` would drop an extra key or element without a word."""
    parts: dict[Any, spaces.Space[Any]]
    if isinstance(space, spaces.Dict):
        # Quoted unless a plain identifier: after a bare dot, the key "a.b" read as
        # the key "b" of a nested Dict "a".
        parts, paths = dict(space.spaces), [key_path("", key) for key in space.spaces]
    elif isinstance(space, spaces.Tuple):
        parts = dict(enumerate(space.spaces))
        paths = [f"[{key}]" for key in parts]
    else:
        return _as_returned(values, field)
    for index, value in enumerate(values):
        if not _fits(space, [value]):
            raise PortabilityError(
                f"$.{field}[{index}] is {type(value).__name__} {shown_repr(value, 80)}, which "
                f"is not a sample of {space}: the record lays samples out by that space's keys "
                "and length; return samples of the declared space",
                f"$.{field}[{index}]",
            )
    batches = [
        encode_batch(sub, [value[key] for value in values], f"{field}{path}")
        for (key, sub), path in zip(parts.items(), paths, strict=True)
    ]
    return dict(zip(parts, batches, strict=True)) if isinstance(space, spaces.Dict) else batches


def _fits(space: spaces.Space[Any], values: list[Any]) -> bool:
    """Whether every sample of a Dict or Tuple space has exactly its keys or length."""
    if isinstance(space, spaces.Dict):
        keys = space.spaces.keys()
        return all(isinstance(value, dict) and value.keys() == keys for value in values)
    if isinstance(space, spaces.Tuple):
        # Tuple.contains takes a list or an array for a tuple too (an agent sending
        # np.array([1, 2]) for Tuple(Discrete, Discrete)): the array is indexed part by
        # part like a tuple, never refused as off the layout.
        size = len(space.spaces)
        return all(_sequence_of(value, size) for value in values)
    return True


def _sequence_of(value: Any, size: int) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim >= 1 and len(value) == size
    return isinstance(value, tuple | list) and len(value) == size


def _as_returned(values: list[Any], field: str) -> list[Any]:
    """Each sample as the environment returned it (arrays as nested lists)."""
    return [
        to_portable(value.tolist() if isinstance(value, np.ndarray) else value, f"$.{field}[{i}]")
        for i, value in enumerate(values)
    ]
