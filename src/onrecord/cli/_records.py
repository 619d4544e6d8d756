"""Open and verify any record onrecord writes, by its schema (files) or layout (dirs).

A file holds one record (episode evidence, a report, a policy, a forecast, a run's
``run.json`` / ``decision.json``, a regrade's ``changes.json``, a manifest) or JSON Lines
of them (forecasts, episodes). A directory is a run, a regrade, a saved tool-world
episode or an experiment output directory with a sha256 manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import orjson

from onrecord._canonical import content_digest, load_record_bytes
from onrecord.dynamics import ForecastEvidence
from onrecord.dynamics._evidence import FORECAST_SCHEMA
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.errors import (
    ConsistencyError,
    DigestMismatch,
    EvidenceError,
    InputError,
    OnrecordError,
    SchemaError,
)
from onrecord.policy import POLICY_SCHEMA, AcceptancePolicy
from onrecord.report import REPORT_SCHEMA, EvaluationReport
from onrecord.runner._graded import Sources, check_graded, graded_source

__all__ = ["Bundle", "load_any", "named", "output_path"]

_RUN, _DECISION, _REGRADE = "onrecord.run/v1", "onrecord.run.decision/v1", "onrecord.run.regrade/v1"
_TOOL_EPISODE, _MANIFEST = "onrecord.envkit.episode/v1", "onrecord.manifest/v1"
_SINGLE: dict[str, Callable[[dict[str, Any]], Any]] = {
    EPISODE_SCHEMA: EpisodeEvidence.from_dict,
    REPORT_SCHEMA: EvaluationReport.from_dict,
    POLICY_SCHEMA: AcceptancePolicy.from_dict,
    FORECAST_SCHEMA: ForecastEvidence.from_dict,
}
_LINES = (EPISODE_SCHEMA, FORECAST_SCHEMA)


@dataclass(frozen=True)
class Bundle:
    """A verified record that is not one object: a directory or a JSON Lines file."""

    kind: str
    """What it is, e.g. ``run directory``."""
    digest: str
    """The digest that pins it (its manifest's or first record's)."""
    summary: str
    """One line: what was verified."""
    items: tuple[Any, ...] = ()
    """Verified contents to show (forecasts, episodes, a report and decision, ...)."""
    changes: tuple[dict[str, Any], ...] = field(default=())
    """A regrade's changed verdicts."""


def load_any(path: str | Path) -> Any:
    """Load and verify any onrecord record; errors name the file (and line) at fault."""
    target = Path(path)
    if target.is_dir():
        return _directory(target)
    if target.suffix == ".jsonl" and (target.parent / "run.json").is_file():
        return _directory(target.parent)  # a run's log: only verifiable as the whole run
    raw = target.read_bytes()
    if b"\n" in raw.rstrip(b"\n"):  # canonical JSON is one line: several are JSON Lines
        return _lines(target, raw)
    return _file(target, load_record_bytes(raw, str(target)))


def _file(path: Path, data: dict[str, Any]) -> Any:
    schema = data.get("schema")
    if schema in _SINGLE:
        return named(path, lambda: _SINGLE[str(schema)](data))
    if schema in (_RUN, _REGRADE, _TOOL_EPISODE, _MANIFEST) and path.parent.is_dir():
        return _directory(path.parent)  # a directory's index file: verify the whole
    if schema == _DECISION:
        return named(path, lambda: _decision_file(path, data))
    raise SchemaError(
        f"{path}: unknown schema {schema!r}; onrecord reads {', '.join(_SINGLE)}, run "
        "and regrade directories, tool-world episodes and experiment output directories"
    )


def _decision_file(path: Path, data: dict[str, Any]) -> Bundle:
    _digested(path, data)
    summary = f"{data['decision']['decision']}, {data['recorded']} of {data['expected']} episodes"
    return Bundle("run decision", data["digest"], summary, (data,))


