"""Large arrays live beside the evidence, not inside it.

An observation or action column whose samples are at least ``BLOB_THRESHOLD`` bytes
(images, point clouds) is stored as raw bytes keyed by their sha256; the JSON record
holds ``{"$blob": {"sha256", "dtype", "shape"}}``. The reference is part of the digested
record, so a changed blob is caught like any other change. ``save_json`` writes the
blobs to ``<file>.blobs/<sha256>``; ``load`` reads and verifies them. The folder belongs
to its evidence file. Saving again writes the new record's blobs, renames the record into
place, then removes the blobs no longer referenced: a save killed in between, or a reader
meanwhile, finds the folder holding both records' blobs. So ``load`` accepts an entry
the record does not reference only when it is a whole blob (its bytes hash to its name:
a blob file is only ever renamed into place whole), and refuses any other entry.

Only a Box column (batch layout ``"list"``) can be a blob: a Dict observation with a
``"$blob"`` key is a Dict batch, never mistaken for a reference.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from onrecord._canonical import atomic_write_bytes, check_save_target
from onrecord.episode._verify_files import (
    check_entry,
    read_regular,
    regular_sha256,
    regular_size,
)
from onrecord.errors import ConsistencyError, EvidenceError, SchemaError

if TYPE_CHECKING:  # NumPy is imported where a blob is met: records without any need none
    import numpy as np

__all__ = [
    "BLOB_TAG",
    "BLOB_THRESHOLD",
    "blob_dir",
    "blob_ref",
    "blob_size",
    "decode_blob",
    "find_blob_dir",
    "is_blob",
    "load_blobs",
    "load_blobs_of",
    "prune_blobs",
    "read_while_saved",
    "referenced_blobs",
    "save_blobs",
    "verify_blobs",
]

_HEX64 = re.compile("[0-9a-f]{64}")
# What atomic_write_bytes leaves behind if the process dies mid-write.
_PARTIAL = re.compile(r"\.[0-9a-f]{64}\..*\.tmp")
BLOB_TAG = "$blob"
BLOB_THRESHOLD = 1024
"""Bytes per sample from which a column is stored as a blob."""
READS = 10
"""Reads of a file by ``read_while_saved`` while another process keeps saving it, at most."""
_NUMERIC = "biuf"  # the dtype kinds a Box column can have
_REF_KEYS = frozenset({"sha256", "dtype", "shape"})


def blob_ref(array: np.ndarray, sink: dict[str, bytes]) -> dict[str, Any]:
    """Put ``array``'s bytes in ``sink`` and return the reference that replaces it."""
    import numpy as np

    data = np.ascontiguousarray(array).tobytes()
    digest = hashlib.sha256(data).hexdigest()
    sink[digest] = data
    return {BLOB_TAG: {"sha256": digest, "dtype": array.dtype.str, "shape": list(array.shape)}}


def is_blob(value: Any, layout: Any = "list") -> bool:
    """Whether ``value``, a column or sample laid out as ``layout``, is a blob reference.

    The reference's own keys are required too: one sample of a ``Sequence`` of a Dict
    space with a ``"$blob"`` key is laid out as ``{"$blob": [...]}``, and is no blob."""
    if layout != "list" or type(value) is not dict or len(value) != 1:
        return False
    meta = value.get(BLOB_TAG)
    return type(meta) is dict and meta.keys() == _REF_KEYS


def decode_blob(ref: Mapping[str, Any], blobs: Mapping[str, bytes]) -> np.ndarray:
    """The array a reference stands for (read-only view of the blob's bytes)."""
    import numpy as np

    meta = ref[BLOB_TAG]
    array = np.frombuffer(blobs[meta["sha256"]], dtype=np.dtype(meta["dtype"]))
    return array.reshape(meta["shape"])


