"""Run-directory storage: JSON Lines of verified records and the sha256 manifest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from onrecord._canonical import atomic_write_bytes, canonical_bytes, load_record_bytes
from onrecord.errors import DigestMismatch, SchemaError

__all__ = [
    "load_episodes",
    "read_json",
    "save_episodes",
    "sha256_file",
    "verify_manifest",
    "write_json",
    "write_manifest",
]

MANIFEST = "manifest.json"


def write_json(path: Path, value: Any) -> Path:
    """Canonical JSON, atomically."""
    return atomic_write_bytes(path, canonical_bytes(value) + b"\n")


def read_json(path: Path) -> Any:
    """Read a file written by ``write_json``, insisting on canonical bytes."""
    return load_record_bytes(path.read_bytes(), str(path))


def save_episodes(path: Path, episodes: Iterable[Any]) -> Path:
    """Episodes as JSON Lines, one canonical record each."""
    return atomic_write_bytes(path, b"".join(e.to_bytes() for e in episodes))


def load_episodes(path: Path) -> list[Any]:
    """Read and verify every episode of a JSON Lines file."""
    from onrecord.episode import EpisodeEvidence

    return [
        EpisodeEvidence.from_dict(load_record_bytes(line, f"{path}:{n}"))
        for n, line in enumerate(path.read_bytes().splitlines(), start=1)
        if line
    ]


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(root: Path) -> dict[str, str]:
    """Hash every file under ``root`` (except the manifest) and write the manifest."""
    files = {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    write_json(root / MANIFEST, {"schema": "onrecord.manifest/v1", "files": files})
    return files


def verify_manifest(root: Path) -> dict[str, str]:
    """Check every listed hash and that no file was added or removed."""
    path = root / MANIFEST
    if not path.exists():
        if (root / "protocol.json").is_file():
            raise SchemaError(
                f"{path} is missing: {root} is an interrupted worldmodel run (the "
                "manifest is written last); re-run into a new directory"
            )
        raise SchemaError(f"{path} is missing: this is not a worldmodel run directory")
    manifest = read_json(path)
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if (
        not isinstance(manifest, dict)
        or manifest.get("schema") != "onrecord.manifest/v1"
        or not isinstance(files, dict)
        or not all(isinstance(digest, str) for digest in files.values())
    ):
        raise SchemaError(
            f"{path} is not an onrecord.manifest/v1 with a files -> sha256 map; "
            "restore the manifest the run wrote, or re-run"
        )
    present = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name != MANIFEST
    }
    extra, missing = sorted(present - set(files)), sorted(set(files) - present)
    if extra or missing:
        raise DigestMismatch(
            f"run directory {root} differs from its manifest: added {extra}, missing {missing}"
        )
    for name, digest in files.items():
        if sha256_file(root / name) != digest:
            raise DigestMismatch(
                f"{name} does not match its sha256 in the manifest: it was "
                "changed after the run; restore it or re-run"
            )
    return files
