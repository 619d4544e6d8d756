"""Saving the ledger experiment to a directory and re-verifying it offline.

Layout::

    protocol.json              variants, seeds, expected decisions, check versions
    policy.json                the full acceptance policy
    graders/<grader>.json      the ablation's three policies
    runs/<attempt>/ledger.sqlite, evidence.json, report.json, decision.json
    classic/<run>/evidence.json, report.json, decision.json
    summary.json               decisions and the ablation
    manifest.json              sha256 of every other file

``analyze_ledger_dir`` needs nothing but the directory: it checks the manifest's own
digest (first: a manifest rewritten with a file would vouch for it) and every hash,
reloads (and so re-verifies) every record, re-runs the checks on the saved evidence and
recomputes each decision and the ablation. A link anywhere inside the directory (even to
an identical copy outside it), or a FIFO or device in place of a file, is refused before
anything is hashed or read, as in a run directory (``onrecord.episode._verify_files``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onrecord import AcceptancePolicy
from onrecord._canonical import (
    atomic_write_bytes,
    content_digest,
    file_sha256,
    load_record_bytes,
    record_bytes,
)
from onrecord.domains.ledger._checks import GRADERS, LEDGER_CHECKS
from onrecord.domains.ledger._classic import CLASSIC_RUNS, classic_checks, classic_policy
from onrecord.domains.ledger._experiment import (
    ENVIRONMENT_ID,
    OBSERVER_ID,
    SEEDS,
    VARIANTS,
    LedgerEpisode,
    LedgerResult,
    ablation,
)
from onrecord.domains.ledger._summary import summary_problem
from onrecord.episode import EpisodeEvidence, evaluate_episode
from onrecord.episode._verify_files import read_regular, regular_sha256
from onrecord.errors import DigestMismatch, EvidenceError, InputError, SchemaError

__all__ = ["LedgerAnalysis", "analyze_ledger_dir", "save_ledger_result"]

MANIFEST = "manifest.json"


def _record(schema: str, body: dict[str, Any]) -> bytes:
    data = {"schema": schema, **body}
    return record_bytes({**data, "digest": content_digest(data)})


def _protocol() -> dict[str, Any]:
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    return {
        "library_version": __version__,
        "environment_id": ENVIRONMENT_ID,
        "observer_id": OBSERVER_ID,
        "seeds": list(SEEDS),
        "variants": [
            {
                "name": v.name,
                "handler": v.handler,
                "attempts": [[a.name for a in actions] for actions in v.attempts],
                "expected": list(v.expected),
            }
            for v in VARIANTS
        ],
        "checks": [{"name": c.name, "version": c.version} for c in LEDGER_CHECKS],
        "classic": [
            {"name": r.name, "env_id": r.env_id, "expected": r.expected, "completion": r.completion}
            for r in CLASSIC_RUNS
        ],
        "ablation": "complete (terminated) ledger attempts; graders weakest first: "
        + ", ".join(GRADERS),
    }


def _summary(result: LedgerResult) -> dict[str, Any]:
    return {
        "episodes": [
            {
                "name": e.name,
                "variant": e.variant,
                "seed": e.seed,
                "attempt": e.attempt,
                "decisions": e.decisions,
                "expected": e.expected,
                "complete": e.complete,
                "evidence_digest": e.evidence.digest,
                "report_digest": e.report.digest,
            }
            for e in result.episodes
        ],
        "classic": [
            {"name": c["name"], "decision": c["decision"].decision, "expected": c["expected"]}
            for c in result.classic
        ],
        "ablation": ablation(result.episodes),
        "ok": result.ok,
    }


def _save_attempt(directory: Path, episode: LedgerEpisode) -> None:
    episode.evidence.save_json(directory / "evidence.json")
    episode.report.save_json(directory / "report.json")
    decision = GRADERS["full_policy"].evaluate(episode.report)
    atomic_write_bytes(
        directory / "decision.json", _record("onrecord.ledger-decision/v1", decision.to_dict())
    )


def save_ledger_result(result: LedgerResult, output_dir: str | Path) -> Path:
    """Write evidence, reports, policies, protocol, summary and the sha256 manifest. The
    databases are already under ``output_dir/runs`` when the experiment ran there."""
    out = Path(output_dir)
    for episode in result.episodes:
        directory = out / "runs" / episode.name
        if Path(episode.database).resolve() != (directory / "ledger.sqlite").resolve():
            raise InputError(
                f"the experiment ran in another directory than {out}; run it with "
                "run_ledger_experiment(output_dir) and save to the same directory"
            )
        _save_attempt(directory, episode)
    for run in result.classic:
        directory = out / "classic" / run["name"]
        directory.mkdir(parents=True, exist_ok=True)
        run["evidence"].save_json(directory / "evidence.json")
        run["report"].save_json(directory / "report.json")
        atomic_write_bytes(
            directory / "decision.json",
            _record("onrecord.ledger-decision/v1", run["decision"].to_dict()),
        )
    GRADERS["full_policy"].save_json(out / "policy.json")
    for name, policy in GRADERS.items():
        (out / "graders").mkdir(exist_ok=True)
        policy.save_json(out / "graders" / f"{name}.json")
    atomic_write_bytes(out / "protocol.json", _record("onrecord.ledger-protocol/v1", _protocol()))
    atomic_write_bytes(
        out / "summary.json", _record("onrecord.ledger-summary/v1", _summary(result))
    )
    files = {
        str(p.relative_to(out)): file_sha256(p)
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    atomic_write_bytes(out / MANIFEST, _record("onrecord.manifest/v1", {"sha256": files}))
    return out


@dataclass
class LedgerAnalysis:
    """What ``analyze_ledger_dir`` found."""

    problems: list[str] = field(default_factory=list)
    """Every hash, record or decision that did not verify; empty when all is well."""
    decisions: dict[str, str] = field(default_factory=dict)
    """Recomputed full-policy decision per attempt and native run."""
    ablation: list[dict[str, Any]] = field(default_factory=list)
    """Recomputed ablation rows."""

    @property
    def ok(self) -> bool:
        """True when nothing failed to verify."""
        return not self.problems


def _load(path: Path) -> dict[str, Any]:
    return load_record_bytes(read_regular(path), str(path))  # never a link, FIFO or device


def _verify_manifest(out: Path, analysis: LedgerAnalysis) -> dict[str, Any] | None:
    try:
        manifest = _load(out / MANIFEST)
    except (OSError, EvidenceError, InputError) as exc:
        analysis.problems.append(f"{MANIFEST}: {exc}")
        return None
    listed = manifest.get("sha256")
    if manifest.get("schema") == "onrecord.manifest/v1" and not _sealed(manifest):
        # First: a manifest rewritten along with a file it lists would vouch for it.
        analysis.problems.append(
            f"{MANIFEST}: does not match its digest: the manifest was changed after the "
            "run (a file replaced together with its entry?); restore it or run again"
        )
        return None
    if manifest.get("schema") != "onrecord.manifest/v1" or not (
        isinstance(listed, dict) and all(isinstance(v, str) for v in listed.values())
    ):
        analysis.problems.append(
            f"{MANIFEST}: not the manifest of a ledger experiment (it needs schema "
            "'onrecord.manifest/v1' and 'sha256': {file: hex}); pass the --output-dir "
            "of `onrecord ledger run`"
        )
        return None
    # The world-model store's walk, so both output directories refuse the same things;
    # imported here because its package loads the whole experiment, which only this needs.
    from onrecord.dynamics.experiment._store import output_files

    try:
        # Before any file is hashed: rglob with is_file followed a link (an identical copy
        # outside verified) and skipped a FIFO, which the records' reads then waited on.
        present = {name for name in output_files(out) if Path(name).name != MANIFEST}
    except (OSError, EvidenceError) as exc:
        analysis.problems.append(str(exc))
        return None
    for name in sorted(present - set(listed)):
        analysis.problems.append(f"{name}: not in the manifest (added after the run)")
    for name, expected in sorted(listed.items()):
        if Path(name).is_absolute() or ".." in Path(name).parts:
            analysis.problems.append(f"{name}: names a file outside the directory")
        elif name not in present:
            analysis.problems.append(f"{name}: listed in the manifest but missing")
        elif regular_sha256(out / name) != expected:
            analysis.problems.append(f"{name}: sha256 differs from the manifest")
    return manifest


def _sealed(record: dict[str, Any]) -> bool:
    """Whether a record's ``digest`` is the digest of the rest of it (every ledger
    record, the manifest included, has been written with one)."""
    return record.get("digest") == content_digest(record)


def analyze_ledger_dir(output_dir: str | Path) -> LedgerAnalysis:
    """Re-verify a saved experiment and recompute its decisions and ablation offline."""
    out = Path(output_dir)
    if not out.is_dir():
        raise InputError(f"{out} is not a directory; pass the --output-dir of `ledger run`")
    analysis = LedgerAnalysis()
    if _verify_manifest(out, analysis) is None:
        return analysis
    try:
        summary = _load(out / "summary.json")
        full = AcceptancePolicy.load(out / "policy.json")
        if summary.get("schema") != "onrecord.ledger-summary/v1":
            raise SchemaError(
                f"summary.json has schema {summary.get('schema')!r}, expected "
                "'onrecord.ledger-summary/v1'"
            )
        if not _sealed(summary):
            raise DigestMismatch("summary.json does not match its digest: it was changed")
    except (OSError, EvidenceError, InputError) as exc:
        analysis.problems.append(f"cannot read the summary or policy: {exc}")
        return analysis
    shape = summary_problem(summary)
    if shape is not None:
        analysis.problems.append(f"summary.json: {shape}")
        return analysis
    episodes = [_reanalyze(out, row, full, analysis) for row in summary["episodes"]]
    analysis.ablation = ablation([e for e in episodes if e is not None])
    if analysis.ablation != summary["ablation"]:
        analysis.problems.append("the recomputed ablation differs from summary.json")
    for row in summary["classic"]:
        _reanalyze_classic(out, row, analysis)
    return analysis


_summary_shape_problem = summary_problem
"""The summary's field checks, by the name ``onrecord.cli._experiments`` imports."""


