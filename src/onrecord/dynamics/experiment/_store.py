"""Run-directory storage: JSON Lines of verified records and the sealed sha256 manifest.

``manifest.json`` (``onrecord.manifest/v1``) maps every other file of the directory to
its sha256 and carries a ``digest`` of its own, like every other onrecord record: a file
replaced together with its entry in the manifest no longer verifies. A manifest written
before manifests were sealed has no digest; it still loads (``unsealed``), and
``onrecord verify`` refuses it saying so.

An output directory is often verified after it was received from someone else, so it is
read as a run directory is (``onrecord.episode._verify_files``): a link inside it (even to
an identical copy outside) or a FIFO or device in place of a file is refused, naming it,
before any file is hashed or parsed. Only the directory the user names may be a link.

Episodes saved as JSON Lines keep their large arrays as the single-file form does: in one
``<file>.jsonl.blobs/`` folder beside the file, holding exactly the blobs its episodes
reference.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onrecord._canonical import (
    atomic_write_bytes,
    canonical_bytes,
    content_digest,
    file_sha256,
    load_record_bytes,
)
from onrecord._exceptions import naming_file
from onrecord.episode._blobs import (
    find_blob_dir,
    load_blobs_of,
    prune_blobs,
    read_while_saved,
    save_blobs,
)
from onrecord.episode._verify_files import _kind, check_entry, read_regular, regular_sha256
from onrecord.errors import DigestMismatch, EvidenceError, SchemaError

__all__ = [
    "MANIFEST_SCHEMA",
    "VerifiedManifest",
    "load_episodes",
    "output_files",
    "read_json",
    "save_episodes",
    "unsealed_message",
    "verified_episodes",
    "verify_manifest",
    "write_json",
    "write_manifest",
]

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "onrecord.manifest/v1"


def write_json(path: Path, value: Any) -> Path:
    """Canonical JSON, atomically."""
    return atomic_write_bytes(path, canonical_bytes(value) + b"\n")


def read_json(path: Path) -> Any:
    """Read a file written by ``write_json`` inside an output directory (never through a
    link, never a FIFO or device), insisting on canonical bytes."""
    return load_record_bytes(read_regular(path), str(path))


def output_files(root: Path) -> set[str]:
    """The relative POSIX name of every file under the output directory ``root``,
    refusing (``SchemaError`` naming it) a link or a special file anywhere inside.

    ``Path.rglob`` with ``is_file`` followed a link to a file (an identical copy outside
    the directory verified) and silently skipped a FIFO; a link to a directory is refused
    too, rather than reported as its files missing. ``root`` itself may be a link."""
    found: set[str] = set()
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                path = folder / entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                elif check_entry(path):  # raises for a link, FIFO, device or socket
                    found.add(path.relative_to(root).as_posix())
    return found


def save_episodes(path: Path, episodes: Iterable[Any]) -> Path:
    """Episodes as JSON Lines, one canonical record each; their blobs (large
    observations and actions) go to ``<path>.blobs/`` first, so no line ever points at a
    missing blob, and blobs an earlier save to ``path`` left there are removed after."""
    episodes = list(episodes)
    blobs: dict[str, bytes] = {}
    for episode in episodes:
        blobs.update(episode.blobs)
    save_blobs(path, blobs)
    written = atomic_write_bytes(path, b"".join(e.to_bytes() for e in episodes))
    prune_blobs(path, blobs)
    return written


def load_episodes(path: Path) -> list[Any]:
    """Read and verify every episode of a JSON Lines file, with the blobs its episodes
    reference from ``<path>.blobs/``; an error names the line. ``path`` may be a link
    (commands read files the user names this way); a FIFO or device is refused rather
    than waited on. In an output directory ``verify_manifest`` has refused links first.
    A save to ``path`` by another process meanwhile is read whole, old or new
    (``read_while_saved``), as ``EpisodeEvidence.load`` reads one record."""
    return read_while_saved(path, lambda: _load_episodes_once(path))


def _load_episodes_once(path: Path) -> list[Any]:
    numbered = [
        (f"{path}:{number}", load_record_bytes(line, f"{path}:{number}"))
        for number, line in enumerate(read_regular(path, follow=True).splitlines(), start=1)
        if line
    ]
    return verified_episodes(path, numbered)


def verified_episodes(path: Path, numbered: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Verify the episode records of the JSON Lines file ``path`` (each given with the
    place it is named by, its line), their blobs read from ``<path>.blobs/``: the folder
    holds exactly the blobs some line references."""
    from onrecord.episode import EpisodeEvidence

    folder = find_blob_dir(path)
    try:
        blobs = load_blobs_of(folder, [record for _, record in numbered])
    except EvidenceError as exc:
        raise naming_file(path, exc) from exc
    episodes = []
    for where, record in numbered:
        try:
            episodes.append(EpisodeEvidence._from_dict(record, blobs, str(folder)))
        except EvidenceError as exc:
            raise naming_file(where, exc) from exc
    return episodes