def referenced_blobs(data: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every blob reference of an episode record (where blobs may appear)."""
    environment = data["environment"]
    observations = environment["observation_space"]["layout"]
    for value, layout in (
        (data["initial"]["observation"], observations),
        (data["steps"]["observation"], observations),
        (data["steps"]["action"], environment["action_space"]["layout"]),
    ):
        if is_blob(value, layout):
            yield value[BLOB_TAG]


def verify_blobs(
    data: Mapping[str, Any], blobs: Mapping[str, bytes], where: str | None = None
) -> dict[str, bytes]:
    """The blobs the record references, each checked against its hash and size.
    ``where`` is the folder they were read from, named in every complaint."""
    kept = {}
    for meta in referenced_blobs(data):
        expected = blob_size(meta)
        digest = meta["sha256"]
        name = f"{where}/{digest}" if where else f"blob {digest[:16]}…"
        given = blobs.get(digest)
        if given is None:
            raise SchemaError(
                f"the evidence references {name}, which was not "
                + ("found" if where else "given")
                + "; keep the '.blobs' folder next to the evidence file"
            )
        # A private copy, checked: a bytearray the caller changes later is not the record.
        blob = bytes(given)
        if len(blob) != expected:
            raise ConsistencyError(
                f"{name} holds {len(blob)} bytes, its dtype and shape say {expected}: "
                "it was changed after recording"
            )
        if hashlib.sha256(blob).hexdigest() != digest:
            raise ConsistencyError(
                f"{name} does not match its sha256: it was changed after recording"
            )
        kept[digest] = blob
    return kept


def blob_size(meta: Any) -> int:
    """The byte size a well-formed reference announces; SchemaError for any other."""
    if (
        type(meta) is dict
        and meta.keys() == {"sha256", "dtype", "shape"}
        and isinstance(meta["sha256"], str)
        and _HEX64.fullmatch(meta["sha256"])
        and isinstance(meta["dtype"], str)
        and type(meta["shape"]) is list
        and meta["shape"]
        and all(type(size) is int and size >= 0 for size in meta["shape"])
    ):
        import numpy as np

        try:
            dtype = np.dtype(meta["dtype"])
        except (TypeError, ValueError):
            dtype = np.dtype(object)
        if dtype.kind in _NUMERIC and dtype.str == meta["dtype"]:
            return math.prod(meta["shape"]) * dtype.itemsize
    raise SchemaError(
        f"malformed blob reference {meta!r}: expected "
        '{"sha256": 64 hex digits, "dtype": a numeric dtype, "shape": a list of sizes}'
    )


def blob_dir(path: str | os.PathLike[str]) -> Path:
    """Where the blobs of the evidence file ``path`` are kept."""
    return Path(f"{os.fspath(path)}.blobs")


def save_blobs(path: str | os.PathLike[str], blobs: Mapping[str, bytes]) -> None:
    """Write each blob atomically under ``<path>.blobs/``. A file already there is kept
    only if it holds exactly the blob's bytes (a damaged one is written again). A ``path``
    no record can be saved to is refused first, before a blob is written for it."""
    check_save_target(Path(path))
    folder = blob_dir(path)
    for digest, blob in blobs.items():
        target = folder / digest
        if not _holds(target, blob):
            atomic_write_bytes(target, blob)


def prune_blobs(path: str | os.PathLike[str], blobs: Mapping[str, bytes]) -> None:
    """Remove what an earlier save to ``path`` left in its folder (blobs the record no
    longer references, interrupted writes); the folder too once it is empty."""
    folder = blob_dir(path)
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        name = entry.name
        stale = (_HEX64.fullmatch(name) and name not in blobs) or _PARTIAL.fullmatch(name)
        if stale and entry.is_file() and not entry.is_symlink():
            entry.unlink()
    if not blobs and not any(folder.iterdir()):
        folder.rmdir()


def _holds(target: Path, blob: bytes) -> bool:
    try:
        return target.stat().st_size == len(blob) and target.read_bytes() == blob
    except OSError:
        return False


_T = TypeVar("_T")


def read_while_saved(path: str | os.PathLike[str], load: Callable[[], _T]) -> _T:
    """``load()`` of the record file ``path``, again while the file is saved anew.

    A save removes the blobs of the record it replaced once the new record is in place: a
    reader that read the old record may then miss its blobs. A load that failed while
    the file changed under it is no verdict on either record, so it is repeated (up to
    ``READS`` times); one that failed on an unchanged file is the file's own fault."""
    attempt = 1
    while True:
        before = _identity(path)
        try:
            return load()
        except EvidenceError as exc:
            if _identity(path) == before:
                raise
            if attempt == READS:
                raise type(exc)(
                    f"{exc} (the file was saved again during each of {READS} reads: load "
                    "it once the process saving it is done)"
                ) from exc
        attempt += 1


def _identity(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """What changes whenever the file at ``path`` is saved again (a new file is renamed
    into place: its inode, times or size differ), or None when it cannot be found."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def find_blob_dir(path: str | os.PathLike[str]) -> Path:
    """The blobs folder of ``path``: beside it, or beside the file a symlink points to."""
    folder = blob_dir(path)
    if not folder.exists() and Path(path).is_symlink():
        beside_target = blob_dir(Path(path).resolve())
        if beside_target.exists():
            return beside_target
    return folder


def load_blobs(folder: Path, data: Mapping[str, Any]) -> dict[str, bytes]:
    """Read the blobs ``data`` references from ``folder``, refusing any other entry but a
    whole blob (``load_blobs_of``). Nothing is trusted yet: a malformed record yields no
    blobs and fails verification with its own message."""
    return load_blobs_of(folder, (data,))


def load_blobs_of(folder: Path, records: Iterable[Mapping[str, Any]]) -> dict[str, bytes]:
    """Read the blobs any of ``records`` references from ``folder`` (the one folder of a
    JSON Lines file of episodes), refusing any entry none of them references unless it is
    a whole blob (an interrupted or concurrent save's, see the module's docstring). A
    malformed record adds no blobs (and, as the folder cannot be judged without it, no
    entry is refused): its verification fails with its own message."""
    found: dict[str, bytes] = {}
    wanted: dict[str, int | None] = {}  # sha256 -> the size its reference announces
    judged = True
    for data in records:
        try:
            metas = list(referenced_blobs(data))
        except (KeyError, TypeError):
            judged = False
            continue
        for meta in metas:
            if (
                isinstance(meta, Mapping)
                and isinstance(meta.get("sha256"), str)
                and _HEX64.fullmatch(meta["sha256"])
            ):
                wanted[meta["sha256"]] = _announced(meta)
    # A real folder, never a link to one elsewhere (its entries would be read there).
    if not check_entry(folder, directory=True):
        return found  # verification names what is missing
    for entry in sorted(folder.iterdir()) if judged else ():
        name = entry.name
        if name not in wanted and not _PARTIAL.fullmatch(name) and not _whole_blob(entry):
            raise ConsistencyError(
                f"{entry} is not a blob this evidence references: the folder holds "
                "the evidence's blobs (and whole blobs, named by their sha256, an "
                "interrupted save left); it was added after saving — remove it"
            )
    for digest, expected in sorted(wanted.items()):
        target = folder / digest
        try:
            # Never a link, a FIFO or a device (a blob linked to /dev/zero was read until
            # memory ran out, a FIFO blocked forever), and never more bytes than the
            # reference announces: a blob far larger on disk is refused unread.
            size = regular_size(target)
            if expected is not None and size != expected:
                raise ConsistencyError(
                    f"{target} holds {size} bytes, its dtype and shape say {expected}: "
                    "it was changed after recording"
                )
            found[digest] = read_regular(target)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SchemaError(f"{target} cannot be read as a blob: {exc}") from exc
    return found


def _whole_blob(entry: Path) -> bool:
    """Whether ``entry`` is a blob some save wrote whole (a regular file whose bytes hash
    to its name), or is gone: removed meanwhile by the save that made it stale."""
    if not _HEX64.fullmatch(entry.name):
        return False
    try:
        return regular_sha256(entry) == entry.name  # never a link, a FIFO or a device
    except FileNotFoundError:
        return True
    except (OSError, SchemaError):
        return False


def _announced(meta: Any) -> int | None:
    """The size a reference announces, or None for a malformed one (whose verification
    then fails with its own message)."""
    try:
        return blob_size(meta)
    except SchemaError:
        return None
