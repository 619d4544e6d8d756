"""Verify one file, whatever onrecord wrote it as: found by its ``schema`` (JSON, or JSON
Lines of records), or by the directory that pins it (a run, a tool-world episode, an
experiment output directory with a sha256 manifest). A file onrecord did not write, or
one that is a view rather than a record (an HTML page, its ``--json`` data), is refused
saying what it is."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from onrecord._canonical import load_record_bytes
from onrecord.cli._bundle import Bundle, digested, named
from onrecord.cli._decisions import (
    COMPARISON_SCHEMA,
    DECISION_SCHEMA,
    LEDGER_DECISION_SCHEMA,
    verify_comparison,
    verify_decision,
)
from onrecord.cli._experiments import (
    MANIFEST_SCHEMA,
    check_in_manifest,
    episodes_of,
    experiment_root,
    verify_closed_loop,
    verify_ledger_protocol,
    verify_ledger_summary,
    verify_remittance_summary,
    verify_worldmodel_protocol,
)
from onrecord.dynamics._evidence_schema import CLOSED_LOOP_SCHEMA, FORECAST_SCHEMA
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.episode._verify_files import read_regular, regular_sha256
from onrecord.errors import DigestMismatch, SchemaError
from onrecord.policy import POLICY_SCHEMA, AcceptancePolicy
from onrecord.report import REPORT_SCHEMA, EvaluationReport

__all__ = ["KINDS", "Listed", "verify_file"]

RUN, RUN_DECISION = "onrecord.run/v1", "onrecord.run.decision/v1"
REGRADE, TOOL_EPISODE = "onrecord.run.regrade/v1", "onrecord.envkit.episode/v1"
_TOOL_PARTS = frozenset(f"onrecord.envkit.{part}/v1" for part in ("audit", "diff", "task"))
_INDEX = frozenset({RUN, REGRADE, TOOL_EPISODE, MANIFEST_SCHEMA})
_HEX64 = re.compile("[0-9a-f]{64}")
_RECORD_MARK = b'"schema":"onrecord.'  # in every record onrecord writes, canonical
_RUN_FILES = frozenset({".lock", "actions.jsonl", "episodes.jsonl", "errors.jsonl"})

Check = Callable[[Path, dict[str, Any]], Any]
_RECORDS: dict[str, Check] = {
    EPISODE_SCHEMA: lambda path, data: EpisodeEvidence.load(path),  # and its .blobs/
    REPORT_SCHEMA: lambda path, data: EvaluationReport.from_dict(data),
    POLICY_SCHEMA: lambda path, data: _policy(path, data),
    FORECAST_SCHEMA: lambda path, data: _forecast(data),
    CLOSED_LOOP_SCHEMA: lambda path, data: verify_closed_loop(path, [(str(path), data)]),
    DECISION_SCHEMA: verify_decision,
    LEDGER_DECISION_SCHEMA: verify_decision,
    COMPARISON_SCHEMA: verify_comparison,
    "onrecord.ledger-protocol/v1": verify_ledger_protocol,
    "onrecord.ledger-summary/v1": verify_ledger_summary,
    "onrecord.remittance-summary/v1": verify_remittance_summary,
}
_LINES = (EPISODE_SCHEMA, FORECAST_SCHEMA, CLOSED_LOOP_SCHEMA)
KINDS = (
    "episode evidence, reports, policies, forecasts, closed-loop records, decisions "
    "(gate, run, ledger, remittance), comparisons, ledger and remittance protocols and "
    "summaries, run and regrade directories, tool-world episodes, experiment output "
    "directories and any file in them"
)


@dataclass
class Listed:
    """How ``onrecord verify DIR`` verifies each file of an experiment output directory
    whose manifest it has just verified: as ``verify FILE`` would, without checking the
    file against the manifest again, nor verifying the directory again from inside it."""

    root: Path
    """The directory whose (sealed) manifest lists the file."""
    files: dict[str, str]
    """Every file the manifest lists → its sha256, each already checked."""
    episodes: dict[Path, dict[str, Any]] = field(default_factory=dict)
    """The episodes of each JSON Lines file verified so far (digest → episode): the
    closed-loop records referencing them are checked against them, not read again."""


def verify_file(path: Path, listed: Listed | None = None) -> Any:
    """Verify the file ``path``: a record, JSON Lines of records, or a file of a directory
    that pins it. Errors name the file (and line) and what failed. ``listed``: the file
    is one of a directory being verified (``Listed``)."""
    from onrecord.cli._records import run_decision_file

    if _HEX64.fullmatch(path.name) and path.parent.name.endswith(".blobs"):
        evidence = path.parent.with_name(path.parent.name.removesuffix(".blobs"))
        if listed is not None and _name(evidence, listed.root) in listed.files:
            return None  # its bytes hash to its name: checked with the evidence it is of
        return named(path, lambda: _blob(path))
    if _HEX64.fullmatch(path.name) and (path.parent.parent / "run.json").is_file():
        return named(path, lambda: _side_file(path))
    # The named path may be a link (the user chose it), but never a FIFO or a device:
    # reading one blocked `verify` forever (or, /dev/zero, until memory ran out).
    raw = read_regular(path, follow=True)
    data = _json(raw)
    if isinstance(data, dict) and isinstance(data.get("schema"), str):
        schema = data["schema"]
        if schema in _INDEX or (
            schema in _TOOL_PARTS and (path.parent / "manifest.json").is_file()
        ):
            if listed is not None and path.parent.absolute() == listed.root.absolute():
                return None  # the very directory being verified
            return _owner(path)  # a directory's file: verify the whole directory
        if schema == RUN_DECISION:
            return named(path, lambda: run_decision_file(path, load_record_bytes(raw, str(path))))
        if schema in _TOOL_PARTS:
            return named(path, lambda: _digest_only(path, load_record_bytes(raw, str(path))))
        if schema in _RECORDS:
            record = load_record_bytes(raw, str(path))  # byte for byte canonical
            verified = named(path, partial(_RECORDS[schema], path, record))
            _pinned(path, listed)
            return verified
    elif data is None and _RECORD_MARK in raw:  # JSON Lines of records, or a damaged one
        if b"\n" not in raw.rstrip(b"\n"):
            load_record_bytes(raw, str(path))  # says it is not valid JSON any more
        verified = _lines(path, raw, listed)
        _pinned(path, listed)
        return verified
    return _other(path, raw, data, listed)


def _pinned(path: Path, listed: Listed | None) -> None:
    """A file inside an experiment output directory must match its manifest entry (a
    directory being verified has checked every entry already)."""
    if listed is not None:
        return
    root = experiment_root(path)
    if root is not None:
        named(path, partial(check_in_manifest, path, root))


def _name(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, as a manifest names it ("" when outside it)."""
    try:
        return path.absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        return ""


