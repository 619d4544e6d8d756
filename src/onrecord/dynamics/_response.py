"""Reading a model's answer: one finite float vector per action, positive deviations,
portable metadata. Anything else is the model's error (``ModelError``), recorded as
``model_error`` and never raised to the caller of ``capture_forecast``; a refusal of a
value says where it is (the value, its horizon and coordinate).
"""

from __future__ import annotations

import datetime
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import orjson

from onrecord._canonical import to_portable
from onrecord._exceptions import describe
from onrecord.errors import OnrecordError

__all__ = [
    "ModelError",
    "answer_kind",
    "check_array",
    "check_deviation",
    "check_response",
    "located",
    "numeric_array",
    "read_answer",
    "read_metadata",
]

_RESPONSE_KEYS = frozenset({"states", "standard_deviation", "metadata"})
_T = TypeVar("_T")


class ModelError(OnrecordError):
    """Internal: the model's answer cannot be used; recorded, never raised to callers."""


def check_response(
    response: Any, steps: int, dim: int, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """The portable response, or ``ModelError`` saying what is wrong with it (``names``:
    the coordinates, to say where)."""
    if not isinstance(response, Mapping):
        raise ModelError(f"the model returned {answer_kind(response)}, not a mapping with 'states'")
    if "states" not in response:
        found = sorted(map(str, response))
        raise ModelError(
            f"the model returned a mapping without 'states' (its keys: {found}); return "
            "{'states': [one vector per action], ...}"
        )
    unknown = sorted(set(map(str, response)) - _RESPONSE_KEYS)
    if unknown:
        raise ModelError(
            f"the model returned unknown fields {unknown}; allowed are {sorted(_RESPONSE_KEYS)}"
        )
    states = check_array(response["states"], steps, dim, "states", names)
    std = response.get("standard_deviation")
    deviations = None if std is None else check_array(std, steps, dim, "standard_deviation", names)
    if deviations is not None:
        check_deviation(deviations, ("horizon",), names)
    return {
        "states": states.tolist(),
        "metadata": read_metadata(response.get("metadata")),
        "standard_deviation": None if deviations is None else deviations.tolist(),
    }


def read_metadata(metadata: Any) -> dict[str, Any]:
    """The answer's portable ``metadata`` (``{}`` when absent), or ``ModelError``."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ModelError(
            f"metadata is {answer_kind(metadata)}, not a mapping; return a dict of JSON "
            "values (or no metadata)"
        )
    try:
        portable: dict[str, Any] = to_portable(dict(metadata), "$.metadata")
    except (OnrecordError, TypeError, ValueError) as exc:
        raise ModelError(f"metadata is not portable JSON: {exc}") from None
    return portable


def check_array(
    value: Any, steps: int, dim: int, name: str, names: Sequence[str] | None = None
) -> np.ndarray:
    """``value`` as a finite float array of shape ``[steps, dim]``."""
    array = numeric_array(value, name)
    if steps == 0 and array.size == 0:
        array = array.reshape(0, dim)  # "[]" is the one vector per action of no actions
    if array.shape != (steps, dim):
        raise ModelError(
            f"{name} has shape {list(array.shape)}; expected one vector of {dim} "
            f"numbers per action, i.e. [{steps}, {dim}]"
        )
    finite = np.isfinite(array)
    if not finite.all():
        where = located(array, ~finite, ("horizon",), names)
        raise ModelError(f"{name} holds non-finite values: {where}; return finite floats")
    return array


def check_deviation(
    std: np.ndarray,
    axes: Sequence[str],
    names: Sequence[str] | None,
    *,
    allow_zero: bool = False,
    where: np.ndarray | None = None,
    fix: str = "",
) -> None:
    """``ModelError`` naming the first deviation that is not finite and positive (or
    non-negative, ``allow_zero``: the spread of particles that agree exactly), among the
    entries ``where`` marks (all when None); ``axes`` name ``std``'s leading axes."""
    with np.errstate(invalid="ignore"):
        usable = np.isfinite(std) & ((std >= 0) if allow_zero else (std > 0))
    bad = ~usable if where is None else ~usable & where
    if bad.any():
        bound = "non-negative" if allow_zero else "positive"
        raise ModelError(
            f"standard_deviation is {located(std, bad, axes, names)}; a standard deviation "
            f"must be finite and {bound}: {fix or _FIX_DEVIATION}"
        )


_FIX_DEVIATION = (
    "fix the model's uncertainty, or return no standard_deviation (None) if it has none"
)


def located(
    values: np.ndarray, bad: np.ndarray, axes: Sequence[str], names: Sequence[str] | None
) -> str:
    """``-0.5 at horizon 3, coordinate 'theta' (12 such values)``: the first value
    ``bad`` marks, where it is (a step index k is horizon k + 1) and how many there are."""
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    parts = [
        f"{axis} {i + 1 if axis == 'horizon' else i}"
        for axis, i in zip(axes, index[:-1], strict=True)
    ]
    coordinate = index[-1]
    parts.append(
        f"coordinate {names[coordinate]!r}"
        if names is not None and coordinate < len(names)
        else f"coordinate {coordinate}"
    )
    count = int(bad.sum())
    more = f" ({count} such values)" if count > 1 else ""
    return f"{float(values[index]):.4g} at {', '.join(parts)}{more}"


# NumPy converts text ("0.5", b"1"), booleans and datetimes to floats without a word, and
# complex numbers by dropping their imaginary part; none of them is a predicted real
# number, so an answer holding them is the model's error.
_NOT_NUMERIC = frozenset("USbMmVc")
# The same values one by one, as an object array holds them: NumPy's ``astype`` turns
# "0.5" into 0.5, True into 1.0 and numpy.datetime64("2020") into 50.0 just the same.
_NOT_NUMBERS = (
    str,
    bytes,
    bool,
    np.bool_,
    complex,
    np.complexfloating,
    np.datetime64,
    np.timedelta64,
    datetime.date,
    datetime.time,
    datetime.timedelta,
)


def numeric_array(value: Any, name: str) -> np.ndarray:
    """``value`` as a float64 array, refusing text, booleans, dates and complex numbers
    (in an object array too) and masked values."""
    if isinstance(value, np.ma.MaskedArray):
        # A masked value is no prediction: it was recorded as null, so the "ok" forecast
        # could not be read back (its record is not one vector of numbers per action).
        masked = int(np.ma.getmaskarray(value).sum())
        if masked:
            raise ModelError(
                f"{name} is a masked array with {masked} masked value"
                f"{'s' if masked > 1 else ''}; a masked value is no prediction: return a "
                "plain array of floats (fill or predict the masked values)"
            )
        value = np.ma.getdata(value)
    try:
        raw = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} is not numeric: {exc}") from None
    if raw is not value and raw.dtype.kind in "iuf":  # an array's dtype says it all
        _refuse_hidden_booleans(value, name)
    if raw.dtype.kind == "O":
        _refuse_hidden_non_numbers(raw, name)
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


def _refuse_hidden_non_numbers(raw: np.ndarray, name: str) -> None:
    """An object array (``dtype=object``) says nothing of what it holds: look at each value."""
    found = next((v for v in raw.flat if isinstance(v, _NOT_NUMBERS)), None)
    if found is None:
        return
    kind = "booleans" if isinstance(found, bool | np.bool_) else f"{type(found).__name__} values"
    raise ModelError(
        f"{name} is not numeric: its object array holds {kind} ({found!r:.40}); return real floats"
    )


def answer_kind(answer: Any) -> str:
    """The type of an answer that is not a prediction, as its error names it; a coroutine
    or generator says why (``predict`` is ``async def``, or yields) and a coroutine is
    closed, never awaited (Python would otherwise warn of it when it is collected)."""
    name = type(answer).__name__
    if inspect.iscoroutine(answer):
        answer.close()
        return (
            f"{name} (predict is an async function: it is called synchronously, so make "
            "it a plain function that returns the prediction, e.g. with asyncio.run)"
        )
    if inspect.isgenerator(answer) or inspect.isasyncgen(answer):
        return f"{name} (predict yields: return the prediction instead of yielding it)"
    return name


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
