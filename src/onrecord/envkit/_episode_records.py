"""Reading a saved tool-world episode's records: each verified against its digest, and
against the manifest's sha256 once the episode is loaded (a file may change after)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import canonical_bytes, content_digest
from onrecord.episode._verify_files import read_regular
from onrecord.errors import DigestMismatch, SchemaError

if TYPE_CHECKING:
    from onrecord.envkit.episode import ToolEpisode

__all__ = ["pinned_bytes", "record_of", "verified_record"]


def pinned_bytes(episode: ToolEpisode, name: str) -> bytes:
    """A file of a loaded episode, refused unless it still has its manifest sha256 (it
    may have been changed since ``load``). Parts built in memory are not re-hashed."""
    data = read_regular(episode.path / name)
    expected = (episode.manifest.get("files") or {}).get(name)
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise DigestMismatch(
            f"{episode.path / name} does not match the sha256 in its manifest: "
            "it was changed after the episode was loaded"
        )
    return data


def verified_record(path: Path, schema: str) -> dict[str, Any]:
    """The record in ``path``, verified (see :func:`record_of`)."""
    return record_of(path, read_regular(path), schema)


def record_of(path: Path, data: bytes, schema: str) -> dict[str, Any]:
    """The record ``data`` (the bytes of ``path``), verified: canonical JSON with the
    ``schema`` and a ``digest`` of its own. A part edited and pinned again by a re-sealed
    manifest still fails here: the manifest's sha256 is not the record's digest."""
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("schema") != schema:
        raise SchemaError(f"{path} must hold a record with schema {schema!r}")
    if canonical_bytes(record) + b"\n" != data or record.get("digest") != content_digest(record):
        raise DigestMismatch(
            f"{path} does not match its digest: it was changed after saving; restore the "
            "episode from a copy"
        )
    return record
