"""Canonical JSON, digests, atomic record files, and state bytes.

One serializer (orjson) produces every byte that is hashed: UTF-8, sorted keys, no
whitespace, no NaN or Infinity. The portable value codec (``to_portable``) lives in
``_portable`` and is re-exported here.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from onrecord._loaded import loaded
from onrecord._nesting import MAX_NESTING, TooDeep, refuse_deep
from onrecord._portable import (
    NDARRAY_TAG,
    PASSTHROUGH,
    from_portable,
    narrowed,
    to_portable,
    walk,
)
from onrecord.errors import DigestMismatch, InputError, PortabilityError, SchemaError

__all__ = [
    "MAX_NESTING",
    "NDARRAY_TAG",
    "TooDeep",
    "atomic_write_bytes",
    "canonical_bytes",
    "check_save_target",
    "content_digest",
    "digest_bytes",
    "file_sha256",
    "from_portable",
    "fsync_directory",
    "load_record_bytes",
    "no_string_values",
    "only_dtype_string",
    "record_bytes",
    "refuse_deep_bytes",
    "reraise_interrupt",
    "state_bytes",
    "to_portable",
    "usual_dir_mode",
]

_OPTIONS = orjson.OPT_SORT_KEYS


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


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in blocks (never the whole file in memory)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_digest(record: Mapping[str, Any]) -> str:
    """Digest of a record: sha256 of its canonical bytes without the ``digest`` field."""
    if "digest" in record:
        record = {key: value for key, value in record.items() if key != "digest"}
    return digest_bytes(canonical_bytes(record))


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """The exact bytes a record is saved as: canonical JSON plus a newline."""
    return canonical_bytes(record) + b"\n"


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file and rename: readers never see a
    half-written file, a crash never leaves one; an ``OSError`` names ``path``."""
    target = Path(path)
    check_save_target(target)
    tmp = ""
    try:
        while True:  # locked until renamed: a cleaner unlinks only unlocked leftovers
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "wb") as handle:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if os.fstat(fd).st_nlink:
                    os.fchmod(fd, 0o666 & ~_umask())  # shared as open() makes files, not 0600
                    handle.write(data)
                    handle.flush()
                    os.fsync(fd)
                    os.replace(tmp, target)
                    break
        fsync_directory(target.parent)  # else a power loss could undo the rename
    except BaseException as exc:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        ours = f".{target.name}."  # a temporary file's name starts so; no name is taken as one
        name = os.path.basename(os.fsdecode(getattr(exc, "filename", None) or ours))
        if isinstance(exc, OSError) and exc.errno and name.startswith(ours):
            raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(target)) from exc
        raise
    return target


