"""Splicing bytes that are already canonical JSON into a record (``orjson.Fragment``).

Capture serializes every observer state once, during the step, and a Box column once, at
the end; decoding those bytes into Python objects only to write them again was most of
the cost of sealing an episode. A fragment is used only where writing its parsed value
again gives the same bytes, so the sealed record is canonical and loads like any other.

Doubles are stable under a parse and re-serialization. A float32 is written at float32
precision in its own notation: the digits parse to the same double, but the double is
written back as "70262058000000.0" or "7.630131e-6" where the float32 was
"7.0262058e+13" or "0.000007630131". Every such float32 form has a "+" exponent sign or
five zeros after "0."; a double is never written with five zeros, and a "+" only costs
the slow path. So bytes holding neither are stable. That rule is checked against the
installed orjson once per process (``splicing_is_exact``); if a future orjson wrote
numbers differently, capture would fall back to decoding, never to a wrong record.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import reraise_interrupt

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "LazyColumns",
    "Spliced",
    "array_fragment",
    "dumps_spliced",
    "list_fragment",
    "resolve_spliced",
    "splicing_is_exact",
    "unstable_notation",
]

FLOAT32_NOTATIONS = (b"+", b"0.00000")
_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_WINDOW = 16384


class Spliced:
    """A value held as its canonical JSON bytes: written as they are by
    ``dumps_spliced``, decoded by ``resolve_spliced`` when someone reads it."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


def dumps_spliced(value: Any) -> bytes:
    """Canonical JSON bytes of a portable value that may hold ``Spliced`` parts."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=_as_fragment)
    except TypeError as exc:
        reraise_interrupt(exc)
        raise


def resolve_spliced(columns: dict[str, Any]) -> None:
    """Decode, in place, every ``Spliced`` value of a mapping."""
    for key, value in dict.items(columns):
        if type(value) is Spliced:
            dict.__setitem__(columns, key, orjson.loads(value.raw))


class LazyColumns(dict[str, Any]):
    """Columns that decode a ``Spliced`` value the first time it is read, so a check
    that reads the states never pays for decoding the observations."""

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) is Spliced:
            value = orjson.loads(value.raw)
            dict.__setitem__(self, key, value)
        return value

    def undecoded(self, key: str) -> bytes | None:
        """The column's canonical bytes while nobody has read it, else None: decoding
        them gives a detached copy, with no Python values to copy first."""
        value = dict.get(self, key)
        return value.raw if type(value) is Spliced else None

    def get(self, key: str, default: Any = None) -> Any:
        # Not self.get: that is this method.
        return self[key] if key in self else default  # noqa: SIM401

    def items(self) -> Any:
        resolve_spliced(self)
        return dict.items(self)

    def values(self) -> Any:
        resolve_spliced(self)
        return dict.values(self)


def _as_fragment(value: Any) -> Any:
    if type(value) is Spliced:
        return orjson.Fragment(value.raw)
    raise TypeError(f"{type(value).__name__} is not portable JSON")


def unstable_notation(raw: bytes) -> bool:
    """Whether ``raw`` may hold a number written in float32 notation. Plain substring
    searches (a regular expression costs three times more), the longer needle in windows:
    CPython searches a haystack of 30000 bytes or more with its two-way algorithm, a
    third slower on JSON numbers than the search it uses below that size."""
    plus, zeros = FLOAT32_NOTATIONS
    if raw.find(plus) >= 0:
        return True
    reach = _WINDOW + len(zeros) - 1  # windows overlap so no match straddles a border
    return any(raw.find(zeros, start, start + reach) >= 0 for start in range(0, len(raw), _WINDOW))


def list_fragment(items: Sequence[bytes], *, terminated: bool = False) -> Any:
    """One JSON list of many JSON values given as bytes (each followed by a comma when
    ``terminated``): ``Spliced`` when that is exact, else the decoded list (which the
    record's serializer then normalizes)."""
    if not items:
        return []
    if terminated:  # one copy: brackets joined in, the last comma cut from its item
        joined = b"".join([b"[", *items[:-1], items[-1][:-1], b"]"])
    else:
        joined = b"[" + b",".join(items) + b"]"
    if splicing_is_exact() and not unstable_notation(joined):
        return Spliced(joined)
    return orjson.loads(joined)


def array_fragment(array: np.ndarray) -> Any:
    """A finite numeric array as the nested JSON lists ``array.tolist()`` would be
    written as, by one C call."""
    if array.dtype.kind == "f":
        array = array.astype("float64", copy=False)  # tolist() gives doubles
    if splicing_is_exact():
        return Spliced(orjson.dumps(array, option=_NUMPY))
    return array.tolist()


@functools.cache
def splicing_is_exact() -> bool:
    """Probe the installed orjson once: float32 numbers of every binary exponent, as
    array elements and as scalars, must either re-serialize to the same bytes or show a
    float32 notation, and doubles written from arrays must equal doubles written from
    Python floats."""
    import numpy as np  # here: records are read without NumPy (see onrecord._loaded)

    exponents = np.arange(-149, 128)
    mantissas = np.array([1.0, 1.0000001, 1.1, 1.2345678, 1.4142135, 1.5, 1.7320508, 1.9999999])
    grid = (mantissas[:, None] * np.exp2(exponents.astype(np.float64))).ravel()
    decimal = np.outer([1.0, 1.25, 3.3333333, 9.999999], 10.0 ** np.arange(-45, 39)).ravel()
    with np.errstate(over="ignore", under="ignore"):
        probe = np.concatenate((grid, -grid, decimal)).astype(np.float32)
    probe = probe[np.isfinite(probe)]
    for raw in (
        orjson.dumps(probe, option=_NUMPY),
        orjson.dumps(list(probe[:: max(1, len(probe) // 600)]), option=_NUMPY),
    ):
        tokens, rewritten = raw.split(b","), orjson.dumps(orjson.loads(raw)).split(b",")
        changed = [token for token, again in zip(tokens, rewritten, strict=True) if token != again]
        if not all(b"+" in token or b"0.00000" in token for token in changed):
            return False
    doubles = np.concatenate((probe.astype(np.float64), np.sin(np.arange(500.0)) * 1e3))
    return orjson.dumps(doubles, option=_NUMPY) == orjson.dumps(doubles.tolist())