def _lines(path: Path, raw: bytes) -> Bundle:
    items = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line:
            continue
        where = f"{path}: line {number}"
        data = load_record_bytes(line + b"\n", where)
        if data.get("schema") not in _LINES:
            hint = " (verify the run directory instead)" if path.name == "episodes.jsonl" else ""
            raise SchemaError(
                f"{where}: schema {data.get('schema')!r} is not one onrecord writes as "
                f"JSON Lines ({', '.join(_LINES)}){hint}"
            )
        items.append(named(Path(where), partial(_SINGLE[str(data["schema"])], data)))
    kinds = sorted({type(item).__name__ for item in items})
    return Bundle(
        f"{'/'.join(kinds)} lines", items[0].digest, f"{len(items)} records", tuple(items)
    )


_T = TypeVar("_T")


def named(path: Path, load: Callable[[], _T]) -> _T:
    """Run a loader; its error names the file, and a malformed field is a schema error
    (a record can be digest-consistent and still hold garbage)."""
    try:
        return load()
    except OnrecordError as exc:
        if str(path) in str(exc):
            raise
        raise _same_kind(exc, f"{path}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise SchemaError(f"{path}: malformed record ({type(exc).__name__}: {exc})") from exc


def _same_kind(exc: OnrecordError, message: str) -> OnrecordError:
    kind = type(exc)
    for candidate in (SchemaError, DigestMismatch, ConsistencyError, EvidenceError, InputError):
        if issubclass(kind, candidate):
            return candidate(message)
    return OnrecordError(message)


def _digested(path: Path, data: dict[str, Any]) -> None:
    if data.get("digest") != content_digest(data):
        raise DigestMismatch(f"{path} does not match its digest: it was changed after saving")


def _directory(path: Path) -> Bundle:
    if (path / "run.json").is_file():
        return named(path, lambda: _run_directory(path))
    if (path / "changes.json").is_file():
        return named(path, lambda: _regrade_directory(path))
    if (path / "manifest.json").is_file():
        return named(path, lambda: _manifest_directory(path))
    raise InputError(
        f"{path} is a directory; give the path of a saved record file, or of a run, "
        "regrade, tool-world episode or experiment output directory (this one has no "
        "run.json, changes.json or manifest.json)"
    )


def _run_directory(path: Path) -> Bundle:
    from onrecord.runner import RunStore

    store = RunStore.open(path)
    sources: Sources = {}
    for record in store.records():  # canonical bytes, digests, run id, action-log blocks
        store.saved_episode(record)  # and the side files, by sha256
        sources[record.key] = graded_source(record)
    count = len(sources)
    items: list[Any] = []
    report = _optional(path / "report.json", EvaluationReport.load)
    if report is not None:  # not another run's (the records were read just now)
        check_graded(store, report, str(path / "report.json"), sources)
        items += [report, *_decision(path / "decision.json", report)]
    regrades = sorted(p for p in (path / "regrades").glob("*") if p.is_dir())
    for regrade in regrades:
        _regrade_directory(regrade, store, sources)
    expected = store.protocol.episodes
    return Bundle(
        "run directory",
        store.manifest["digest"],
        f"{count} of {expected} episodes, {len(regrades)} regrades",
        tuple(items),
    )


def _regrade_directory(path: Path, store: Any = None, sources: Sources | None = None) -> Bundle:
    changes = load_record_bytes((path / "changes.json").read_bytes(), str(path / "changes.json"))
    if changes.get("schema") != _REGRADE:
        raise SchemaError(f"{path / 'changes.json'}: schema is {changes.get('schema')!r}")
    _digested(path / "changes.json", changes)
    report = EvaluationReport.load(path / "report.json")
    run = path.resolve().parent.parent
    if store is None and (run / "run.json").is_file():
        from onrecord.runner import RunStore

        store = RunStore.open(run)
    if store is not None:
        check_graded(store, report, str(path / "report.json"), sources)
    items = [report, *_decision(path / "decision.json", report)]
    return Bundle(
        "regrade directory",
        changes["digest"],
        f"{len(changes['changes'])} changed verdicts",
        tuple(items),
        tuple(changes["changes"]),
    )


def _decision(path: Path, report: EvaluationReport) -> Iterator[Any]:
    data = load_record_bytes(path.read_bytes(), str(path))
    if data.get("schema") != _DECISION:
        raise SchemaError(f"{path}: schema is {data.get('schema')!r}, expected {_DECISION!r}")
    _digested(path, data)
    if data.get("report_digest") != report.digest:
        raise ConsistencyError(f"{path} decides a report other than the report.json beside it")
    yield data


def _optional(path: Path, load: Callable[[Path], Any]) -> Any:
    return load(path) if path.is_file() else None


def _manifest_directory(path: Path) -> Bundle:
    manifest = load_record_bytes((path / "manifest.json").read_bytes(), str(path / "manifest.json"))
    schema = manifest.get("schema")
    if schema == _TOOL_EPISODE:
        from onrecord.envkit import ToolEpisode

        episode = ToolEpisode.load(path)
        return Bundle("tool-world episode", episode.digest, f"{episode.manifest['steps']} steps")
    if schema == _MANIFEST and "files" in manifest:  # a world-model experiment
        from onrecord.dynamics.experiment._store import verify_manifest

        files = verify_manifest(path)
        return Bundle("world-model output", content_digest(manifest), f"{len(files)} files")
    if schema == _MANIFEST and "sha256" in manifest:  # a ledger experiment
        from onrecord.domains.ledger import analyze_ledger_dir

        analysis = analyze_ledger_dir(path)
        if analysis.problems:
            raise DigestMismatch(f"{path}: " + "; ".join(analysis.problems[:5]))
        return Bundle("ledger output", manifest["digest"], f"{len(manifest['sha256'])} files")
    raise SchemaError(f"{path / 'manifest.json'}: unknown schema {schema!r}")


_INDEX_FILES = ("run.json", "changes.json", "manifest.json")


def output_path(path: str | Path, option: str) -> Path:
    """Where an output option (``-o``, ``--json``, ``--html``, ``--output``) may write.
    Never over a saved record: ``onrecord report RUN -o RUN/report.json`` (meant:
    ``--json``) replaced the run's report with HTML, and nothing re-creates it. Nor onto
    a directory, which failed naming a temporary file."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{option} {path} is a directory; give a file name inside it")
    _refuse_inside_regrades(target, option)
    if not target.is_file():
        return target
    in_records = any((target.parent / name).is_file() for name in _INDEX_FILES)
    if (in_records and target.suffix.lower() != ".html") or _is_record(target):
        raise InputError(f"{option} {path} would overwrite a saved record; give another file name")
    return target


def _is_record(path: Path) -> bool:
    """Whether ``path`` starts with a saved onrecord record (a digest-carrying object)."""
    with path.open("rb") as handle:
        first = handle.readline(1 << 26)
    try:
        data = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and "digest" in data
        and str(data.get("schema", "")).startswith("onrecord.")
    )


def _refuse_inside_regrades(output: Path, option: str) -> None:
    """``--output RUN/regrades/NEW/decision.json`` created a directory among the run's
    regrades that is not one (no changes.json): ``onrecord verify RUN`` failed from then
    on. Writing into an existing regrade directory is allowed, like beside a run."""
    folder = output.absolute().parent
    for inner, regrades in zip((folder, *folder.parents), folder.parents, strict=False):
        if regrades.name == "regrades" and (regrades.parent / "run.json").is_file():
            if not (inner / "changes.json").is_file():
                raise InputError(
                    f"{option} {output}: {inner} is not a regrade of the run {regrades.parent}"
                    "; a directory there would make the run fail verification; write it "
                    "elsewhere"
                )
            return