def write_manifest(root: Path) -> dict[str, str]:
    """Hash every file under ``root`` (except the manifest) and write the manifest,
    sealed with its own digest."""
    files = {
        p.relative_to(root).as_posix(): file_sha256(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    body = {"schema": MANIFEST_SCHEMA, "files": files}
    write_json(root / MANIFEST, {**body, "digest": content_digest(body)})
    return files


@dataclass(frozen=True)
class VerifiedManifest:
    """What ``verify_manifest`` checked."""

    files: dict[str, str]
    """Every file of the directory (but the manifest) → its sha256."""
    digest: str
    """The manifest's digest (for an unsealed manifest, what its content hashes to)."""
    sealed: bool
    """False for a manifest without a digest of its own (written by an earlier version):
    nothing shows that it was not rewritten along with a file it lists."""


def unsealed_message(path: Path, checked: str = "every file matches its sha256") -> str:
    """Why ``onrecord verify`` refuses the unsealed manifest ``path`` although
    ``checked`` held, and what to do."""
    return (
        f"{path} has no digest: it was written by an earlier onrecord version, before "
        "manifests were sealed, so nothing shows it was not rewritten along with a file "
        f"it lists ({checked}). Re-run the experiment into a new directory for a sealed "
        f"manifest; `onrecord worldmodel analyze --replay {path.parent}` still recomputes "
        "every table and report from the saved evidence"
    )


def verify_manifest(root: Path) -> VerifiedManifest:
    """Check the manifest's digest (when it has one), every listed hash, and that no
    file was added or removed. An unsealed manifest (no digest) is verified as far as
    it goes and returned with ``sealed=False``: the caller decides whether to accept it."""
    _check_root(root)
    path = root / MANIFEST
    if not check_entry(path):  # a link or a FIFO as the manifest is refused here
        if (root / "protocol.json").is_file():
            raise SchemaError(
                f"{path} is missing: {root} is an interrupted worldmodel run (the "
                "manifest is written last); re-run into a new directory"
            )
        raise SchemaError(f"{path} is missing: this is not a worldmodel run directory")
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        raise SchemaError(_NOT_A_MANIFEST.format(path=path))
    digest = content_digest(manifest)
    sealed = "digest" in manifest
    if sealed and manifest["digest"] != digest:
        raise DigestMismatch(
            f"{path} does not match its digest: the manifest was changed after the run; "
            "restore it or re-run"
        )
    files = manifest.get("files")
    if (
        not isinstance(files, dict)
        or not all(isinstance(sha, str) for sha in files.values())
        or set(manifest) - {"schema", "files", "digest"}
    ):
        raise SchemaError(_NOT_A_MANIFEST.format(path=path))
    _check_files(root, files)
    return VerifiedManifest(files, digest, sealed)


def _check_root(root: Path) -> None:
    """Refuse a ``root`` that is no directory, saying so: a file or FIFO given as the run
    directory was reported as "FILE/manifest.json is missing", and a path that does not
    exist as "not a worldmodel run directory". ``root`` itself may be a link."""
    try:
        mode = os.stat(root).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise SchemaError(
            f"{root} does not exist: give the directory `onrecord worldmodel run "
            "--output-dir` wrote"
        ) from None
    if not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else _kind(mode)
        raise SchemaError(
            f"{root} is {kind}, not a directory: give the directory `onrecord worldmodel "
            "run --output-dir` wrote, not a file inside it"
        )


_NOT_A_MANIFEST = (
    "{path} is not an onrecord.manifest/v1 with a files -> sha256 map; "
    "restore the manifest the run wrote, or re-run"
)


def _check_files(root: Path, files: Mapping[str, str]) -> None:
    present = {name for name in output_files(root) if Path(name).name != MANIFEST}
    extra, missing = sorted(present - set(files)), sorted(set(files) - present)
    if extra or missing:
        raise DigestMismatch(
            f"run directory {root} differs from its manifest: added {extra}, missing {missing}"
        )
    for name, digest in files.items():
        if regular_sha256(root / name) != digest:
            raise DigestMismatch(
                f"{name} does not match its sha256 in the manifest: it was "
                "changed after the run; restore it or re-run"
            )
