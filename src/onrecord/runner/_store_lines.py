"""Reading a run's ``episodes.jsonl``: each committed line verified (canonical bytes, its
digest, its run, its place in the plan, its action-log block), a torn last line left
unread and a whole record whose newline was changed refused."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import content_digest, load_record_bytes
from onrecord._exceptions import describe
from onrecord.episode._evidence import EPISODE_SCHEMA
from onrecord.episode._verify_files import bounded_lines, open_regular
from onrecord.errors import ConsistencyError, DigestMismatch, SchemaError
from onrecord.runner._actionlog import maybe_open, verify_block
from onrecord.runner._job import EPISODE_RECORD_SCHEMA, fingerprint
from onrecord.runner._sealed import digest_of_canonical

if TYPE_CHECKING:
    from onrecord.runner._store import RunStore

__all__ = ["EpisodeRecord", "check_fingerprint", "iterate_records"]


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
    _check_evidence(where, record, _builtin(store))
    _check_versions(where, record, store)
    _check_files(where, record)
    key = (str(record["case_id"]), int(record["repeat"]))
    if key in seen:
        raise ConsistencyError(f"{where}: episode {key[0]}#{key[1]} is recorded twice")
    seen.add(key)
    return record


# Evidence schemas onrecord writes itself, each sealed with its ``content_digest`` and
# graded by a trial whose source names that digest. (A custom provider's evidence is
# whatever it returns: only the record's own digest and the fingerprint bind it.)
# The tool-episode schema is spelt out (``_toolworld.TOOL_EPISODE_SCHEMA``): importing
# that module imports the environment kit, which reading a record needs not.
_SEALED_EVIDENCE = frozenset({EPISODE_SCHEMA, "onrecord.run.tool-episode/v1"})


def _builtin(store: RunStore) -> bool:
    """Whether onrecord's own code wrote the run's evidence: a Gymnasium environment, or
    a provider of onrecord's (``remittance``, ``ledger``, the examples). Their evidence is
    always sealed, so one whose schema was changed is not taken for a custom provider's."""
    environment = store.protocol.environment
    return environment.kind != "provider" or environment.target.startswith("onrecord.")


def _check_evidence(where: str, record: dict[str, Any], builtin: bool) -> None:
    """The record's evidence verifies its own digest, and its trial grades that evidence.
    The record's digest alone is only its own hash: a value changed in the evidence and
    the record re-sealed passed, while the report, which names the evidence it graded by
    that inner digest, still vouched for the old evidence."""
    evidence, trial = record.get("evidence"), record.get("trial")
    sealed = isinstance(evidence, dict) and evidence.get("schema") in _SEALED_EVIDENCE
    if not sealed and not builtin:
        return
    if not isinstance(evidence, dict) or not sealed:
        raise SchemaError(
            f"{where}: the evidence of episode {record.get('case_id')}#{record.get('repeat')} "
            f"is not a record onrecord's environments write (schema "
            f"{_schema(evidence)!r}): the record was edited; restore episodes.jsonl from a "
            "copy of the run"
        )
    if evidence.get("digest") != content_digest(evidence):
        raise DigestMismatch(
            f"{where}: the evidence of episode {record.get('case_id')}#{record.get('repeat')} "
            "does not match its own digest: the evidence was changed after it was recorded; "
            "restore episodes.jsonl from a copy of the run"
        )
    source = trial.get("source") if isinstance(trial, dict) else None
    if not isinstance(source, dict) or source.get("digest") != evidence["digest"]:
        raise ConsistencyError(
            f"{where}: the trial of episode {record.get('case_id')}#{record.get('repeat')} "
            f"grades other evidence ({str(_digest(source))[:12]}) than the record holds "
            f"({str(evidence['digest'])[:12]}): the record was edited; restore "
            "episodes.jsonl from a copy of the run"
        )


def _check_versions(where: str, record: dict[str, Any], store: RunStore) -> None:
    """The record's trial was graded with the checks and versions run.json names (a run
    refuses to record with any others). Only the run's report was compared with them:
    a record of a run killed before its grading, edited and re-sealed with another check
    or version, verified."""
    trial = record.get("trial")
    results = trial.get("results") if isinstance(trial, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise SchemaError(f"{where}: the record's trial has no list of check results")
    graded = {str(result.get("name")): result.get("version") for result in results}
    expected = dict(store.protocol.check_versions)
    twice = " (one named twice)" if len(graded) != len(results) else ""
    if twice or graded != expected:
        raise ConsistencyError(
            f"{where}: episode {record.get('case_id')}#{record.get('repeat')} was graded "
            f"with checks {graded}{twice}, but {store.file('run.json')} says the run "
            f"is graded with {expected}: one of the two was edited; restore the run from "
            "a copy"
        )


def _check_files(where: str, record: dict[str, Any]) -> None:
    """``files`` maps each side file's name to its sha256 (each sha256 is checked when
    the file is read): anything else made ``report`` and ``RunStore.saved_episode`` fail
    with an AttributeError where ``verify`` refused the run."""
    files = record.get("files")
    if not isinstance(files, dict) or not all(isinstance(name, str) for name in files):
        raise SchemaError(
            f"{where}: files is {type(files).__name__} {str(files)[:40]!r}, not a mapping of "
            "side file names to their sha256: the record was edited; restore "
            "episodes.jsonl from a copy of the run"
        )


def _digest(source: Any) -> Any:
    return source.get("digest") if isinstance(source, dict) else source


def _schema(evidence: Any) -> Any:
    return evidence.get("schema") if isinstance(evidence, dict) else type(evidence).__name__


def check_fingerprint(path: Path, record: EpisodeRecord, events: list[dict[str, Any]]) -> None:
    """The record's action-log block holds as many events as it says, and its fingerprint
    is that of its evidence and those events: ``compare`` and the executor tests trust
    the fingerprint, and a re-sealed record could claim any."""
    data = record.data
    where = f"{path}: episode {data['case_id']}#{data['repeat']}"
    if len(events) != data["action_log"]["events"]:
        raise ConsistencyError(
            f"{where} says its action log holds {data['action_log']['events']!r} events, "
            f"but its block holds {len(events)}: the record was edited; restore the run "
            "from a copy"
        )
    try:
        found = fingerprint(data["evidence"], events)
    except (KeyError, TypeError, AttributeError) as exc:  # evidence of another shape
        raise SchemaError(
            f"{where}: its evidence is malformed ({describe(exc)}): the record "
            "was edited; restore the run from a copy"
        ) from exc
    if found != data["fingerprint"]:
        raise ConsistencyError(
            f"{where}: its fingerprint is not that of its evidence and action log: the "
            "record was edited; restore the run from a copy"
        )
