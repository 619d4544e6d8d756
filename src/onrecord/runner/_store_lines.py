"""Reading a run's ``episodes.jsonl``: each committed line verified (canonical bytes, its
digest, its run, its place in the plan, its action-log block), a torn last line left
unread and a whole record whose newline was changed refused."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import load_record_bytes
from onrecord.episode._verify_files import bounded_lines, open_regular
from onrecord.errors import ConsistencyError, DigestMismatch, SchemaError
from onrecord.runner._actionlog import maybe_open, verify_block
from onrecord.runner._job import EPISODE_RECORD_SCHEMA
from onrecord.runner._sealed import digest_of_canonical

if TYPE_CHECKING:
    from onrecord.runner._store import RunStore

__all__ = ["EpisodeRecord", "iterate_records"]


@dataclass(frozen=True)
class EpisodeRecord:
    """One verified line of ``episodes.jsonl``."""

    data: dict[str, Any]
    """The record: case_id, repeat, seed, evidence, trial, fingerprint, ..."""
    actions_offset: int
    """Where its block starts in ``actions.jsonl``."""

    @property
    def key(self) -> tuple[str, int]:
        """(case_id, repeat)."""
        return (str(self.data["case_id"]), int(self.data["repeat"]))


def iterate_records(store: RunStore, path: Path) -> Iterator[EpisodeRecord]:
    if not path.exists():
        return
    seen: set[tuple[str, int]] = set()
    offset = 0
    actions = store.file("actions.jsonl")
    with open_regular(path) as lines, maybe_open(actions) as log:
        for number, line in bounded_lines(lines, path):  # never a multi-GB line whole
            if not line.endswith(b"\n"):
                _refuse_whole_tail(path, number, line)
                return  # a torn last line: never committed
            record = _verified_line(store, path, number, line, seen)
            verify_block(log, actions, offset, record)
            yield EpisodeRecord(record, offset)
            offset += record["action_log"]["bytes"]


def _refuse_whole_tail(path: Path, number: int, line: bytes) -> None:
    """A killed writer leaves a prefix of a record and its newline; a whole record then
    another byte is none: its newline was changed (not a torn line to drop unsaid)."""
    if line[-2:-1] != b"}":
        return
    try:
        orjson.loads(line[:-1])
    except orjson.JSONDecodeError:
        return
    raise DigestMismatch(
        f"{path}: line {number} ends in {line[-1:]!r} where its newline was: the file was "
        "changed after it was written; restore it from a copy of the run"
    )


def _verified_line(
    store: RunStore, path: Path, number: int, line: bytes, seen: set[tuple[str, int]]
) -> dict[str, Any]:
    where = f"{path}: line {number}"
    record = load_record_bytes(line, where)
    if record.get("schema") != EPISODE_RECORD_SCHEMA:
        raise SchemaError(
            f"{where}: schema is {record.get('schema')!r}, expected {EPISODE_RECORD_SCHEMA!r}"
        )
    # Hashed over the line just proved canonical: the record is not serialized again.
    if record.get("digest") != digest_of_canonical(line, record):
        raise DigestMismatch(
            f"{where} does not match its digest: the episode record was "
            "changed after it was written"
        )
    if record.get("run_id") != store.run_id:
        raise ConsistencyError(
            f"{where} belongs to run {record.get('run_id')!r}, not "
            f"{store.run_id!r}: records from another run were mixed in"
        )
    problem = store.protocol.unplanned(record)
    if problem is not None:
        raise ConsistencyError(
            f"{where}: episode {record.get('case_id')}#{record.get('repeat')} is not an "
            f"episode of this run: {problem}; the record was edited or copied from "
            "another run: restore episodes.jsonl from a copy of the run"
        )
    key = (str(record["case_id"]), int(record["repeat"]))
    if key in seen:
        raise ConsistencyError(f"{where}: episode {key[0]}#{key[1]} is recorded twice")
    seen.add(key)
    return record