def _forecast(data: dict[str, Any]) -> Any:
    from onrecord.dynamics import ForecastEvidence  # with NumPy: only a forecast needs it

    return ForecastEvidence.from_dict(data)


def _policy(path: Path, data: dict[str, Any]) -> AcceptancePolicy:
    digested(path, data)  # first: "changed after saving", not the field it broke
    return AcceptancePolicy.from_dict(data)


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _digest_only(path: Path, data: dict[str, Any]) -> Bundle:
    """A tool-world episode's audit, diff or task record away from its episode."""
    digested(path, data)
    return Bundle(
        "tool-world episode part",
        data["digest"],
        f"{data['schema']}; its episode's manifest.json is not beside it, so only its own "
        "digest was checked",
    )


def _blob(path: Path) -> Bundle:
    """A large array of episode evidence (``EVIDENCE.blobs/SHA256``, or the blobs folder
    of JSON Lines of episodes): its bytes hash to its name, and the evidence it belongs
    to verifies with it."""
    if regular_sha256(path, follow=True) != path.name:
        raise DigestMismatch(f"{path} does not match its sha256 (its name): it was changed")
    evidence = path.parent.with_name(path.parent.name.removesuffix(".blobs"))
    if not evidence.is_file():
        raise SchemaError(f"{path}: the evidence it belongs to, {evidence}, is missing")
    root = experiment_root(evidence)
    if root is not None:
        check_in_manifest(path, root)
    owner = _owner_of(evidence)
    return Bundle("episode blob", path.name, f"of {evidence.name} ({owner})")


def _owner_of(evidence: Path) -> str:
    """Verify the evidence file (one episode, or JSON Lines of them) a blobs folder
    belongs to, with its blobs; say which it is."""
    from onrecord.dynamics.experiment._store import load_episodes

    if evidence.suffix == ".jsonl":
        count = len(load_episodes(evidence))
        return f"{count} episode{'s' if count != 1 else ''}"
    return EpisodeEvidence.load(evidence).digest[:12]


def _side_file(path: Path) -> Bundle:
    """A run's side file (``RUN/files/SHA256``: an audit history, a row diff, a
    database): its bytes hash to its name, and the run verifies with it."""
    from onrecord.cli._records import directory

    if regular_sha256(path, follow=True) != path.name:
        raise DigestMismatch(f"{path} does not match its sha256 (its name): it was changed")
    run = directory(path.parent.parent)
    return Bundle("run side file", path.name, f"of {path.parent.parent.name} ({run.summary})")


def _lines(path: Path, raw: bytes, listed: Listed | None = None) -> Bundle:
    from onrecord.dynamics.experiment._store import verified_episodes

    items: list[Any] = []  # in line order; an episode's place kept until it is verified
    loops: list[tuple[str, dict[str, Any]]] = []
    episodes: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line:
            continue
        where = f"{path}: line {number}"
        data = load_record_bytes(line + b"\n", where)
        schema = data.get("schema")
        if schema not in _LINES:
            hint = " (verify the run directory instead)" if path.name == "episodes.jsonl" else ""
            raise SchemaError(
                f"{where}: schema {schema!r} is not one onrecord writes as JSON Lines "
                f"({', '.join(_LINES)}){hint}"
            )
        if schema == CLOSED_LOOP_SCHEMA:
            loops.append((where, data))
        elif schema == EPISODE_SCHEMA:
            episodes.append((where, data))
            items.append(None)
        else:
            items.append(named(Path(where), partial(_forecast, data)))
    if episodes:  # with the blobs of their large arrays, from the file's .blobs/ folder
        loaded = named(path, partial(verified_episodes, path, episodes))
        if listed is not None:
            listed.episodes[path.absolute()] = {episode.digest: episode for episode in loaded}
        verified = iter(loaded)
        items = [next(verified) if item is None else item for item in items]
    if loops and items:
        raise SchemaError(f"{path} mixes closed-loop records with other records")
    if loops:
        source = episodes_of(path) if listed is not None else None
        known = None if listed is None or source is None else listed.episodes.get(source.absolute())
        return named(path, lambda: verify_closed_loop(path, loops, known))
    kinds = sorted({type(item).__name__ for item in items})
    return Bundle(
        f"{'/'.join(kinds)} lines", items[0].digest, f"{len(items)} records", tuple(items)
    )


