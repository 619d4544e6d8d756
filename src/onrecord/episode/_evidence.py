"""``EpisodeEvidence``: the immutable, self-verifying record of one episode."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import (
    atomic_write_bytes,
    canonical_bytes,
    digest_bytes,
    load_record_bytes,
    to_portable,
)
from onrecord._splice import LazyColumns, dumps_spliced
from onrecord.episode import _history
from onrecord.episode._blobs import (
    decode_blob,
    find_blob_dir,
    is_blob,
    load_blobs,
    prune_blobs,
    read_while_saved,
    save_blobs,
    verify_blobs,
)
from onrecord.episode._coverage import coverage_issues, ending
from onrecord.episode._verify import verify_episode_shape
from onrecord.episode._verify_files import read_regular
from onrecord.errors import (
    ConsistencyError,
    DigestMismatch,
    EvidenceError,
    PortabilityError,
    SchemaError,
)

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = ["EPISODE_SCHEMA", "EpisodeEvidence"]

EPISODE_SCHEMA = "onrecord.episode/v1"


class EpisodeEvidence:
    """One episode as recorded. Immutable; verifies its own digest; parsed at most once
    (lazily, on first access), never once per check."""

    __slots__ = ("_blobs", "_bytes", "_cache", "_digest", "_pending")

    _blobs: dict[str, bytes]
    _bytes: bytes
    _cache: dict[str, Any] | None
    _digest: str
    _pending: dict[str, Any] | None

    def __init__(self) -> None:
        raise TypeError("EpisodeEvidence is made by capture_episode, from_dict or load")

    @classmethod
    def _from_trusted(
        cls, data: dict[str, Any], blobs: dict[str, bytes] | None = None
    ) -> EpisodeEvidence:
        """Seal a record built by onrecord itself (already portable and consistent).

        The record is serialized once, in two halves split where the sorted key
        ``digest`` belongs, so the digest can be spliced in without a second pass.
        ``steps`` columns may be ``Spliced`` bytes: they are written as they are and
        decoded on first read (``onrecord._splice``)."""
        head = dumps_spliced({key: data[key] for key in data if key < "digest"})
        tail = dumps_spliced({key: data[key] for key in data if key > "digest"})
        body, rest = memoryview(head)[:-1], memoryview(tail)[1:]  # views, not copies
        hasher = hashlib.sha256(body)
        hasher.update(b",")
        hasher.update(rest)
        digest = hasher.hexdigest()
        data["digest"] = digest
        record = b"".join((body, b',"digest":"', digest.encode(), b'",', rest))
        evidence = cls._seal(record, digest, None, blobs or {})
        object.__setattr__(evidence, "_pending", data)
        return evidence

    @classmethod
    def _seal(
        cls, record: bytes, digest: str, parsed: dict[str, Any] | None, blobs: dict[str, bytes]
    ) -> EpisodeEvidence:
        evidence = object.__new__(cls)
        object.__setattr__(evidence, "_blobs", blobs)
        object.__setattr__(evidence, "_bytes", record)
        object.__setattr__(evidence, "_digest", digest)
        object.__setattr__(evidence, "_cache", parsed)
        object.__setattr__(evidence, "_pending", None)
        return evidence

    @property
    def _data(self) -> dict[str, Any]:
        """The parsed record, shared by every accessor (never handed out)."""
        if self._cache is None:
            object.__setattr__(self, "_cache", self._parse())
        assert self._cache is not None
        return self._cache

    def _parse(self) -> dict[str, Any]:
        """The record as Python values: what capture built, its spliced columns decoded
        when first read (cheaper than parsing the whole record), else from the bytes."""
        pending = self._pending
        if pending is None:
            parsed: dict[str, Any] = orjson.loads(self._bytes)
            return parsed
        pending["steps"] = LazyColumns(pending["steps"])
        object.__setattr__(self, "_pending", None)
        return pending

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("EpisodeEvidence is immutable")

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], blobs: Mapping[str, bytes] | None = None
    ) -> EpisodeEvidence:
        """Rebuild evidence from its dict form, verifying schema, digest and consistency.
        ``blobs`` holds the large arrays the record references (``episode.blobs``)."""
        return cls._from_dict(data, blobs, None)

    @classmethod
    def _from_dict(
        cls, data: Mapping[str, Any], blobs: Mapping[str, bytes] | None, where: str | None
    ) -> EpisodeEvidence:
        """``from_dict``; ``where`` names the folder the blobs were read from."""
        if not isinstance(data, Mapping):
            raise SchemaError(f"episode evidence must be a mapping, got {type(data).__name__}")
        schema = data.get("schema")
        if schema != EPISODE_SCHEMA:
            raise SchemaError(
                f"schema is {schema!r}, expected {EPISODE_SCHEMA!r}: this is not "
                "onrecord episode evidence, or it needs another onrecord version"
            )
        stored = data.get("digest")
        head = canonical_bytes({key: data[key] for key in data if key < "digest"})
        tail = canonical_bytes({key: data[key] for key in data if key > "digest"})
        if head == b"{}" or tail == b"{}":  # not a record: say what is missing
            body = canonical_bytes({key: data[key] for key in data if key != "digest"})
            _check_digest(stored, digest_bytes(body))
            verify_episode_shape(orjson.loads(body))
            raise SchemaError("episode evidence is missing the fields around its digest")
        actual = _digest_of_halves(memoryview(head)[:-1], memoryview(tail)[1:])
        _check_digest(stored, actual)
        record = b"".join((head[:-1], b',"digest":"', actual.encode(), b'",', tail[1:]))
        # A private copy the caller cannot mutate, parsed from the bytes just made.
        detached = orjson.loads(record)
        if detached != data:
            _refuse_unstorable(data)
        return cls._verified(record, detached, blobs, where)

    @classmethod
    def _verified(
        cls,
        record: bytes,
        detached: dict[str, Any],
        blobs: Mapping[str, bytes] | None,
        where: str | None,
    ) -> EpisodeEvidence:
        """Seal canonical ``record`` bytes whose digest is checked, once ``detached`` (its
        parsed, unshared form) passes the shape and consistency checks."""
        verify_episode_shape(detached)
        _verify_derived(detached)
        kept = verify_blobs(detached, blobs or {}, where)
        return cls._seal(record, detached["digest"], detached, kept)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EpisodeEvidence:
        """Read and verify evidence saved by ``save_json``, and its blobs from
        ``<path>.blobs/`` (or from beside the file a symlinked ``path`` points to). Every
        ``EvidenceError`` names the file at fault.

        A save to ``path`` by another process meanwhile is read whole, old or new
        (``_blobs.read_while_saved``)."""
        return read_while_saved(path, lambda: cls._load_once(path))

    @classmethod
    def _load_once(cls, path: str | os.PathLike[str]) -> EpisodeEvidence:
        raw = read_regular(Path(path), follow=True)  # never a FIFO or a device
        folder = find_blob_dir(path)
        try:
            return cls._from_saved(raw, str(path), lambda d: load_blobs(folder, d), str(folder))
        except EvidenceError as exc:
            if os.fspath(path) in str(exc) or str(folder) in str(exc):
                raise
            raise type(exc)(f"{os.fspath(path)}: {exc}") from exc

    @classmethod
    def _from_saved(
        cls,
        raw: bytes,
        what: str,
        blobs_of: Callable[[dict[str, Any]], Mapping[str, bytes]],
        where: str | None = None,
    ) -> EpisodeEvidence:
        """Verify saved bytes (a file, a pickle): parsed once and proved canonical, they
        are hashed as they are around the digest field, never serialized again. ``where``
        names the folder the blobs come from."""
        data = load_record_bytes(raw, what)
        record = raw.rstrip(b"\n")
        # The digest field starts where the keys sorted before it end.
        start = len(canonical_bytes({key: data[key] for key in data if key < "digest"})) - 1
        stored = data.get("digest")
        field = b',"digest":"' + str(stored).encode() + b'",'
        if data.get("schema") != EPISODE_SCHEMA or record[start : start + len(field)] != field:
            return cls._from_dict(data, blobs_of(data), where)  # explains what is wrong
        view = memoryview(record)
        _check_digest(stored, _digest_of_halves(view[:start], view[start + len(field) :]))
        return cls._verified(record, data, blobs_of(data), where)

    def save_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the evidence atomically in its canonical form; large arrays go to
        ``<path>.blobs/`` first, so the record never points at a missing blob, and blobs
        an earlier save to ``path`` left there are removed after it (``load`` accepts
        them until then: a save killed in between leaves the earlier or the new record,
        loadable). A ``path`` that is a directory is refused before anything is written."""
        save_blobs(path, self._blobs)
        written = atomic_write_bytes(path, self.to_bytes())
        prune_blobs(path, self._blobs)
        return written

    @property
    def blobs(self) -> dict[str, bytes]:
        """The large observation/action arrays the record references, by sha256."""
        return dict(self._blobs)

    def to_bytes(self) -> bytes:
        """The exact bytes ``save_json`` writes."""
        return self._bytes + b"\n"

    @property
    def data(self) -> dict[str, Any]:
        """A detached copy of the whole record."""
        copy: dict[str, Any] = orjson.loads(self._bytes)
        return copy

    @property
    def digest(self) -> str:
        """sha256 of the canonical record without its digest field."""
        return self._digest

    def _part(self, key: str) -> Any:
        value = self._data[key]
        return orjson.loads(orjson.dumps(value)) if isinstance(value, dict | list) else value

    @property
    def case(self) -> dict[str, Any]:
        """The case record: identity (case_id, source_id, content_digest) and content."""
        return dict(self._part("case"))

    @property
    def environment(self) -> dict[str, Any]:
        """Environment and observer ids, seed, max_steps, options, spec, spaces, completion."""
        return dict(self._part("environment"))

    @property
    def initial(self) -> dict[str, Any]:
        """The first observation, reset info, observer state and any reset error."""
        initial = dict(self._part("initial"))
        layout = self._data["environment"]["observation_space"]["layout"]
        if is_blob(initial["observation"], layout):
            initial["observation"] = decode_blob(initial["observation"], self._blobs).tolist()
        return initial

    @property
    def final_state(self) -> Any:
        """The observer's state read before cleanup (None if it could not be read)."""
        return self._part("final_state")

    @property
    def ended(self) -> str:
        """How the episode ended: see ``onrecord.episode.ENDINGS``."""
        return str(self._data["ended"])

    @property
    def coverage_issues(self) -> tuple[str, ...]:
        """Every reason the evidence is incomplete."""
        return tuple(self._data["coverage_issues"])

    @property
    def measures(self) -> dict[str, float]:
        """Continuous measures of the episode (return, steps)."""
        return dict(self._data["measures"])

    def __len__(self) -> int:
        """Number of attempted steps."""
        return len(self._data["steps"]["status"])

    def __repr__(self) -> str:
        case_id = self._data["case"]["case_id"]
        return (
            f"EpisodeEvidence(case_id={case_id!r}, ended={self.ended!r}, "
            f"attempts={len(self)}, digest={self._digest[:12]!r})"
        )

    def __rich__(self) -> Printed:
        """A table, as ``onrecord show`` prints it (``rich.print``, IPython with rich)."""
        from onrecord._display import evidence_view

        return evidence_view(self)

    def _repr_html_(self) -> str:
        """A table for Jupyter: record text escaped, no script, colours inherited."""
        from onrecord._display_html import evidence_html

        return evidence_html(self)

    def __reduce__(self) -> tuple[Any, tuple[bytes, dict[str, bytes]]]:
        # Pickled as its bytes (and blobs) and verified again on arrival, so evidence
        # sent to another process is checked there like a file would be.
        return _unpickle, (self._bytes, self._blobs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EpisodeEvidence) and other._digest == self._digest

    def __hash__(self) -> int:
        return hash(self._digest)

    def attempts(self) -> list[dict[str, Any]]:
        """One dict per attempted step; see ``onrecord.episode._history.attempts``."""
        return _history.attempts(self._data, self._blobs)

    def transitions(self) -> list[dict[str, Any]]:
        """One dict per successful step: action, observation, reward, flags, info, state."""
        return _history.transitions(self._data, self._blobs)

    def actions(self) -> list[Any]:
        """Encoded actions of the successful steps, in order."""
        return _history.actions(self._data, self._blobs)

    def states(self) -> list[Any]:
        """Every observer state in order: after reset, after each attempt, before cleanup."""
        return _history.states(self._data)

    def failures(self) -> list[dict[str, Any]]:
        """Simulator, setup, observer and cleanup failures (not the agent's mistakes)."""
        return _history.failures(self._data)


