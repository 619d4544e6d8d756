"""Reading a saved tool-world episode's records: each verified against its digest, and
against the manifest's sha256 once the episode is loaded (a file may change after)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import canonical_bytes, content_digest
from onrecord.envkit._sql import load_reals
from onrecord.episode._verify_files import read_regular
from onrecord.errors import DigestMismatch, SchemaError

if TYPE_CHECKING:
    from onrecord.envkit.episode import ToolEpisode

__all__ = ["pinned_bytes", "verified_record"]


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


def verified_record(
    path: Path, schema: str, episode: ToolEpisode | None = None, reals: str | None = None
) -> dict[str, Any]:
    """The record in ``path``, verified; its field ``reals`` with infinite REALs decoded
    (``save_reals``), so a loaded episode holds what the live world held."""
    data = read_regular(path) if episode is None else pinned_bytes(episode, path.name)
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("schema") != schema:
        raise SchemaError(f"{path} must hold a record with schema {schema!r}")
    if canonical_bytes(record) + b"\n" != data or record.get("digest") != content_digest(record):
        raise DigestMismatch(f"{path} does not match its digest: it was changed after saving")
    if reals is not None and b'"$real"' in data:
        record[reals] = load_reals(record[reals])
    return record
