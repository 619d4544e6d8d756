"""Whether a regrade's ``changes.json`` says what its report and the run's records make.

Every field of it follows from two reports: the run's own grading of the episodes the
regrade graded (the trials their records carry, in plan order: what ``regrade_run``
calls ``previous``) and the regrade's ``report.json``. Verified only on its own digest,
a re-sealed file could list no changed verdicts where the checks now fail episodes, or
name a previous report the run never had.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onrecord._canonical import canonical_bytes, content_digest
from onrecord._natural import natural_key
from onrecord.errors import ConsistencyError, SchemaError
from onrecord.report import REPORT_SCHEMA, EvaluationReport, Trial, build_lock

if TYPE_CHECKING:
    from onrecord.runner._graded import Sources
    from onrecord.runner._store import RunStore

__all__ = ["check_changes"]


def check_changes(
    store: RunStore,
    path: Path,
    changes: Mapping[str, Any],
    report: EvaluationReport,
    sources: Sources,
) -> None:
    """Raise unless ``changes`` (``path``) is what ``regrade_run`` saved for ``report``
    (the regrade's verified report) over the run's records (``sources``)."""
    from onrecord.runner._regrade import _changes, _version_changes

    checks = changes.get("checks")
    if not isinstance(checks, list) or not checks or not all(isinstance(c, str) for c in checks):
        raise SchemaError(f"{path}: 'checks' must be the list of check specs the regrade used")
    previous = _previous(store, report, sources)
    found = _changes(previous, report)
    versions = _version_changes(previous.lock["checks"], report.lock["checks"])
    expected = {
        "previous_report": previous.digest,
        "changes": [vars(change) for change in found],
        "versions": {name: list(pair) for name, pair in versions.items()},
        "unversioned": sorted(
            {c.check for c in found if c.before and c.after and c.check not in versions},
            key=natural_key,
        ),
    }
    for field, value in expected.items():
        if canonical_bytes(changes.get(field)) != canonical_bytes(value):
            raise ConsistencyError(
                f"{path}: '{field}' is not what the run's records and "
                f"{path.with_name('report.json')} make it: it was changed after the "
                "regrade; restore the regrade from a copy (or `onrecord regrade` again)"
            )


def _previous(store: RunStore, report: EvaluationReport, sources: Sources) -> EvaluationReport:
    """The run's grading of the regrade's episodes, as ``regrade_run`` built it: the
    records' trials in the regrade's (plan) order, locked by the library that regraded
    (a run resumed since holds more records than the regrade graded)."""
    saved = [sources[_key(trial)] for trial in report.trials]
    lock = build_lock((Trial.from_dict(item) for item in saved), store.protocol.lock_extra())
    lock["library"] = report.lock.get("library")
    body: dict[str, Any] = {"schema": REPORT_SCHEMA, "lock": lock, "trials": saved}
    return EvaluationReport.from_dict({**body, "digest": content_digest(body)})


def _key(trial: Trial) -> tuple[str, int]:
    return (str(trial.case["case_id"]), trial.repeat)
