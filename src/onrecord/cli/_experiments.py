"""Records of the experiments onrecord runs, and files checked against a manifest.

A ``worldmodel run`` or ``ledger run`` output directory ends with ``manifest.json``
(``onrecord.manifest/v1``: each file's sha256, sealed by the manifest's own digest; one
without a digest, from an earlier version, is refused as unsealed); any file inside it
is checked against that entry, and some have no other check (``tables.json``,
``models/*.json``, the world-model ``protocol.json``, plots, databases). Closed-loop
decision records (``save_runs``) carry digests and reference their episodes by digest;
the ledger's and the remittance suite's protocols and summaries carry digests too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from onrecord._canonical import file_sha256, load_record_bytes
from onrecord.cli._bundle import Bundle, digested
from onrecord.dynamics._closed_loop_schema import verify_run_record
from onrecord.errors import ConsistencyError, DigestMismatch, SchemaError

__all__ = [
    "MANIFEST_SCHEMA",
    "check_in_manifest",
    "episodes_of",
    "experiment_root",
    "verify_closed_loop",
    "verify_ledger_protocol",
    "verify_ledger_summary",
    "verify_remittance_summary",
    "verify_worldmodel_protocol",
]

MANIFEST_SCHEMA = "onrecord.manifest/v1"


def experiment_root(path: Path) -> Path | None:
    """The ``worldmodel run`` or ``ledger run`` directory holding ``path``: the nearest
    folder above it with an ``onrecord.manifest/v1`` manifest (None when the nearest
    ``manifest.json`` is another kind, e.g. a tool-world episode's)."""
    for folder in path.absolute().parents:
        manifest = folder / "manifest.json"
        if manifest.is_file():
            try:
                schema = orjson.loads(manifest.read_bytes()).get("schema")
            except (orjson.JSONDecodeError, AttributeError):
                return None
            return folder if schema == MANIFEST_SCHEMA else None
    return None


def check_in_manifest(path: Path, root: Path) -> str:
    """``path``'s sha256, which ``root/manifest.json`` must list as it is."""
    from onrecord.dynamics.experiment._store import unsealed_message

    where = root / "manifest.json"
    manifest = load_record_bytes(where.read_bytes(), str(where))
    if "digest" in manifest:  # first: a rewritten manifest, not the entry it changed
        digested(where, manifest)
    listed = manifest.get("files", manifest.get("sha256"))  # worldmodel, ledger
    if not isinstance(listed, dict):
        raise SchemaError(f"{where} is not a manifest: it has no 'files' or 'sha256' map")
    name = path.absolute().relative_to(root.absolute()).as_posix()
    if name not in listed:
        raise DigestMismatch(
            f"{path} is not listed in {where}: it was added after the run; move it elsewhere"
        )
    sha = file_sha256(path)
    if listed[name] != sha:
        raise DigestMismatch(
            f"{path} does not match its sha256 in {where}: it was changed after the run"
        )
    if "digest" not in manifest:  # the file matches, but its entry could be rewritten
        raise SchemaError(unsealed_message(where, f"{name} matches its sha256"))
    return sha


def _closed_loop_record(where: str, record: dict[str, Any]) -> None:
    digested(Path(where), record)  # first: "changed after saving", not the field it broke
    verify_run_record(record, where)  # what load_runs checks, field by field


def episodes_of(path: Path) -> Path | None:
    """Where the closed-loop episodes of ``path`` are: ``NAME.episodes.jsonl`` beside it,
    or a worldmodel run's ``data/closed_loop/NAME.episodes.jsonl``."""
    stem = path.name.removesuffix(".jsonl").removesuffix(".json")
    for candidate in (
        path.with_name(f"{stem}.episodes.jsonl"),
        path.parent.parent / "data" / "closed_loop" / f"{stem}.episodes.jsonl",
    ):
        if candidate.is_file():
            return candidate
    return None


def verify_closed_loop(
    path: Path,
    records: list[tuple[str, dict[str, Any]]],
    episodes: dict[str, Any] | None = None,
) -> Bundle:
    """Closed-loop decision records (``save_runs``): each one's digest and fields, and,
    when their episodes are found, that each references one of them by digest, run with
    its seed. ``episodes`` are those episodes already verified (digest -> episode), when
    the caller has read them."""
    from onrecord.dynamics import load_runs
    from onrecord.dynamics.experiment._store import load_episodes

    for where, record in records:
        _closed_loop_record(where, record)
    models = sorted({record["model_id"] for _, record in records})
    runs = "1 run" if len(records) == 1 else f"{len(records)} runs"
    summary = f"{runs} of {', '.join(models)}"
    source = episodes_of(path)
    if source is None:
        summary += "; their episodes not found beside them, so not checked"
        return Bundle(
            "closed-loop records",
            records[0][1]["digest"],
            summary,
            record=tuple(record for _, record in records),
        )
    if episodes is None:
        episodes = {episode.digest: episode for episode in load_episodes(source)}
    loaded = load_runs(path, episodes)  # each references its episode, run with its seed
    summary += f"; each references its episode in {source.name}"
    return Bundle(
        "closed-loop records",
        records[0][1]["digest"],
        summary,
        tuple(run.episode for run in loaded),
        record=tuple(record for _, record in records),
    )


def verify_ledger_protocol(path: Path, data: dict[str, Any]) -> Bundle:
    """The ledger experiment's protocol: its digest."""
    digested(path, data)
    summary = f"{len(data.get('variants', []))} variants, seeds {data.get('seeds')}"
    return Bundle("ledger protocol", data["digest"], summary)


def verify_ledger_summary(path: Path, data: dict[str, Any]) -> Bundle:
    """The ledger experiment's summary: digest, fields, and the decisions it lists equal
    the ``decision.json`` files beside it (``runs/NAME/``, ``classic/NAME/``)."""
    from onrecord.domains.ledger._artifacts import _summary_shape_problem

    digested(path, data)
    problem = _summary_shape_problem(data)
    if problem is not None:
        raise SchemaError(f"{path}: {problem}")
    rows = [
        *(("runs", row["name"], row["decisions"].get("full_policy")) for row in data["episodes"]),
        *(("classic", row["name"], row["decision"]) for row in data["classic"]),
    ]
    for folder, name, decision in rows:
        _same_decision(path, path.parent / folder / name / "decision.json", decision)
    return Bundle(
        "ledger summary",
        data["digest"],
        f"{len(data['episodes'])} attempts, {len(data['classic'])} classic runs",
        record=data,
    )


def verify_remittance_summary(path: Path, data: dict[str, Any]) -> Bundle:
    """The remittance suite's summary: digest, and each agent's decision equals its
    ``NAME.decision.json`` beside it."""
    digested(path, data)
    agents = data.get("agents")
    if not isinstance(agents, dict) or not all(
        isinstance(row, dict) and row.get("decision") in ("accept", "reject", "indeterminate")
        for row in agents.values()
    ):
        raise SchemaError(f"{path}: 'agents' must map each agent to its decision")
    for name, row in agents.items():
        _same_decision(path, path.with_name(f"{name}.decision.json"), row["decision"])
    return Bundle("remittance summary", data["digest"], f"{len(agents)} agents", record=data)


def _same_decision(path: Path, decision_file: Path, decision: Any) -> None:
    if not decision_file.is_file():
        return
    saved = load_record_bytes(decision_file.read_bytes(), str(decision_file))
    if saved.get("decision") != decision:
        raise ConsistencyError(
            f"{path} says {decision!r} where {decision_file} says {saved.get('decision')!r}"
        )


def verify_worldmodel_protocol(path: Path, data: dict[str, Any], sha: str) -> Bundle:
    """The world-model experiment's protocol (pinned by its run's manifest, no digest of
    its own): every field this version writes, of the kind it writes."""
    from onrecord.dynamics.experiment._analyze import check_saved_protocol

    check_saved_protocol(data, path, str(path))  # as `analyze --replay` checks it
    summary = f"horizons {data['horizons']}, {len(data['models'])} models"
    return Bundle("world-model protocol", sha, summary)
