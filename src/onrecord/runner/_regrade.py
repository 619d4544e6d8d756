"""Re-grading: new verdicts from saved evidence, without the agent or the environment."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onrecord._canonical import atomic_write_bytes, content_digest, record_bytes, usual_dir_mode
from onrecord._exceptions import describe
from onrecord._natural import natural_key
from onrecord._saved_episode import refuse_saved_episode
from onrecord._scratch import remove_abandoned_scratch
from onrecord.episode import OutcomeCheck
from onrecord.errors import ConsistencyError, InputError, OnrecordError
from onrecord.policy import AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport, Trial
from onrecord.runner._agents_and_checks import load_checks
from onrecord.runner._decided import REGRADE_POLICY
from onrecord.runner._interrupts import interrupts_kept, terminations_interrupt
from onrecord.runner._job import JobResult, Progress, progress_of
from onrecord.runner._leftovers import remove_unfinished_regrades, staging
from onrecord.runner._policy_names import refuse_unmatched_requirements
from onrecord.runner._provider import EnvironmentProvider
from onrecord.runner._registry import build_provider
from onrecord.runner._run import Graded, save_grading, trials_by_key
from onrecord.runner._store import RunStore

__all__ = ["REGRADE_SCHEMA", "Regrade", "VerdictChange", "contained", "regrade_run"]

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
class Regrade(Graded):
    """The outcome of ``regrade_run``."""

    report: EvaluationReport
    """The new report."""
    decision: PolicyDecision
    """The policy's decision on it."""
    previous: EvaluationReport
    """The run's own grading of the same episodes (the trials its records hold)."""
    changes: tuple[VerdictChange, ...]
    """Every verdict that changed."""
    versions: dict[str, tuple[str | None, str | None]]
    """Checks whose version changed: name → (old, new)."""
    path: Path
    """Where it was saved: ``RUN/regrades/NAME``."""
    expected: int = 0
    """Episodes the run's protocol asks for."""
    unversioned: tuple[str, ...] = ()
    """Checks whose verdicts changed although their version did not: their logic changed
    without a version bump, so the two reports' locks claim the same check."""
    notices: tuple[str, ...] = ()
    """What was repaired first: staging directories of regrades killed earlier."""


def regrade_run(
    path: str | os.PathLike[str],
    checks: Sequence[str] | None = None,
    *,
    policy: AcceptancePolicy | None = None,
    name: str | None = None,
    progress: Progress | bool | None = None,
) -> Regrade:
    """Grade every saved episode of a run with ``checks`` (default: the run's own check
    specs, re-imported, so improved checks are picked up). Writes ``report.json``,
    ``decision.json`` and ``changes.json`` under ``RUN/regrades/NAME``; the run's own
    records are only read. An interrupted run is re-graded too (its recorded episodes;
    never accepted). ``progress`` hears of every episode graded (``start`` with the
    number recorded, an ``advance`` per episode with its new outcome, ``stop``);
    ``progress=True`` shows them as the bar of ``onrecord run`` on stderr."""
    # SIGTERM (a cancelled CI job, ``timeout``) is Ctrl-C, as in ``start_run``: its
    # default ended Python at once and left each world's scratch copy and rebuilt end
    # state in the temporary directory, one database each per cancelled regrade.
    with terminations_interrupt():
        return _regrade_run(path, checks, policy=policy, name=name, progress=progress)


def _regrade_run(
    path: str | os.PathLike[str],
    checks: Sequence[str] | None,
    *,
    policy: AcceptancePolicy | None,
    name: str | None,
    progress: Progress | bool | None,
) -> Regrade:
    # Before: "not a run directory (it has no run.json)", and no word of what reads it.
    refuse_saved_episode(Path(path), "regrade")
    store = RunStore.open(path)
    # Killed runs' and regrades' databases in TMPDIR, before this one adds its own.
    swept = remove_abandoned_scratch()
    protocol = store.protocol
    target = _target(store.path / "regrades", name)
    specs = list(checks or protocol.checks)
    records = list(store.records())
    order = {job.key: index for index, job in enumerate(protocol.jobs(store.run_id))}
    records.sort(key=lambda record: order.get(record.key, len(order)))
    # The run's own grading is the trials its verified records hold (report.json may be
    # missing or stale after an interrupted run).
    previous = EvaluationReport.from_trials(
        (Trial.from_dict(record.data["trial"]) for record in records),
        lock_extra=protocol.lock_extra(),
    )
    # A Ctrl-C swallowed while a world is rebuilt or a check runs (sqlite3 makes one
    # "not authorized") read as an edited run directory, or as a check's error that the
    # regrade then saved as a changed verdict: it stops the regrade instead.
    with interrupts_kept():
        provider = build_provider(protocol.environment)
        try:
            loaded = [contained(check) for check in _load(provider, specs)]
            refuse_unmatched_requirements(policy, loaded)
            trials = _regraded_all(store, provider, loaded, records, progress_of(progress))
        finally:
            provider.close()
    report = EvaluationReport.from_trials(trials, lock_extra=protocol.lock_extra())
    chosen = policy or protocol.acceptance_policy
    decision = chosen.evaluate(report)
    changes = _changes(previous, report)
    versions = _version_changes(previous.lock["checks"], report.lock["checks"])
    unversioned = sorted(
        {c.check for c in changes if c.before and c.after and c.check not in versions},
        key=natural_key,
    )
    # Written whole into a temporary directory, then renamed into place: a regrade killed
    # while saving leaves no half-written RUN/regrades/NAME that `verify RUN` refuses.
    # What an earlier regrade killed there left is removed first (it was kept for ever).
    notices = swept + remove_unfinished_regrades(store.path)
    with staging(store.path) as folder:
        os.chmod(folder, usual_dir_mode())  # mkdtemp's 0700 would outlive the rename
        save_grading(folder, report, decision, expected=protocol.episodes)
        if chosen.digest != protocol.acceptance_policy.digest:  # `verify` decides again
            chosen.save_json(folder / REGRADE_POLICY)
        _save_changes(folder, changes, versions, specs, previous.digest, unversioned)
        target = _publish(folder, target, numbered=name is None)
    return Regrade(
        report,
        decision,
        previous,
        tuple(changes),
        versions,
        target,
        protocol.episodes,
        tuple(unversioned),
        tuple(notices),
    )


