"""Reading a model's answer: one finite float vector per action, positive deviations,
portable metadata. Anything else is the model's error (``ModelError``), recorded as
``model_error`` and never raised to the caller of ``capture_forecast``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import orjson

from onrecord._canonical import to_portable
from onrecord._exceptions import describe
from onrecord.errors import OnrecordError

__all__ = [
    "ModelError",
    "check_array",
    "check_response",
    "numeric_array",
    "read_answer",
]

_RESPONSE_KEYS = frozenset({"states", "standard_deviation", "metadata"})
_T = TypeVar("_T")


class ModelError(OnrecordError):
    """Internal: the model's answer cannot be used; recorded, never raised to callers."""


def check_response(response: Any, steps: int, dim: int) -> dict[str, Any]:
    """The portable response, or ``ModelError`` saying what is wrong with it."""
    if not isinstance(response, Mapping) or "states" not in response:
        raise ModelError(
            f"the model returned {type(response).__name__}, not a mapping with 'states'"
        )
    unknown = sorted(set(map(str, response)) - _RESPONSE_KEYS)
    if unknown:
        raise ModelError(
            f"the model returned unknown fields {unknown}; allowed are {sorted(_RESPONSE_KEYS)}"
        )
    states = check_array(response["states"], steps, dim, "states")
    std = response.get("standard_deviation")
    deviations = None if std is None else check_array(std, steps, dim, "standard_deviation")
    if deviations is not None and not (deviations > 0).all():
        raise ModelError("standard_deviation must be positive everywhere")
    try:
        metadata = to_portable(dict(response.get("metadata") or {}), "$.metadata")
    except (OnrecordError, TypeError, ValueError) as exc:
        raise ModelError(f"metadata is not portable JSON: {exc}") from None
    return {
        "states": states.tolist(),
        "metadata": metadata,
        "standard_deviation": None if deviations is None else deviations.tolist(),
    }


def check_array(value: Any, steps: int, dim: int, name: str) -> np.ndarray:
    """``value`` as a finite float array of shape ``[steps, dim]``."""
    array = numeric_array(value, name)
    if steps == 0 and array.size == 0:
        array = array.reshape(0, dim)  # "[]" is the one vector per action of no actions
    if array.shape != (steps, dim):
        raise ModelError(
            f"{name} has shape {list(array.shape)}; expected one vector of {dim} "
            f"numbers per action, i.e. [{steps}, {dim}]"
        )
    if not np.isfinite(array).all():
        raise ModelError(f"{name} holds non-finite values")
    return array


# NumPy converts text ("0.5", b"1"), booleans and datetimes to floats without a word, and
# complex numbers by dropping their imaginary part; none of them is a predicted real
# number, so an answer holding them is the model's error.
_NOT_NUMERIC = frozenset("USbMmVc")


def numeric_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array, refusing text, booleans, dates and complex numbers."""
    try:
        raw = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} is not numeric: {exc}") from None
    if raw is not value and raw.dtype.kind in "iuf":  # an array's dtype says it all
        _refuse_hidden_booleans(value, name)
    if raw.dtype.kind in _NOT_NUMERIC:
        hint = " (take .real yourself if the imaginary part is known to be zero)"
        raise ModelError(
            f"{name} is not numeric: it holds {raw.dtype} values; return real floats"
            + (hint if raw.dtype.kind == "c" else "")
        )
    try:
        return raw.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} is not numeric: {exc}") from None


def _refuse_hidden_booleans(value: Any, name: str) -> None:
    """A boolean beside numbers (``[[0.1, True]]``) becomes 1.0 in a numeric array: look
    for one in the JSON form of a nested list (one C call), or element by element when it
    has none (a type orjson cannot write)."""
    try:
        raw = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
        found = raw.find(b"true") >= 0 or raw.find(b"false") >= 0
    except TypeError:
        found = _holds_boolean(value)
    if found:
        raise ModelError(f"{name} is not numeric: it holds booleans; return real floats")


def _holds_boolean(value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "b" or (
            value.dtype.kind == "O" and any(map(_holds_boolean, value.ravel()))
        )
    if isinstance(value, list | tuple):
        return any(map(_holds_boolean, value))
    return False


def read_answer(check: Callable[..., _T], answer: Any, *args: Any) -> _T:
    """``check(answer, *args)``; any failure while reading the model's answer (a huge
    int, an ``__array__`` or ``__getitem__`` that raises) is the model's, not the caller's."""
    try:
        return check(answer, *args)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"the model's answer could not be read: {describe(exc)}") from None