def _unpickle(raw: bytes, blobs: dict[str, bytes]) -> EpisodeEvidence:
    return EpisodeEvidence._from_saved(raw, "pickled episode evidence", lambda _: blobs)


def _digest_of_halves(before: memoryview, after: memoryview) -> str:
    """sha256 of ``before + b"," + after`` without joining them: the canonical body of a
    record whose digest field was cut out between the two."""
    hasher = hashlib.sha256(before)
    hasher.update(b",")
    hasher.update(after)
    return hasher.hexdigest()


def _refuse_unstorable(data: Mapping[str, Any]) -> None:
    """The record's bytes read back unequal to ``data``: orjson writes NaN and Infinity as
    null (and a tuple as a list, which is harmless). Name a value JSON cannot hold rather
    than verify, silently, a record that differs from what was given."""
    try:
        to_portable(dict(data), "$")
    except PortabilityError as exc:
        raise SchemaError(
            f"episode evidence holds a value JSON cannot: {exc}; saved evidence never "
            "does, so the record was edited"
        ) from exc


def _check_digest(stored: Any, actual: str) -> None:
    if stored != actual:
        raise DigestMismatch(
            f"digest is {stored!r} but the content hashes to {actual!r}: "
            "the evidence was changed after it was recorded"
        )


def _verify_derived(data: dict[str, Any]) -> None:
    if data["ended"] != ending(data):
        raise ConsistencyError(
            f"ended is {data['ended']!r} but the recorded steps say {ending(data)!r}"
        )
    stored = data["coverage_issues"]
    if stored != coverage_issues(data) and stored != coverage_issues(data, legacy=True):
        raise ConsistencyError(
            "coverage_issues do not match the recorded steps and events; "
            "the record was assembled by hand or edited"
        )
