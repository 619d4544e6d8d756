"""What ``onrecord compare`` (and ``gate``) read: a report file, or the report of a run
or regrade directory together with the planned episodes it lacks."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onrecord._lock_diff import lock_differences
from onrecord._saved_episode import refuse_saved_episode
from onrecord.errors import InputError
from onrecord.report import EvaluationReport

if TYPE_CHECKING:
    from onrecord.runner import RunStore

__all__ = ["ComparedSource", "held_differences", "incomplete_reasons", "load_source"]


@dataclass(frozen=True)
class ComparedSource:
    """What ``onrecord compare`` compares: a report file, a run directory or a regrade
    directory (``RUN/regrades/NAME``)."""

    source: str
    """The path as given."""
    report: EvaluationReport
    """Its report."""
    label: str
    """A readable name (the agent and environment of a run)."""
    planned: int | None
    """Episodes the run plans (None for a report file)."""
    missing: tuple[str, ...]
    """Planned episodes the report holds no trial for, as ``case_id#repeat``."""
    hint: str = ""
    """What completes an incomplete run."""


def load_source(source: str | os.PathLike[str]) -> ComparedSource:
    """A report file, or the report of a run or regrade directory together with the
    planned episodes it lacks (an interrupted run, episodes that could not be recorded)."""
    from onrecord.runner import RunStore

    path = Path(source)
    # Before: "not a run directory (it has no run.json)", and no word of what reads it.
    refuse_saved_episode(path, "compare")
    if not path.is_dir():
        return ComparedSource(str(source), EvaluationReport.load(path), path.name, None, ())
    resolved = path.resolve()
    regrade = resolved.parent.name == "regrades" and not (path / "run.json").exists()
    store = RunStore.open(resolved.parent.parent if regrade else path)
    protocol = store.protocol
    label = f"{protocol.agent} on {protocol.environment.name} ({store.path.name}"
    label += f", regrade {resolved.name})" if regrade else ")"
    if not (path / "report.json").is_file():
        recorded = store.lines_recorded()
        raise InputError(
            f"{source} has no report.json: the run was interrupted with {recorded} of "
            f"{protocol.episodes} planned episodes recorded; `onrecord run --resume "
            f"{shlex.quote(str(store.path))}` finishes and grades it"
        )
    report = EvaluationReport.load(path / "report.json")
    _check_own_grading(store, path, report, regrade=regrade)
    present = {(str(trial.case["case_id"]), trial.repeat) for trial in report.trials}
    missing = tuple(
        f"{job.key[0]}#{job.key[1]}"
        for job in protocol.jobs(store.run_id)
        if job.key not in present
    )
    # Quoted: the command is pasted, and a path with a space split into two arguments.
    hint = f"`onrecord run --resume {shlex.quote(str(store.path))}` retries them" + (
        ", then `onrecord regrade` it again" if regrade else ""
    )
    return ComparedSource(str(source), report, label, protocol.episodes, missing, hint)


def _check_own_grading(
    store: RunStore, path: Path, report: EvaluationReport, *, regrade: bool
) -> None:
    """The report must be this run's grading: a report.json copied in from another run
    (with its decision) verifies on its own digest and was compared under this label.
    Nor an earlier grading a killed re-grading left (it removes decision.json, then
    writes the new report.json): with no decision.json beside it, a report.json of fewer
    episodes than the run recorded was read as the run's, 13 of its 33 episodes "with no
    trial", so `gate` decided on the episodes it happened to hold. It reads as not graded,
    as ``verify`` and ``show`` say. (A regrade directory is written whole, then renamed.)
    A resume killed while recording leaves the earlier grading with its decision.json:
    read as the run's, its 13 recorded episodes were "planned episodes with no trial"."""
    from onrecord.runner._graded import check_graded, graded_trial

    sources = {record.key: graded_trial(record) for record in store.records()}
    # The run's own report holds its records' trials whole; a regrade's grade them anew.
    check_graded(store, report, str(path / "report.json"), sources, own=not regrade)
    if regrade or len(report.trials) >= len(sources):
        return
    counts = f"({len(report.trials)} of the {len(sources)} recorded episodes)"
    what = (
        f"report.json and decision.json are an earlier grading {counts}, as a resume "
        "killed before grading leaves them"
        if (path / "decision.json").exists()
        else f"report.json is an earlier grading {counts} and decision.json is missing, as "
        "a grading killed before the new report.json leaves it"
    )
    resume = f"onrecord run --resume {shlex.quote(str(store.path))}"
    raise InputError(f"{path} is not graded: its {what}; `{resume}` grades the run")


def incomplete_reasons(a: ComparedSource, b: ComparedSource) -> list[str]:
    """Why a run missing planned episodes is not compared: fewer pairs than planned
    would be presented as the whole comparison (empty when both are complete)."""
    reasons = []
    # Offered only when it works: the report files' locks agree (both runs miss the same
    # episodes). A partial candidate against a complete baseline was told to compare
    # the report.json files, which refused them ("repeats or seeds differ").
    alone = "" if lock_differences(a.report.lock, b.report.lock) else _REPORT_FILES
    for side, compared in (("A", a), ("B", b)):
        if compared.missing:
            shown = ", ".join(compared.missing[:5])
            more = f" and {len(compared.missing) - 5} more" if len(compared.missing) > 5 else ""
            reasons.append(
                f"{side} ({compared.source}) is an incomplete run: "
                f"{len(compared.missing)} of {compared.planned} planned episodes have no "
                f"trial ({shown}{more}); {compared.hint}{alone}"
            )
    return reasons


_REPORT_FILES = " (or compare the report.json files to compare only the recorded pairs)"


def held_differences(a: ComparedSource, b: ComparedSource) -> list[str]:
    """``lock_differences`` over the episodes both sides hold: what else, besides the
    missing episodes ``incomplete_reasons`` names, keeps two runs apart. Over the whole
    locks a partial candidate against a complete baseline was refused a second time, as
    "repeats or seeds differ", for the very episode it lacks."""
    gone = {_episode_key(text) for text in (*a.missing, *b.missing)}
    return lock_differences(_held(a.report.lock, gone), _held(b.report.lock, gone))


def _episode_key(text: str) -> tuple[str, int]:
    case_id, _, repeat = text.rpartition("#")  # a case id may hold '#' itself
    return case_id, int(repeat)


def _held(lock: dict[str, Any], gone: set[tuple[str, int]]) -> dict[str, Any]:
    """``lock`` without the ``[repeat, seed, …]`` entries of the ``gone`` episodes, and
    without a case left with none (a case one run never recorded is missing there)."""
    cases = []
    for case in lock.get("cases", []):
        trials = [entry for entry in case["trials"] if (case["case_id"], entry[0]) not in gone]
        if trials:
            cases.append({**case, "trials": trials})
    return {**lock, "cases": cases}
