"""Large arrays live beside the evidence, not inside it.

An observation or action column whose samples are at least ``BLOB_THRESHOLD`` bytes
(images, point clouds) is stored as raw bytes keyed by their sha256; the JSON record
holds ``{"$blob": {"sha256", "dtype", "shape"}}``. The reference is part of the digested
record, so a changed blob is caught like any other change. ``save_json`` writes the
blobs to ``<file>.blobs/<sha256>``; ``load`` reads and verifies them.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from onrecord._canonical import atomic_write_bytes
from onrecord.errors import ConsistencyError, SchemaError

__all__ = [
    "BLOB_TAG",
    "BLOB_THRESHOLD",
    "blob_dir",
    "blob_ref",
    "decode_blob",
    "is_blob",
    "load_blobs",
    "referenced_blobs",
    "save_blobs",
    "verify_blobs",
]

_HEX64 = re.compile("[0-9a-f]{64}")
BLOB_TAG = "$blob"
BLOB_THRESHOLD = 1024
"""Bytes per sample from which a column is stored as a blob."""


def blob_ref(array: np.ndarray, sink: dict[str, bytes]) -> dict[str, Any]:
    """Put ``array``'s bytes in ``sink`` and return the reference that replaces it."""
    data = np.ascontiguousarray(array).tobytes()
    digest = hashlib.sha256(data).hexdigest()
    sink[digest] = data
    return {BLOB_TAG: {"sha256": digest, "dtype": array.dtype.str, "shape": list(array.shape)}}


def is_blob(value: Any) -> bool:
    """Whether ``value`` is a blob reference."""
    return type(value) is dict and len(value) == 1 and BLOB_TAG in value


def decode_blob(ref: Mapping[str, Any], blobs: Mapping[str, bytes]) -> np.ndarray:
    """The array a reference stands for (read-only view of the blob's bytes)."""
    meta = ref[BLOB_TAG]
    array = np.frombuffer(blobs[meta["sha256"]], dtype=np.dtype(meta["dtype"]))
    return array.reshape(meta["shape"])


def referenced_blobs(data: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every blob reference of an episode record (where blobs may appear)."""
    for value in (
        data["initial"]["observation"],
        data["steps"]["observation"],
        data["steps"]["action"],
    ):
        if is_blob(value):
            yield value[BLOB_TAG]


def verify_blobs(data: Mapping[str, Any], blobs: Mapping[str, bytes]) -> dict[str, bytes]:
    """The blobs the record references, each checked against its hash and size."""
    kept = {}
    for meta in referenced_blobs(data):
        digest = meta["sha256"]
        blob = blobs.get(digest)
        if blob is None:
            raise SchemaError(
                f"the evidence references blob {digest[:16]}…, which was not "
                "given; keep the '.blobs' folder next to the evidence file"
            )
        if hashlib.sha256(blob).hexdigest() != digest:
            raise ConsistencyError(
                f"blob {digest[:16]}… does not match its sha256: it was changed after recording"
            )
        expected = int(np.prod(meta["shape"])) * np.dtype(meta["dtype"]).itemsize
        if len(blob) != expected:
            raise ConsistencyError(
                f"blob {digest[:16]}… holds {len(blob)} bytes, its dtype and shape say {expected}"
            )
        kept[digest] = blob
    return kept


def blob_dir(path: str | os.PathLike[str]) -> Path:
    """Where the blobs of the evidence file ``path`` are kept."""
    return Path(f"{os.fspath(path)}.blobs")


def save_blobs(path: str | os.PathLike[str], blobs: Mapping[str, bytes]) -> None:
    """Write each blob atomically under ``<path>.blobs/``."""
    folder = blob_dir(path)
    for digest, blob in blobs.items():
        target = folder / digest
        if not target.exists():
            atomic_write_bytes(target, blob)


def load_blobs(path: str | os.PathLike[str], data: Mapping[str, Any]) -> dict[str, bytes]:
    """Read the blobs ``data`` references from ``<path>.blobs/``. Nothing is trusted yet:
    a malformed record yields no blobs and fails verification with its own message."""
    folder = blob_dir(path)
    found: dict[str, bytes] = {}
    try:
        metas = list(referenced_blobs(data))
    except (KeyError, TypeError):
        return found
    for meta in metas:
        digest = meta.get("sha256") if isinstance(meta, Mapping) else None
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            continue  # not a file name we would ever have written
        target = folder / digest
        if target.exists():
            found[digest] = target.read_bytes()
    return found
