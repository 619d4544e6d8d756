"""Record bytes without serializing an episode's evidence again.

A captured episode's ``EpisodeEvidence`` already holds its canonical JSON bytes (capture
serialized them once, splicing its columns in, see ``onrecord._splice``). The episode
record of a run embeds that evidence, digests the record and fingerprints the evidence.
Doing so from ``evidence.data`` parsed the whole record (~117 KB for a 500-step CartPole
episode) and serialized it three more times: most of the runner's own cost per episode.
Here the evidence's bytes are spliced into the record as they are, and the record's
digest is computed over the bytes around its ``digest`` field, so every byte written is
what ``record_bytes`` of the parsed record would write (the tests compare the two).

Reading a record back verifies its canonical form and its digest; the digest is hashed
the same way, over the verified bytes, instead of serializing the record a second time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import canonical_bytes, content_digest
from onrecord._splice import dumps_spliced
from onrecord.episode import EpisodeEvidence

if TYPE_CHECKING:
    from onrecord.runner._provider import SavedEpisode

__all__ = [
    "BLOB_PREFIX",
    "CapturedEvidence",
    "captured_fingerprint",
    "digest_of_canonical",
    "events_bytes",
    "evidence_fragment",
    "record_line",
    "saved_evidence",
]

BLOB_PREFIX = "blob/"
"""A run's side file of a large array: ``blob/`` and the array's sha256."""


def saved_evidence(saved: SavedEpisode) -> EpisodeEvidence:
    """Episode evidence from a run store record, with its large arrays (side files).
    Here, not beside the Gymnasium provider: reading a run needs no Gymnasium."""
    blobs = {
        name.removeprefix(BLOB_PREFIX): blob
        for name, blob in saved.files.items()
        if name.startswith(BLOB_PREFIX)
    }
    return EpisodeEvidence.from_dict(saved.evidence, blobs)


class CapturedEvidence(Mapping[str, Any]):
    """The saved form of a captured episode's evidence, as a read-only mapping that is
    parsed only if someone reads it; the runner writes the episode's own bytes."""

    __slots__ = ("_parsed", "episode")

    def __init__(self, episode: EpisodeEvidence) -> None:
        self.episode = episode
        self._parsed: dict[str, Any] | None = None

    def _data(self) -> dict[str, Any]:
        if self._parsed is None:
            self._parsed = self.episode.data
        return self._parsed

    def __getitem__(self, key: str) -> Any:
        return self._data()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __repr__(self) -> str:
        return f"CapturedEvidence({self.episode!r})"


def evidence_fragment(evidence: Mapping[str, Any]) -> Any:
    """What the record holds as its ``evidence``: a captured episode's canonical bytes,
    spliced in as they are, else a plain copy of the mapping (serialized with the
    record)."""
    if type(evidence) is CapturedEvidence:
        return orjson.Fragment(evidence.episode.to_bytes()[:-1])
    return dict(evidence)


def captured_fingerprint(evidence: CapturedEvidence, volatile_steps: str, action_log: bytes) -> str:
    """The fingerprint of a captured episode (``fingerprint``: the evidence without its
    digest and the ``volatile_steps`` column, then the action log) from the episode's
    parsed record, whose columns capture keeps as their canonical bytes (``Spliced``):
    written as they are, never decoded. ``action_log`` is the canonical JSON list."""
    # The evidence's own parsed record, never handed out: read here, not changed.
    data = evidence.episode._data
    core = {key: value for key, value in data.items() if key != "digest"}
    core["steps"] = {
        key: value for key, value in dict.items(data["steps"]) if key != volatile_steps
    }
    hasher = hashlib.sha256(b"[")
    hasher.update(dumps_spliced(core))
    hasher.update(b",")
    hasher.update(action_log)
    hasher.update(b"]")
    return hasher.hexdigest()


def record_line(record: Mapping[str, Any]) -> bytes:
    """``record_bytes`` of ``record`` with its ``digest`` (``content_digest``) added,
    serialized once: the parts sorted before and after the ``digest`` key are written
    apart, hashed around it and joined with it."""
    head = canonical_bytes({key: value for key, value in record.items() if key < "digest"})
    tail = canonical_bytes({key: value for key, value in record.items() if key > "digest"})
    if "digest" in record or head == b"{}" or tail == b"{}":  # not a shape records have
        whole = {**record, "digest": content_digest(record)}
        return canonical_bytes(whole) + b"\n"
    body, rest = memoryview(head)[:-1], memoryview(tail)[1:]  # views, not copies
    hasher = hashlib.sha256(body)
    hasher.update(b",")
    hasher.update(rest)
    digest = hasher.hexdigest().encode()
    return b"".join((body, b',"digest":"', digest, b'",', rest, b"\n"))


def digest_of_canonical(raw: bytes, record: Mapping[str, Any]) -> str:
    """``content_digest(record)`` for ``raw``, the canonical bytes ``record`` was parsed
    from (``load_record_bytes`` proved them canonical): hashed around the stored digest
    field when it is where canonical JSON puts it, else computed from the record (which
    then differs from any digest stored in a wrong form or place)."""
    stored = record.get("digest")
    line = raw[:-1] if raw.endswith(b"\n") else raw
    if type(stored) is str and stored.isascii() and stored.isalnum():
        start = len(canonical_bytes({key: record[key] for key in record if key < "digest"})) - 1
        field = b',"digest":"' + stored.encode() + b'",'
        if start > 1 and line[start : start + len(field)] == field:
            view = memoryview(line)
            hasher = hashlib.sha256(view[:start])
            hasher.update(b",")
            hasher.update(view[start + len(field) :])
            return hasher.hexdigest()
    return content_digest(record)


def events_bytes(action_log: Sequence[Mapping[str, Any]], volatile: frozenset[str]) -> bytes:
    """The canonical JSON list of action-log events without their ``volatile`` keys."""
    return canonical_bytes(
        [
            {key: value for key, value in event.items() if key not in volatile}
            for event in action_log
        ]
    )
