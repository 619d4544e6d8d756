"""Reading one episode's block of a run's ``actions.jsonl`` without trusting its record.

A record says where its block starts and how many bytes it holds; a forged record can
say anything (its digest is only its own hash). A block is hashed, and its events read,
a line at a time, so a record claiming gigabytes never has them read into memory whole.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, BinaryIO

from onrecord._canonical import load_record_bytes
from onrecord.episode._verify_files import MAX_LINE, open_regular
from onrecord.errors import DigestMismatch, SchemaError

__all__ = ["maybe_open", "read_events", "verify_block"]

_CHUNK = 1 << 20


def verify_block(log: BinaryIO | None, path: Path, offset: int, record: dict[str, Any]) -> None:
    """Raise unless the action log ``log`` (None: there is none) holds the block
    ``record`` names, by its sha256."""
    meta = record["action_log"]
    if type(meta["bytes"]) is not int or meta["bytes"] < 0:  # read(-1) read the whole log
        raise SchemaError(
            f"{path}: the action log of {record['case_id']}#{record['repeat']} is "
            f"{meta['bytes']!r} bytes long, not a count of bytes: the record was forged"
        )
    # An empty block is hashed too (the sha256 of no bytes): its record must say so.
    digest = hashlib.sha256()
    left = meta["bytes"]
    if log is not None and left:
        log.seek(offset)
        while left and (chunk := log.read(min(left, _CHUNK))):
            digest.update(chunk)
            left -= len(chunk)
    # A block that ends before its length: the sha256 of the bytes found could match
    # only a record forged to fit them, but the record still claims bytes nobody wrote.
    if left or digest.hexdigest() != meta["sha256"]:
        raise DigestMismatch(
            f"{path}: the action log of {record['case_id']}#"
            f"{record['repeat']} (bytes {offset}..{offset + meta['bytes']}) "
            "does not match its sha256: the log was changed or truncated"
        )


def read_events(path: Path, offset: int, size: int) -> list[dict[str, Any]]:
    """The events of the block of ``size`` bytes at ``offset`` (already verified by its
    sha256), each line bounded as every line of a run's logs is."""
    events: list[dict[str, Any]] = []
    with open_regular(path) as handle:
        handle.seek(offset)
        left = size
        while left:
            line = handle.readline(min(left, MAX_LINE + 1))
            if not line:  # the file was cut since it was verified
                break
            if len(line) > MAX_LINE:
                raise SchemaError(
                    f"{path}: an action-log line at byte {offset + size - left} is longer "
                    f"than {MAX_LINE} bytes, the most onrecord writes: the file was "
                    "damaged or forged; restore it from a copy of the run"
                )
            left -= len(line)
            if line.strip():
                events.append(load_record_bytes(line, "an action-log event"))
    return events


class _NoFile:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def maybe_open(path: Path) -> Any:
    """The action log open for reading, or a stand-in for None when there is none."""
    return open_regular(path) if path.exists() else _NoFile()
