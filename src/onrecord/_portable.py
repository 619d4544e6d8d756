"""The portable value codec: user values (``info`` dicts, observer output, options,
metadata) turned into plain JSON values *once*, at the boundary, so everything
downstream can hash with a single C call.

NumPy: a scalar is stored as its exact Python value (``float32`` and ``float64`` are
exactly representable as JSON doubles; integers and booleans are exact). An array is
stored as ``{"$ndarray": {"dtype", "shape", "data"}}`` so that dtype and shape come
back on decode; ``from_portable`` restores it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._exceptions import without_addresses
from onrecord._loaded import loaded
from onrecord._nesting import refuse_deep, too_deep
from onrecord.errors import PortabilityError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "NDARRAY_TAG",
    "from_portable",
    "key_path",
    "masked_refusal",
    "narrowed",
    "to_portable",
    "walk",
]

NDARRAY_TAG = "$ndarray"
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
# orjson writes datetimes and dataclasses natively; these hand them to ``default``
# instead, which refuses them: they have no JSON form, and writing one as text would
# be the silent stringification portable values rule out.
PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def to_portable(value: Any, path: str = "$") -> Any:
    """Return a detached copy of ``value`` made of plain JSON types.

    Refuses, with the JSON path of the value, anything that would not come back
    unchanged: NaN/Infinity, integers beyond 64 bits, non-string keys, objects of
    unknown type, and nesting deeper than ``MAX_NESTING``. Never stringifies silently.
    """
    if type(value) is dict or type(value) is list:
        # One C round trip copies plain JSON containers, kept only when it equals the
        # original: numpy values, odd keys and unknown types make orjson refuse, and
        # what it would change (a NaN written as null, a UUID or an enum written as
        # its value, a tuple as a list) compares unequal. Those take the walks below,
        # which decide and explain.
        try:
            raw: bytes | None = orjson.dumps(value, option=PASSTHROUGH)
        except TypeError:
            raw = None
        copy = None if raw is None else orjson.loads(raw)
        if type(copy) is type(value) and copy == value:
            refuse_deep(copy, raw, path)
            return copy
    try:
        try:
            copy = _fast(value)
        except _NotFast:
            copy = _walk(value, path)
    except RecursionError:
        raise too_deep(path) from None
    if type(copy) is dict or type(copy) is list:
        refuse_deep(copy, None, path)
    return copy


class _NotFast(Exception):
    """Raised inside the fast walk; the path-tracking walk then decides and explains."""


_FLOATS: tuple[type, ...] = (float,)
"""The float types the fast walk takes as they are: NumPy's float64 and float32 join
once NumPy is loaded (``_numpy_floats``), without importing it here. A tuple, compared
by identity first: no type is hashed (a metaclass may make its classes unhashable)."""


def _numpy_floats() -> None:
    global _FLOATS
    numpy = loaded("numpy")
    if numpy is not None and len(_FLOATS) == 1:
        _FLOATS = (float, numpy.float64, numpy.float32)


_numpy_floats()


def _fast(value: Any) -> Any:
    # The hot path of every capture: no path strings, exact-type dispatch only.
    kind = type(value)
    if kind in _FLOATS:
        if value - value == 0.0:  # false for NaN and +-inf
            return float(value)
        raise _NotFast
    if kind is bool or value is None or (kind is str and value.isascii()):
        return value
    if kind is int:
        if _INT_MIN <= value <= _INT_MAX:
            return value
        raise _NotFast
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                raise _NotFast
            out[key] = _fast(item)
        return out
    if kind is list or kind is tuple:
        return [float(x) if type(x) in _FLOATS and x - x == 0.0 else _fast(x) for x in value]
    raise _NotFast


def _walk(value: Any, path: str) -> Any:
    kind = type(value)
    if kind is bool or value is None:
        return value
    if kind is str:
        return _checked_str(value, path)
    if kind is float:
        if math.isfinite(value):
            return value
        raise PortabilityError(
            f"{path} is {value!r}; non-finite numbers have no JSON "
            "form: replace it with null or a finite value",
            path,
        )
    if kind is int:
        return _checked_int(value, path)
    if kind is dict:
        return {
            _checked_key(key, path): _walk(item, key_path(path, key)) for key, item in value.items()
        }
    if kind is list or kind is tuple:
        return [_walk(item, f"{path}[{index}]") for index, item in enumerate(value)]
    return _to_portable_slow(value, path)


def _to_portable_slow(value: Any, path: str) -> Any:
    numpy = loaded("numpy")  # None: then no value is a NumPy one
    if numpy is not None and isinstance(value, numpy.ndarray):
        return _array_to_portable(value, path)
    if isinstance(value, Enum):  # as orjson writes it: an Enum member is its value
        return _walk(value.value, path)
    if isinstance(value, str):  # str.__str__: a mixin Enum's str() is its name (and a
        return _checked_str(str.__str__(value), path)  # numpy.str_ is text, as orjson says)
    if numpy is not None and isinstance(value, numpy.generic):
        if value.dtype.kind not in "biuf":
            return _refuse(value, path)
        _numpy_floats()  # the fast walk takes the next ones
        return _walk((_narrow(value, path) if _wide(value) else value).item(), path)
    if isinstance(value, float):
        return _walk(float(value), path)
    if isinstance(value, int):
        return _checked_int(int(value), path)
    if isinstance(value, Mapping):
        return _walk(dict(value), path)
    if isinstance(value, list | tuple):
        return _walk(list(value), path)
    return _refuse(value, path)


def _refuse(value: Any, path: str) -> Any:
    raise PortabilityError(
        f"{path} holds a {type(value).__module__}.{type(value).__qualname__}, which has no "
        "lossless JSON form; convert it to str, int, float, bool, None, list, dict or a "
        "numpy array before returning it",
        path,
    )


def _checked_str(value: str, path: str) -> str:
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PortabilityError(
            f"{path} holds a string with a lone surrogate ({value[exc.start]!r} at "
            f"{exc.start}), which UTF-8 JSON cannot hold; decode the text it came from "
            "with errors='replace', or keep it as a list of code points",
            path,
        ) from exc
    return value


def _checked_int(value: int, path: str) -> int:
    if _INT_MIN <= value <= _INT_MAX:
        return value
    raise PortabilityError(
        f"{path} is {_int_text(value)}, beyond the 64-bit range JSON readers keep "
        "exactly; store it as a string",
        path,
    )


def _int_text(value: int) -> str:
    """An integer for an error message: past a few dozen digits, its size. Python
    refuses to print one of more than 4300 digits (a ValueError raised while the error
    was being written, which escaped as a crash instead of this refusal)."""
    if value.bit_length() <= 256:
        return str(value)
    digits = int(value.bit_length() * math.log10(2)) + 1
    return f"{'-' if value < 0 else ''}an integer of about {digits:,} digits"


def key_path(path: str, key: object) -> str:
    """The JSON path of ``key`` in the object at ``path``: ``$.info.boom`` for a plain
    identifier, else the key JSON-quoted in brackets (``$.info["a.b"]``,
    ``$.info["boom\\ndecision: accept"]``, ``$.info[""]``). Written after a dot,
    ``{"a.b": x}`` and ``{"a": {"b": x}}`` both read ``$.info.a.b``, and a key holding
    a newline printed a line of its own inside the error. Non-ASCII is escaped too, so
    a look-alike or right-to-left character shows as what it is. A key that is no
    string is written as its ``repr`` in brackets."""
    # An ASCII identifier is [A-Za-z_][A-Za-z0-9_]*: two C calls, cheaper than a regular
    # expression on a path built for every key of every info.
    if type(key) is not str:  # a Dict space's or a schema's non-string key: its repr
        return f"{path}[{without_addresses(repr(key))}]"
    if key.isascii() and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _checked_key(key: Any, path: str) -> str:
    if type(key) is str:
        return _checked_str(key, path)
    # Named by the object holding it: a JSON path has no form for a key that is no string.
    raise PortabilityError(
        f"{path} has the key {_shown_key(key)} of type {type(key).__name__}; "
        "JSON object keys must be strings: convert the key to str (e.g. str(key)) "
        "before returning the dict",
        path,
    )


def _shown_key(key: Any) -> str:
    """A non-string key for a message, on one line and at most 80 characters: its repr
    may be anything (an object's own ``__repr__``, a huge tuple)."""
    shown = without_addresses(repr(key))  # before the cut below, which could halve one
    if not shown.isprintable():
        shown = shown.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 80 else f"{shown[:79]}…"


def _array_to_portable(array: np.ndarray, path: str) -> dict[str, Any]:
    import numpy as np  # loaded: the value is an array

    if isinstance(array, np.ma.MaskedArray):
        raise masked_refusal(path)
    if array.dtype.kind not in "biuf":
        raise PortabilityError(
            f"{path} holds a numpy array of dtype {array.dtype}, which has no lossless JSON "
            "form; convert it to an array of bools, integers or floats (a text array: .tolist())",
            path,
        )
    dtype = array.dtype.str  # a longdouble array keeps its dtype, its values as doubles
    if _wide(array):
        array = _narrow(array, path)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        at = f"{path}{list(bad)}" if bad else path  # a 0-d array has no index
        raise PortabilityError(
            f"{at} is {array[bad]!r}; non-finite numbers "
            "have no JSON form: replace it with a finite value",
            path,
        )
    return {
        NDARRAY_TAG: {
            "dtype": dtype,
            "shape": list(array.shape),
            "data": array.ravel().tolist(),
        }
    }


def masked_refusal(path: str) -> PortabilityError:
    """The refusal of a ``numpy.ma.MaskedArray``: stored as its data, its masked values
    would read as real ones, and as ``tolist()`` gives it (None where masked) it would
    come back as NaNs under a float dtype, or fail to decode under an integer one."""
    return PortabilityError(
        f"{path} holds a numpy masked array, whose masked values have no JSON form and "
        "would be recorded as if they were real; return array.filled(value) to fill them, "
        "array.compressed() to drop them, or array.tolist() for a list with None where a "
        "value is masked",
        path,
    )


def _wide(value: np.ndarray | np.generic) -> bool:
    """A float wider than a double (``numpy.longdouble``): its ``item()`` and ``tolist()``
    give longdoubles back, which no JSON writer takes (and which made the walk recurse
    until it reported a structure nested too deep)."""
    return value.dtype.kind == "f" and value.dtype.itemsize > 8


def narrowed(value: np.ndarray | np.generic) -> np.ndarray | None:
    """A wide float as float64 when that holds every value exactly, else None."""
    import numpy as np  # loaded: the value is a NumPy one

    doubled = np.asarray(value, dtype=np.float64)
    return doubled if np.array_equal(doubled, value, equal_nan=True) else None


def _narrow(value: Any, path: str) -> Any:
    doubled = narrowed(value)
    if doubled is None:
        raise PortabilityError(
            f"{path} holds a numpy {value.dtype} value that a JSON double cannot hold "
            "exactly; convert it with float() or .astype(np.float64) to round it",
            path,
        )
    return doubled if isinstance(value, loaded("numpy").ndarray) else doubled[()]


def from_portable(value: Any) -> Any:
    """Decode what ``to_portable`` made: tagged arrays come back as numpy arrays."""
    if isinstance(value, dict):
        tagged = value.get(NDARRAY_TAG) if len(value) == 1 else None
        if tagged is not None:
            import numpy as np  # an array is made: here NumPy is needed

            return np.asarray(tagged["data"], dtype=np.dtype(tagged["dtype"])).reshape(
                tagged["shape"]
            )
        return {key: from_portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_portable(item) for item in value]
    return value


walk = _walk  # the exact walk, for state_bytes: it raises with the path of a bad value
