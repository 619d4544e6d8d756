"""Re-grading: new verdicts from saved evidence, without the agent or the environment."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onrecord._canonical import atomic_write_bytes, content_digest, record_bytes
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport, Trial
from onrecord.runner._registry import build_provider, load_checks
from onrecord.runner._run import save_grading, trials_by_key
from onrecord.runner._store import RunStore

__all__ = ["REGRADE_SCHEMA", "Regrade", "VerdictChange", "regrade_run"]

REGRADE_SCHEMA = "onrecord.run.regrade/v1"


@dataclass(frozen=True)
class VerdictChange:
    """One (episode, check) whose status differs between the old and the new grading."""

    case_id: str
    """Case id."""
    repeat: int
    """Repeat number."""
    check: str
    """Check name."""
    before: str | None
    """Old status (None: the check did not exist)."""
    after: str | None
    """New status (None: the check was dropped)."""

    def __str__(self) -> str:
        return (
            f"{self.case_id}#{self.repeat} {self.check}: {self.before or 'absent'} → "
            f"{self.after or 'absent'}"
        )


@dataclass(frozen=True)
class Regrade:
    """The outcome of ``regrade_run``."""

    report: EvaluationReport
    """The new report."""
    decision: PolicyDecision
    """The policy's decision on it."""
    previous: EvaluationReport
    """The report it replaces (the run's original grading)."""
    changes: tuple[VerdictChange, ...]
    """Every verdict that changed."""
    versions: dict[str, tuple[str | None, str | None]]
    """Checks whose version changed: name → (old, new)."""
    path: Path
    """Where it was saved: ``RUN/regrades/NAME``."""


def regrade_run(
    path: str | os.PathLike[str],
    checks: Sequence[str] | None = None,
    *,
    policy: AcceptancePolicy | None = None,
    name: str | None = None,
) -> Regrade:
    """Grade every saved episode of a run with ``checks`` (default: the run's own check
    specs, re-imported, so improved checks are picked up). Writes ``report.json``,
    ``decision.json`` and ``changes.json`` under ``RUN/regrades/NAME``; the run's own
    records are only read."""
    store = RunStore.open(path)
    protocol = store.protocol
    target = store.path / "regrades" / (name or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    if target.exists():
        raise InputError(f"{target} already exists; choose another --name")
    previous = EvaluationReport.load(store.file("report.json"))
    provider = build_provider(protocol.environment)
    try:
        loaded = load_checks(provider, list(checks or protocol.checks))
        trials = [
            provider.trial(
                provider.load_subject(store.saved_episode(record)), loaded, record.key[1]
            )
            for record in store.records()
        ]
    finally:
        provider.close()
    report = EvaluationReport.from_trials(
        _in_order(trials, previous), lock_extra=protocol.lock_extra()
    )
    decision = (policy or protocol.acceptance_policy).evaluate(report)
    changes = _changes(previous, report)
    versions = _version_changes(previous.lock["checks"], report.lock["checks"])
    target.mkdir(parents=True)
    save_grading(target, report, decision, expected=protocol.episodes)
    _save_changes(target, changes, versions, list(checks or protocol.checks), previous.digest)
    return Regrade(report, decision, previous, tuple(changes), versions, target)


def _in_order(trials: list[Trial], previous: EvaluationReport) -> list[Trial]:
    order = {key: index for index, key in enumerate(trials_by_key(previous.trials))}
    return sorted(trials, key=lambda t: order.get((str(t.case["case_id"]), t.repeat), 1 << 62))


def _changes(before: EvaluationReport, after: EvaluationReport) -> list[VerdictChange]:
    old, new = trials_by_key(before.trials), trials_by_key(after.trials)
    names = sorted(set(before.check_names) | set(after.check_names))
    changes = []
    for key in new:
        for check in names:
            status_a = _status(old.get(key), check)
            status_b = _status(new[key], check)
            if status_a != status_b:
                changes.append(VerdictChange(key[0], key[1], check, status_a, status_b))
    return changes


def _status(trial: Trial | None, check: str) -> str | None:
    result = trial.result(check) if trial is not None else None
    return None if result is None else result.status


def _version_changes(
    old: dict[str, str], new: dict[str, str]
) -> dict[str, tuple[str | None, str | None]]:
    return {
        name: (old.get(name), new.get(name))
        for name in sorted(set(old) | set(new))
        if old.get(name) != new.get(name)
    }


def _save_changes(
    target: Path,
    changes: list[VerdictChange],
    versions: dict[str, tuple[str | None, str | None]],
    checks: list[str],
    previous_digest: str,
) -> None:
    body: dict[str, Any] = {
        "schema": REGRADE_SCHEMA,
        "checks": checks,
        "previous_report": previous_digest,
        "versions": {name: list(pair) for name, pair in versions.items()},
        "changes": [vars(change) for change in changes],
    }
    body["digest"] = content_digest(body)
    atomic_write_bytes(target / "changes.json", record_bytes(body))
