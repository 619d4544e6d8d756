"""Canonical JSON, digests and the portable value codec.

One serializer (orjson) produces every byte that is hashed: UTF-8, sorted keys, no
whitespace, no NaN or Infinity. ``to_portable`` turns user values (``info`` dicts,
observer output, options, metadata) into plain JSON values *once*, at the boundary,
so everything downstream can hash with a single C call.

NumPy: a scalar is stored as its exact Python value (``float32`` and ``float64`` are
exactly representable as JSON doubles; integers and booleans are exact). An array is
stored as ``{"$ndarray": {"dtype", "shape", "data"}}`` so that dtype and shape come
back on decode; ``from_portable`` restores it.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from onrecord._nesting import MAX_NESTING, TooDeep, refuse_deep, too_deep
from onrecord.errors import DigestMismatch, PortabilityError, SchemaError

__all__ = [
    "MAX_NESTING",
    "NDARRAY_TAG",
    "TooDeep",
    "atomic_write_bytes",
    "canonical_bytes",
    "content_digest",
    "digest_bytes",
    "from_portable",
    "load_record_bytes",
    "no_string_values",
    "record_bytes",
    "reraise_interrupt",
    "state_bytes",
    "to_portable",
]

NDARRAY_TAG = "$ndarray"
_OPTIONS = orjson.OPT_SORT_KEYS
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def canonical_bytes(value: Any) -> bytes:
    """Canonical JSON bytes of a value that is already portable."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except TypeError as exc:  # orjson.JSONEncodeError subclasses TypeError
        raise PortabilityError(
            f"value is not portable JSON: {exc}; pass it through onrecord's to_portable first"
        ) from exc


def digest_bytes(data: bytes) -> str:
    """sha256 hex digest of bytes."""
    return hashlib.sha256(data).hexdigest()


def content_digest(record: Mapping[str, Any]) -> str:
    """Digest of a record: sha256 of its canonical bytes without the ``digest`` field."""
    if "digest" in record:
        record = {key: value for key, value in record.items() if key != "digest"}
    return digest_bytes(canonical_bytes(record))


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """The exact bytes a record is saved as: canonical JSON plus a newline."""
    return canonical_bytes(record) + b"\n"


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file and rename, so readers never
    see a half-written file and a crash never leaves one behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); a plain open() would have honoured the
        # umask, and reports and evidence are meant to be shared like any other file.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _umask() -> int:
    """The process umask, read without changing it (``os.umask`` can only be read by
    setting it, which would race with other threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:  # not Linux: read it the racy way, setting it back at once
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def load_record_bytes(raw: bytes, what: str) -> dict[str, Any]:
    """Parse a saved record and insist its bytes are exactly the canonical form, so that
    no edit (not even one that parses to the same values) goes unnoticed."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(
            f"{what} is not valid JSON ({exc}); the file is damaged or was "
            "edited: restore it from the run directory or re-run"
        ) from exc
    if not isinstance(data, dict):
        raise SchemaError(f"{what} must hold a JSON object, found {type(data).__name__}")
    if canonical_bytes(data) != raw.rstrip(b"\n"):
        raise DigestMismatch(
            f"{what} is not in canonical form: it was edited after saving; "
            "restore the original file"
        )
    return data


# orjson writes datetimes and dataclasses natively; these hand them to ``default``
# instead, which refuses them: they have no JSON form, and writing one as text would
# be the silent stringification portable values rule out.
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_STATE_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS | _PASSTHROUGH


def state_bytes(value: Any, path: str = "$") -> bytes:
    """Canonical JSON bytes of a state-like value (observer output, observations) in one C
    call. NumPy scalars and arrays are written as plain numbers and nested lists, each at
    its own precision (a float32 keeps its shortest float32 digits), so the bytes are
    exact and stable under re-serialization. An unknown type makes orjson fail, a
    ``null`` may be a NaN in disguise and a string a UUID or datetime64 orjson wrote as
    text: those take the exact walk, which raises PortabilityError naming the path —
    unless the bytes read back equal to the value (one C comparison; SQLite rows with
    NULLs and text pass there), or, for a string, the value holds nothing orjson could
    have written as one."""
    try:
        raw = orjson.dumps(value, option=_STATE_OPTIONS, default=_numpy_fallback)
    except TypeError as exc:
        reraise_interrupt(exc)
        raw = b""
    if not raw:
        _walk(value, path)  # raises with the path when something is not portable
        raise PortabilityError(
            f"{path} could not be serialized; return plain JSON values or numpy numbers and arrays",
            path,
        )
    nulls = b"null" in raw
    if not nulls and no_string_values(raw):
        return raw
    # An array beside the null or string never reads back equal (it comes back a list),
    # and the comparison would convert every element: go straight to the next test.
    if (_holds_array(value) or not _reads_back_equal(raw, value)) and (nulls or _not_plain(value)):
        _walk(value, path)
    return raw


def _holds_array(value: Any) -> bool:
    """Whether ``value`` is a NumPy array or a dict with one among its values, the usual
    observer output (a C scan of the types; other arrays are left to the comparison)."""
    kind = type(value)
    if kind is dict:
        return np.ndarray in map(type, value.values())
    return kind is np.ndarray