def check_save_target(target: Path) -> None:
    """Refuse a path no file can be saved to (a directory, a path through a file) before
    anything is written, naming it and the fix; make its missing parent folders."""
    if target.is_dir() and not target.is_symlink():
        raise InputError(
            f"cannot save to {target}: it is a directory; give a file's path, or remove it"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise InputError(
            f"cannot save to {target}: a file is where its folder {target.parent} must "
            "be; choose another path or move that file"
        ) from exc


def fsync_directory(path: Path) -> None:
    """fsync a directory: the names created, renamed or removed in it become durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def usual_dir_mode() -> int:
    """The mode ``mkdir`` gives a directory under the process umask: a directory made by
    ``tempfile.mkdtemp`` (owner-only) is set to it before it is renamed into place."""
    return 0o777 & ~_umask()


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
    try:
        canonical = canonical_bytes(data)
    except PortabilityError as exc:
        # orjson reads deeper nesting (1024 levels) than it writes (255): such a file
        # parsed, then failed here with a message for callers *writing* a value, naming
        # no file. No record onrecord writes is nested this deeply.
        raise SchemaError(
            f"{what} is nested too deeply (more than 255 levels of lists and objects), so "
            "it is not a record onrecord wrote; the file is damaged or was made by hand"
        ) from exc
    # The record, or the record and the one newline a file or a line of a log ends
    # with: a second newline is an edit like any other byte. (A file whose final
    # newline was removed still reads, as a line does: the values are all there.)
    if raw != canonical and (raw[-1:] != b"\n" or raw[:-1] != canonical):
        raise DigestMismatch(
            f"{what} is not in canonical form: it was edited after saving; "
            "restore the original file"
        )
    return data


_STATE_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS | PASSTHROUGH


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
    raw = _state_bytes(value, path)
    refuse_deep_bytes(raw, path)
    return raw


def refuse_deep_bytes(raw: bytes, path: str) -> None:
    """Refuse state bytes nested deeper than ``MAX_NESTING``, naming ``path``: orjson
    writes up to 254 levels, so a state nested 250 deep was kept at its step and then
    made the whole record fail to seal, with no path. Two counts clear every usual state."""
    if raw.count(b"[") + raw.count(b"{") > MAX_NESTING:
        refuse_deep(orjson.loads(raw), None, path)


def _state_bytes(value: Any, path: str) -> bytes:
    try:
        raw = orjson.dumps(value, option=_STATE_OPTIONS, default=_numpy_fallback)
    except TypeError as exc:
        reraise_interrupt(exc)
        raw = _dumps_native(value)
    if not raw:
        # Raises with the path when something is not portable, or is nested too deep
        # (orjson's limit, or Python's: the walk alone raised a bare RecursionError).
        to_portable(value, path)
        raise PortabilityError(
            f"{path} could not be serialized; return plain JSON values or numpy numbers and arrays",
            path,
        )
    nulls = b"null" in raw
    if not nulls and (no_string_values(raw) or only_dtype_string(value, raw)):
        return raw
    # An array beside the null or string never reads back equal (it comes back a list),
    # and the comparison would convert every element: go straight to the next test.
    if (_holds_array(value) or not _reads_back_equal(raw, value)) and (nulls or _not_plain(value)):
        walk(value, path)
    return raw


def _dumps_native(value: Any) -> bytes:
    """The state bytes again with every array in native byte order, or b"" when that
    does not help: orjson refuses a big-endian array (read from a wire format or a file)
    without calling its ``default`` hook, so one was refused though ``info`` kept it."""
    numpy = loaded("numpy")
    if numpy is None:  # no array anywhere: nothing to change
        return b""
    try:
        native = _native_arrays(value, numpy.ndarray)
        return orjson.dumps(native, option=_STATE_OPTIONS, default=_numpy_fallback)
    except TypeError as exc:
        reraise_interrupt(exc)
    except RecursionError:  # a structure that contains itself: the walk names it
        pass
    return b""


def _native_arrays(value: Any, ndarray: Any) -> Any:
    if isinstance(value, ndarray) and not value.dtype.isnative:
        return value.astype(value.dtype.newbyteorder("="))
    if type(value) is dict:
        return {key: _native_arrays(item, ndarray) for key, item in value.items()}
    if type(value) is list or type(value) is tuple:
        return [_native_arrays(item, ndarray) for item in value]
    return value


def _holds_array(value: Any) -> bool:
    """Whether ``value`` is a NumPy array or a dict with one among its values, the usual
    observer output (a C scan of the types; other arrays are left to the comparison)."""
    numpy = loaded("numpy")
    if numpy is None:
        return False
    kind = type(value)
    if kind is dict:
        return numpy.ndarray in map(type, value.values())
    return kind is numpy.ndarray


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


def only_dtype_string(value: Any, raw: bytes) -> bool:
    """Whether the one string value in ``raw`` is the ``dtype`` of a tagged array
    ``value`` (``{"$ndarray": {"dtype", "shape", "data"}}``: what ``to_portable`` makes of
    an array, and the runner's default observer returns every step). Ten quotes are its
    four keys and that value, a ``str``, so nothing else was written as text; without
    this, each such state was parsed back to be compared, 3 µs a step."""
    if type(value) is not dict or len(value) != 1:
        return False
    inner = value.get(NDARRAY_TAG)
    return (
        type(inner) is dict
        and len(inner) == 3
        and type(inner.get("dtype")) is str
        and raw.count(b'"') == 10
        and raw.find(b"\\") < 0
    )


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
    numpy = loaded("numpy")
    if numpy is not None and (type(value) is numpy.ndarray or isinstance(value, numpy.generic)):
        return value.dtype.kind not in "biuf"
    return True


def _numpy_fallback(value: Any) -> Any:
    """orjson's hook for numpy values it does not write natively (non-contiguous arrays,
    float16 scalars, longdoubles a double holds exactly), and plain subclasses."""
    if loaded("numpy") is None:  # then no value is a NumPy one
        return _plain_subclass(value)
    import numpy as np

    if isinstance(value, np.ma.MaskedArray):  # its data alone would pass masked values as real
        raise TypeError("a masked array")
    # A longdouble: item() would give a longdouble back, and orjson call this forever.
    wide = isinstance(value, np.ndarray | np.generic) and value.dtype.kind == "f"
    if wide and value.dtype.itemsize > 8:
        doubled = narrowed(value)
        if doubled is None:
            raise TypeError("a longdouble that a double cannot hold exactly")
        value = doubled if isinstance(value, np.ndarray) else doubled[()]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            raise TypeError("non-finite array")
        if not value.ndim:  # orjson refuses a 0-d array; ascontiguousarray made it [x]
            return value.item()
        # orjson writes native byte order only: a big-endian array (read from a wire
        # format or a file) came back here until its recursion limit, and was refused.
        return np.ascontiguousarray(value, value.dtype.newbyteorder("="))
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.item()
    return _plain_subclass(value)


def _plain_subclass(value: Any) -> Any:
    """What ``to_portable`` makes of the subclasses orjson does not write (a namedtuple,
    a float subclass, a ``MappingProxyType``): observer state took them for unknown
    objects, refused without a path, although ``info`` kept the same value."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"unsupported type {type(value).__name__}")