def _target(root: Path, name: str | None) -> Path:
    if name is None:  # a timestamp; ``_publish`` numbers regrades in the same second
        return root / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    # A bare name keeps the regrade inside RUN/regrades (never "../x" or "/abs").
    if not name or name in (".", "..") or any(sep in name for sep in ("/", "\\", os.sep)):
        raise InputError(
            f"--name {name!r} must be a plain directory name (no '/', not '.' or '..'), "
            "e.g. --name checks-v2"
        )
    target = root / name
    if target.exists():
        raise InputError(f"{target} already exists; choose another --name")
    return target


def _publish(staging: Path, target: Path, *, numbered: bool) -> Path:
    """Rename ``staging`` to ``target`` (a directory appears whole or not at all). An
    unnamed regrade whose timestamp another regrade took meanwhile gets the next free
    ``-N``; a named one is refused."""
    target.parent.mkdir(exist_ok=True)
    stamp, number = target.name, 2
    while True:
        try:
            if not target.exists():  # rename would replace an empty directory
                os.rename(staging, target)  # and fails on a non-empty one: never merged
                return target
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
        if not numbered:
            raise InputError(f"{target} already exists; choose another --name")
        target, number = target.with_name(f"{stamp}-{number}"), number + 1


def _load(provider: EnvironmentProvider, specs: list[str]) -> list[OutcomeCheck]:
    try:
        return load_checks(provider, specs)
    except OnrecordError:
        raise
    except Exception as exc:  # a user module or check factory failing to load is bad input
        raise InputError(
            f"loading the checks {specs} raised {describe(exc)}; fix the "
            "check module or pass other --checks"
        ) from exc


def _regraded_all(
    store: RunStore,
    provider: EnvironmentProvider,
    checks: list[OutcomeCheck],
    records: list[Any],
    progress: Progress,
) -> list[Trial]:
    # Regrading rebuilds each episode's world from its evidence: a few thousand take
    # minutes, so the caller hears of each one (the CLI draws the bar of `onrecord run`).
    progress.start(len(records), 0)
    trials = []
    try:
        for record in records:
            trial = _regraded(store, provider, checks, record)
            trials.append(trial)
            case_id, repeat = record.key
            progress.advance(JobResult(case_id, repeat, outcome=trial.outcome))
    finally:
        progress.stop()
    return trials


def _regraded(
    store: RunStore, provider: EnvironmentProvider, checks: list[OutcomeCheck], record: Any
) -> Trial:
    key = f"{record.key[0]}#{record.key[1]}"
    try:
        subject = provider.load_subject(store.saved_episode(record))
    except OnrecordError:
        raise
    except Exception as exc:  # e.g. a forged diff naming a column the snapshot lacks
        raise ConsistencyError(
            f"{store.file('episodes.jsonl')}: the evidence of {key} cannot be loaded "
            f"({describe(exc)}); the run directory was edited"
        ) from exc
    try:
        return provider.trial(subject, checks, record.key[1])
    except OnrecordError:
        raise
    except Exception as exc:  # the provider's own grading code, not a check (those are
        # contained as evaluator errors): bad input (exit 3), not a traceback (exit 1)
        raise InputError(
            f"grading {key} failed in the environment's trial(): {describe(exc)}"
        ) from exc


def contained(check: OutcomeCheck) -> OutcomeCheck:
    """``check`` with ``sys.exit()`` inside it turned into an error, which grading records
    as an evaluator error: a check must never end the command (exit 0 reads as accept)."""

    def evaluate(evidence: Any) -> Any:
        try:
            return check.evaluate(evidence)
        except SystemExit as exc:
            raise RuntimeError(f"the check called sys.exit({exc.code!r})") from None

    return OutcomeCheck(check.name, check.version, evaluate)


def _changes(before: EvaluationReport, after: EvaluationReport) -> list[VerdictChange]:
    old, new = trials_by_key(before.trials), trials_by_key(after.trials)
    # Checks in natural order, as the report lists them (h4 before h16, not after h12).
    names = sorted(set(before.check_names) | set(after.check_names), key=natural_key)
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
        for name in sorted(set(old) | set(new), key=natural_key)
        if old.get(name) != new.get(name)
    }


def _save_changes(
    target: Path,
    changes: list[VerdictChange],
    versions: dict[str, tuple[str | None, str | None]],
    checks: list[str],
    previous_digest: str,
    unversioned: list[str],
) -> None:
    body: dict[str, Any] = {
        "schema": REGRADE_SCHEMA,
        "checks": checks,
        "previous_report": previous_digest,
        "versions": {name: list(pair) for name, pair in versions.items()},
        "changes": [vars(change) for change in changes],
        "unversioned": unversioned,
    }
    body["digest"] = content_digest(body)
    atomic_write_bytes(target / "changes.json", record_bytes(body))