def reraise_interrupt(exc: TypeError) -> None:
    """orjson turns whatever its ``default`` hook raises into a TypeError, a Ctrl-C that
    lands in the hook included: give the interrupt back instead of treating it as a value
    that could not be serialized."""
    cause = exc.__cause__
    if isinstance(cause, BaseException) and not isinstance(cause, Exception):
        raise cause


def no_string_values(raw: bytes) -> bool:
    """Whether canonical JSON bytes hold no string value (only keys are quoted): each key
    is written as two quotes and a colon, and without a backslash every quote in the
    bytes is a delimiter. Two counts and a search, cheap enough for every step."""
    return raw.count(b'"') == 2 * raw.count(b'":') and raw.find(b"\\") < 0


def _reads_back_equal(raw: bytes, value: Any) -> bool:
    """Whether the bytes parse to a value equal to the original: not so for a NaN written
    as null, a UUID or datetime64 written as text, nor (harmlessly) for arrays, tuples
    and float32 numbers, which the callers then look at more closely."""
    try:
        return bool(orjson.loads(raw) == value)
    except ValueError:  # arrays compared with lists have no single truth value
        return False


_PLAIN_LEAVES = frozenset((str, int, float, bool, type(None)))


def _not_plain(value: Any) -> bool:
    """Whether ``value`` holds anything but JSON containers and leaves, and NumPy numbers
    and numeric arrays: only those others (a UUID, a datetime64, an enum) can be what
    orjson wrote as a string. It looks at an array's dtype, never at its elements, so a
    string beside a large array (which never reads back equal) costs no element walk."""
    kind = type(value)
    if kind in _PLAIN_LEAVES:
        return False
    if kind is dict:
        if any(type(key) is not str for key in value):
            return True
        value = value.values()
    elif kind is not list and kind is not tuple:
        return _not_plain_leaf(value)
    plain = _PLAIN_LEAVES  # a leaf's type is looked up here, without a call per leaf
    return any(type(item) not in plain and _not_plain(item) for item in value)


def _not_plain_leaf(value: Any) -> bool:
    if type(value) is np.ndarray or isinstance(value, np.generic):
        return value.dtype.kind not in "biuf"
    return True


def _numpy_fallback(value: Any) -> Any:
    """orjson's hook for numpy values it does not write natively (non-contiguous arrays,
    float16 scalars)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise TypeError("non-finite array")
        return np.ascontiguousarray(value)
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    raise TypeError(f"unsupported type {type(value).__name__}")


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
            raw: bytes | None = orjson.dumps(value, option=_PASSTHROUGH)
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


_FLOATS = (float, np.float64, np.float32)


def _fast(value: Any) -> Any:
    # The hot path of every capture: no path strings, exact-type dispatch only.
    kind = type(value)
    if kind is float or kind is np.float64 or kind is np.float32:
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
            _checked_key(key, path): _walk(item, f"{path}.{key}") for key, item in value.items()
        }
    if kind is list or kind is tuple:
        return [_walk(item, f"{path}[{index}]") for index, item in enumerate(value)]
    return _to_portable_slow(value, path)


def _to_portable_slow(value: Any, path: str) -> Any:
    if isinstance(value, np.ndarray):
        return _array_to_portable(value, path)
    if isinstance(value, Enum):  # as orjson writes it: an Enum member is its value
        return _walk(value.value, path)
    if isinstance(value, str):  # str.__str__: a mixin Enum's str() is its name (and a
        return _checked_str(str.__str__(value), path)  # numpy.str_ is text, as orjson says)
    if isinstance(value, np.generic):
        return _walk(value.item(), path) if value.dtype.kind in "biuf" else _refuse(value, path)
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
        f"{path} is {value}, beyond the 64-bit range JSON readers keep "
        "exactly; store it as a string",
        path,
    )


def _checked_key(key: Any, path: str) -> str:
    if type(key) is str:
        return _checked_str(key, path)
    raise PortabilityError(
        f"{path} has the key {key!r} of type {type(key).__name__}; "
        "JSON object keys must be strings: convert the key with str()",
        path,
    )


def _array_to_portable(array: np.ndarray, path: str) -> dict[str, Any]:
    if array.dtype.kind not in "biuf":
        _refuse(array, path)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise PortabilityError(
            f"{path}{list(bad)} is {array[bad]!r}; non-finite numbers "
            "have no JSON form: replace it with a finite value",
            path,
        )
    return {
        NDARRAY_TAG: {
            "dtype": array.dtype.str,
            "shape": list(array.shape),
            "data": array.ravel().tolist(),
        }
    }


def from_portable(value: Any) -> Any:
    """Decode what ``to_portable`` made: tagged arrays come back as numpy arrays."""
    if isinstance(value, dict):
        tagged = value.get(NDARRAY_TAG) if len(value) == 1 else None
        if tagged is not None:
            return np.asarray(tagged["data"], dtype=np.dtype(tagged["dtype"])).reshape(
                tagged["shape"]
            )
        return {key: from_portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_portable(item) for item in value]
    return value