def _owner(path: Path) -> Any:
    from onrecord.cli._records import directory

    return directory(path.parent)


def _other(path: Path, raw: bytes, data: Any, listed: Listed | None = None) -> Any:
    """A file without a known schema: verified through the directory that pins it, or
    refused saying what it is."""
    from onrecord.cli._records import directory

    parent = path.parent
    if path.name in _RUN_FILES and (parent / "run.json").is_file():
        return directory(parent)  # a run's lock (its logs are read with the whole run)
    manifest = (
        _json((parent / "manifest.json").read_bytes())
        if (parent / "manifest.json").is_file()
        else None
    )
    if isinstance(manifest, dict) and manifest.get("schema") == TOOL_EPISODE:
        return directory(parent)  # a tool-world episode's log or database
    if listed is not None:  # pinned by the manifest of the directory being verified
        sha = listed.files[_name(path, listed.root)]
        if isinstance(data, dict) and data.get("schema") == "onrecord.worldmodel-protocol/v1":
            return named(path, partial(verify_worldmodel_protocol, path, data, sha))
        return None
    root = experiment_root(path)
    if root is not None:
        sha = named(path, partial(check_in_manifest, path, root))
        if isinstance(data, dict) and data.get("schema") == "onrecord.worldmodel-protocol/v1":
            return named(path, partial(verify_worldmodel_protocol, path, data, sha))
        return Bundle(
            "file of an experiment output",
            sha,
            f"its sha256 is the one {root.name}/manifest.json lists",
        )
    raise SchemaError(f"{path}: {_what(path, raw, data)}")


def _what(path: Path, raw: bytes, data: Any) -> str:
    """Why ``path`` is not a record onrecord can verify, and what to verify instead."""
    schema = data.get("schema") if isinstance(data, dict) else None
    head = raw[:4096].lstrip().lower()
    if isinstance(schema, str) and schema == "onrecord.worldmodel-protocol/v1":
        return (
            "a world-model protocol carries no digest of its own: it is verified against "
            "the manifest.json of the `worldmodel run` directory holding it, and no folder "
            "above it has one (an interrupted run writes it last)"
        )
    if isinstance(schema, str):
        newer = " (a newer version's?)" if schema.startswith("onrecord.") else ""
        return (
            f"unknown schema {schema!r}: not one this version of onrecord writes{newer}; "
            f"onrecord verify reads {KINDS}"
        )
    if isinstance(data, dict) and str(data.get("generator", "")).startswith("onrecord"):
        return (
            "the data of an onrecord HTML page (`--json`), not a record: it carries no "
            "digest; verify the run or report files the page was made from"
        )
    if head.startswith(b"<!doctype html") and b'id="onrecord-data"' in raw:
        return (
            "an onrecord HTML page, a view of a run or report, not a record: it carries "
            "no digest; verify the run or report files the page was made from"
        )
    if raw.startswith(b"SQLite format 3\x00"):
        return (
            "a SQLite database, not a record: onrecord pins a database through the "
            "directory that holds it (a tool-world episode's final.sqlite, a ledger "
            "run's ledger.sqlite); verify that directory"
        )
    if isinstance(_json(raw.split(b"\n", 1)[0]), dict) and b'"tool"' in raw[:4096]:
        return (
            "an action log, not a record: it carries no digest of its own and is pinned "
            "by the run or tool-world episode directory it belongs to; verify that"
        )
    return f"not a record onrecord writes ({_json_kind(raw, data)}); onrecord verify reads {KINDS}"


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def _json_kind(raw: bytes, data: Any) -> str:
    """What the file holds instead of a record: a JSON value that is no object, or where
    its JSON breaks. A file holding ``null`` and a truncated one both read "not JSON"."""
    if isinstance(data, dict):
        return "JSON without an onrecord schema"
    if data is not None:
        return f"a JSON {_JSON_KINDS.get(type(data), 'value')}, not a record object"
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not raw.strip():
            return "an empty file, not JSON"
        where = f"line {exc.lineno}, column {exc.colno}"
        if exc.msg == "unexpected end of data":
            return f"not JSON: it ends in the middle of a value at {where}, truncated or damaged"
        return f"not JSON: {exc.msg} at {where}, damaged or not JSON at all"
    return "a JSON null, not a record object"
