"""Whether a run directory's ``report.json`` grades the episodes that run recorded.

A report and its decision verify on their own digests; copied together from another
run (another agent over the same tasks), they would verify there too. Each trial names
the evidence it graded (``Trial.source``, the episode's digest), and each episode record
in ``episodes.jsonl`` carries the trial it was first graded with: a report belongs to a
run when every trial grades evidence the run recorded, for an episode it recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onrecord.errors import ConsistencyError
from onrecord.report import EvaluationReport

if TYPE_CHECKING:
    from onrecord.runner._store import EpisodeRecord, RunStore

__all__ = ["Sources", "check_graded", "graded_source"]

Sources = dict[tuple[str, int], Any]
"""(case_id, repeat) → the evidence its record's trial graded."""


def graded_source(record: EpisodeRecord) -> Any:
    """What the trial an episode record carries graded (its ``Trial.source``)."""
    return record.data["trial"].get("source")


def check_graded(
    store: RunStore, report: EvaluationReport, where: str, sources: Sources | None = None
) -> None:
    """Raise ``ConsistencyError`` unless every trial of ``report`` grades an episode
    recorded in ``store`` (verifying every record on the way, unless the caller already
    read them and gives their ``sources``)."""
    if sources is None:
        sources = {record.key: graded_source(record) for record in store.records()}
    keys = [(str(trial.case["case_id"]), trial.repeat) for trial in report.trials]
    for key in keys:
        if key not in sources:
            raise ConsistencyError(
                f"{where} grades episode {key[0]}#{key[1]}, which this run did not record: "
                "the report was copied from another run or edited; re-grade the run with "
                "`onrecord regrade`"
            )
    for key, trial in zip(keys, report.trials, strict=True):
        if dict(trial.source) != sources[key]:
            raise ConsistencyError(
                f"{where} grades other evidence for episode {key[0]}#{key[1]} than this run "
                f"recorded ({_digest(trial.source)} vs {_digest(sources[key])}): the "
                "report was copied from another run; re-grade the run with `onrecord regrade`"
            )


def _digest(source: Any) -> str:
    digest = source.get("digest") if isinstance(source, dict) else None
    return str(digest)[:12] if digest else repr(source)[:40]