def _reanalyze(
    out: Path, row: dict[str, Any], full: AcceptancePolicy, analysis: LedgerAnalysis
) -> LedgerEpisode | None:
    directory = out / "runs" / row["name"]
    try:
        evidence = EpisodeEvidence.load(directory / "evidence.json")
    except (OSError, EvidenceError, InputError) as exc:
        analysis.problems.append(f"runs/{row['name']}/evidence.json: {exc}")
        return None
    report = evaluate_episode(evidence, LEDGER_CHECKS)
    decisions: dict[str, str] = {
        name: policy.evaluate(report).decision for name, policy in GRADERS.items()
    }
    decisions["full_policy"] = full.evaluate(report).decision
    analysis.decisions[row["name"]] = decisions["full_policy"]
    if decisions != row["decisions"]:
        analysis.problems.append(
            f"{row['name']}: recomputed decisions {decisions} differ from "
            f"the saved {row['decisions']}"
        )
    if decisions["full_policy"] != row["expected"]:
        analysis.problems.append(
            f"{row['name']}: decided {decisions['full_policy']}, the "
            f"protocol requires {row['expected']}"
        )
    return LedgerEpisode(
        row["variant"],
        row["seed"],
        row["attempt"],
        evidence,
        report,
        decisions,
        row["expected"],
        str(directory / "ledger.sqlite"),
    )


def _reanalyze_classic(out: Path, row: dict[str, Any], analysis: LedgerAnalysis) -> None:
    run = next((r for r in CLASSIC_RUNS if r.name == row["name"]), None)
    if run is None:
        analysis.problems.append(f"classic/{row['name']}: unknown run")
        return
    try:
        evidence = EpisodeEvidence.load(out / "classic" / run.name / "evidence.json")
    except (OSError, EvidenceError, InputError) as exc:
        analysis.problems.append(f"classic/{run.name}/evidence.json: {exc}")
        return
    decision = classic_policy(run).evaluate(evaluate_episode(evidence, classic_checks(run)))
    analysis.decisions[run.name] = decision.decision
    if decision.decision != row["decision"] or decision.decision != run.expected:
        analysis.problems.append(
            f"classic/{run.name}: recomputed {decision.decision}, saved "
            f"{row['decision']}, required {run.expected}"
        )
