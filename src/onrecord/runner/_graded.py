"""Whether a run directory's ``report.json`` grades the episodes that run recorded.

A report and its decision verify on their own digests; copied together from another
run (another agent over the same tasks), they would verify there too. Each trial names
the evidence it graded (``Trial.source``, the episode's digest), and each episode record
in ``episodes.jsonl`` carries the trial it was first graded with: a report belongs to a
run when every trial grades evidence the run recorded, for an episode it recorded.

The run's own grading (``RUN/report.json``) is more than that: ``grade_store`` builds it
from the records' trials, so each of its trials *is* a record's trial, results, measures
and settings included. A record whose trial was changed and re-sealed (its own digest
recomputed) verified on its digest while the report said otherwise; they are compared
whole. A regrade's trials legitimately differ from the records' in their results: only
what they graded (the source) must agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from onrecord._canonical import canonical_bytes
from onrecord.errors import ConsistencyError
from onrecord.report import EvaluationReport

if TYPE_CHECKING:
    from onrecord.runner._store import EpisodeRecord, RunStore

__all__ = ["Sources", "check_graded", "graded_trial"]

Sources = dict[tuple[str, int], Mapping[str, Any]]
"""(case_id, repeat) → the trial its record carries (as saved)."""


def graded_trial(record: EpisodeRecord) -> Mapping[str, Any]:
    """The trial an episode record carries (its first grading), as saved."""
    trial: Mapping[str, Any] = record.data["trial"]
    return trial


def check_graded(
    store: RunStore,
    report: EvaluationReport,
    where: str,
    sources: Sources | None = None,
    *,
    own: bool,
) -> None:
    """Raise ``ConsistencyError`` unless every trial of ``report`` grades an episode
    recorded in ``store`` (verifying every record on the way, unless the caller already
    read them and gives their ``sources``). ``own``: the report is the run's own grading
    (``RUN/report.json``), whose trials must be the records' trials whole; else a
    regrade's, whose trials need only grade the same evidence."""
    if sources is None:
        sources = {record.key: graded_trial(record) for record in store.records()}
    keys = [(str(trial.case["case_id"]), trial.repeat) for trial in report.trials]
    if any(key not in sources for key in keys):
        raise _not_recorded(store, report, keys, sources, where)
    _check_lock(store, report, where, own=own)
    for key, trial in zip(keys, report.trials, strict=True):
        recorded = sources[key]
        if dict(trial.source) != recorded.get("source"):
            raise ConsistencyError(
                f"{where} grades other evidence for episode {key[0]}#{key[1]} than this run "
                f"recorded ({_digest(trial.source)} vs {_digest(recorded.get('source'))}): "
                "the report was copied from another run; re-grade the run with "
                "`onrecord regrade`"
            )
        if own and canonical_bytes(trial.to_dict()) != canonical_bytes(recorded):
            raise ConsistencyError(
                f"{where} grades episode {key[0]}#{key[1]} differently than its record in "
                f"episodes.jsonl ({_difference(trial.to_dict(), recorded)}): the run's "
                "report is built from its records' trials, so one of the two was edited; "
                "restore the run from a copy"
            )


def _not_recorded(
    store: RunStore,
    report: EvaluationReport,
    keys: list[tuple[str, int]],
    sources: Sources,
    where: str,
) -> ConsistencyError:
    """Why ``report`` grades episodes the run holds no record of. When it grades the
    same evidence as every record the run still holds, the records were deleted (the
    file, or its last lines): blaming the report ("copied from another run; re-grade")
    sent the user to a regrade, which cannot bring them back."""
    missing = [key for key in keys if key not in sources]
    episodes = store.file("episodes.jsonl")
    restore = "restore episodes.jsonl and actions.jsonl from a copy of the run"
    if not episodes.exists():
        return ConsistencyError(
            f"{episodes} is missing, but {where} grades {len(keys)} recorded episodes: "
            f"the run's records were deleted; {restore}"
        )
    graded = {key: trial.source for key, trial in zip(keys, report.trials, strict=True)}
    if all(dict(graded.get(key) or {}) == trial.get("source") for key, trial in sources.items()):
        named = ", ".join(f"{case}#{repeat}" for case, repeat in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return ConsistencyError(
            f"{where} grades episode {named}{more}, which {episodes} no longer holds, and "
            "every episode it does hold as recorded: committed records were deleted (or "
            f"its last lines cut); {restore}"
        )
    case, repeat = missing[0]
    return ConsistencyError(
        f"{where} grades episode {case}#{repeat}, which this run did not record: "
        "the report was copied from another run or edited; re-grade the run with "
        "`onrecord regrade`"
    )


def _check_lock(store: RunStore, report: EvaluationReport, where: str, *, own: bool) -> None:
    """The run settings the report's lock names are the protocol's (a regrade's too:
    both are built with ``lock_extra``), and the run's own grading used the checks and
    versions run.json names: re-sealed, either side could claim other settings."""
    protocol, manifest = store.protocol, store.file("run.json")
    if report.lock.get("run") != protocol.lock_extra()["run"]:
        raise ConsistencyError(
            f"{where}: its lock names other run settings (environment, seeds, max_steps, "
            f"options) than {manifest}: one of the two was edited; restore the run from a copy"
        )
    if own and report.trials and report.lock.get("checks") != dict(protocol.check_versions):
        raise ConsistencyError(
            f"{where} was graded with checks {report.lock.get('checks')}, but {manifest} "
            f"says the run is graded with {dict(protocol.check_versions)}: one of the two "
            "was edited; restore the run from a copy"
        )


def _difference(report: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """Which fields of the trial differ (names only: values may be large)."""
    names = sorted(
        key
        for key in set(report) | set(record)
        if canonical_bytes(report.get(key)) != canonical_bytes(record.get(key))
    )
    return "its " + ", ".join(names) + (" differ" if len(names) > 1 else " differs")


def _digest(source: Any) -> str:
    digest = source.get("digest") if isinstance(source, Mapping) else None
    return str(digest)[:12] if digest else repr(source)[:40]
