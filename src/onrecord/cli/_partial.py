"""A partial run's decision as commands print it: never accept, and why it is partial.

A run missing planned episodes is not accepted on those it holds (a measured failure
still rejects). ``onrecord run`` exits 2 for it and ``gate`` decides indeterminate, but
``run`` and ``show RUN`` printed the policy's verdict on the recorded episodes,
``decision: accept``, above the line saying the run was incomplete: a CI log grepped for
the verdict read an accept the exit code denied.

An indeterminate one gets the reason too: a run whose every episode timed out was
decided "no check in the report matches 'posted_once': the report holds no trial", a
policy mistake to the reader, when the cause was that nothing was recorded.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord.episode._verify_files import bounded_lines, check_entry, open_regular
from onrecord.errors import OnrecordError, SchemaError
from onrecord.policy import INCOMPLETE_RUN, PolicyDecision

if TYPE_CHECKING:
    from onrecord._compare_sources import ComparedSource
    from onrecord.report import EvaluationReport
    from onrecord.runner import RunStore

__all__ = [
    "NEVER_ACCEPTED",
    "folder_why",
    "gated",
    "missing_why",
    "partial_body",
    "partial_decision",
    "partial_summary",
    "run_directory",
    "why_of_errors",
]

NEVER_ACCEPTED = "a partial run is never accepted (`onrecord run --resume` retries them)"
_NEVER = NEVER_ACCEPTED


def partial_decision(
    decision: PolicyDecision, missing: int, shown: str = "", why: str = ""
) -> PolicyDecision:
    """``decision``, unless it rejects, made indeterminate for a run missing ``missing``
    planned episodes (``shown`` names some of them, ``why`` says what stopped them),
    with the reason why."""
    if not missing or decision.decision == "reject":
        return decision
    reason = f"{INCOMPLETE_RUN}{_missing(missing, shown, why)}; {_NEVER}"
    return dataclasses.replace(
        decision, decision="indeterminate", reasons=(*decision.reasons, reason)
    )


def partial_body(
    body: Mapping[str, Any], recorded: int, expected: int, why: str = ""
) -> Mapping[str, Any]:
    """A saved decision's body (``decision.json``'s ``decision``) as it is printed for a
    run that recorded ``recorded`` of ``expected`` planned episodes."""
    missing = expected - recorded
    if missing <= 0 or body.get("decision") not in ("accept", "indeterminate"):
        return body
    reason = f"{INCOMPLETE_RUN}{_missing(missing, '', why)}; {_NEVER}"
    return {**body, "decision": "indeterminate", "reasons": [*body.get("reasons", ()), reason]}


def partial_summary(verdict: str, recorded: int, expected: int) -> str:
    """A run's ``decision.json`` in a line (``verify``'s summary, ``show``'s header):
    its verdict as ``run``, ``show`` and ``gate`` print it. A partial run's stores the
    policy's verdict on the episodes recorded, ``accept`` too; said first, ``verify``
    put an accept in a CI log for a run every other command called indeterminate."""
    if recorded >= expected:
        return f"{verdict}, {recorded} of {expected} episodes"
    printed = "reject" if verdict == "reject" else "indeterminate"
    line = f"{printed}, incomplete run: {recorded} of {expected} episodes recorded"
    if printed != verdict:  # what is stored stays said, as what it is
        line += f"; the policy's verdict on the {recorded} recorded: {verdict}"
    return line


def run_directory(path: Path) -> Path | None:
    """The run or regrade directory ``path`` names (also by its own ``report.json``), as
    ``onrecord gate REPORT`` reads it, or None for a report file."""
    folder = path if path.is_dir() else path.parent if path.name == "report.json" else None
    if folder is None:
        return None
    if check_entry(folder / "run.json") or check_entry(folder / "changes.json"):
        return folder
    return None


def gated(decision: PolicyDecision, folder: Path, source: ComparedSource) -> PolicyDecision:
    """What ``onrecord gate`` decides for the run or regrade directory ``folder``
    (``source`` its loaded report and missing episodes): ``decision``, the policy's on
    the episodes it holds, never an accept while planned episodes have no trial (a
    measured failure still rejects). ``verify`` decides a saved decision again with it."""
    missing = source.missing
    why = folder_why(folder, source.report) if missing else ""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return partial_decision(decision, len(missing), shown, why)


def why_of_errors(errors: Iterable[str]) -> str:
    """What stopped the episodes whose errors these are, counted by kind: ``2 timed
    out, 1 raised KeyError``."""
    kinds = Counter(_kind(error) for error in errors)
    return ", ".join(f"{count} {kind}" for kind, count in kinds.items())


def missing_why(store: RunStore, report: EvaluationReport) -> str:
    """``why_of_errors`` for the planned episodes of ``store`` that ``report`` lacks,
    from the last error ``errors.jsonl`` holds for each. Best effort: an unreadable
    file or line says nothing rather than failing the command."""
    present = {(str(trial.case["case_id"]), trial.repeat) for trial in report.trials}
    if len(present) >= store.protocol.episodes:
        return ""
    missing = {job.key for job in store.protocol.jobs(store.run_id)} - present
    path = store.file("errors.jsonl")
    last: dict[tuple[str, int], str] = {}  # kinds, not errors: one may be huge
    try:
        # Streamed: the file of a run received from elsewhere may be any size.
        with open_regular(path) as handle:
            for _, line in bounded_lines(handle, path):
                _note(line, missing, last)
    except (OSError, SchemaError):
        return ""
    kinds = Counter(last[key] for key in sorted(last))
    return ", ".join(f"{count} {kind}" for kind, count in kinds.items())


def _note(line: bytes, missing: set[tuple[str, int]], last: dict[tuple[str, int], str]) -> None:
    """Note the kind of ``line``'s error in ``last`` when it is one of ``missing``'s."""
    try:
        # orjson: a line nested thousands deep is a decode error, not a RecursionError.
        item = orjson.loads(line)
        key, error = (item["case_id"], item["repeat"]), item["error"]
        if type(key[1]) is int and key in missing and isinstance(error, str):
            last[key] = _kind(error)
    except (ValueError, TypeError, KeyError):  # not one of onrecord's lines
        return


def folder_why(folder: Path, report: EvaluationReport) -> str:
    """``missing_why`` for a run directory or one of its regrades (``RUN/regrades/NAME``,
    whose run holds the errors), ``report`` its grading."""
    from onrecord.runner import RunStore

    run = folder if (folder / "run.json").exists() else folder.resolve().parent.parent
    try:
        return missing_why(RunStore.open(run), report)
    except OnrecordError:  # the command reading it has verified it already
        return ""


def _kind(error: str) -> str:
    if error.startswith("timed out: "):
        return "timed out"
    if error.startswith("the worker process"):
        return "lost their worker process"
    head = error.split(": ", 1)[0]
    return f"raised {head}" if head.isidentifier() else "failed"


def _missing(count: int, shown: str, why: str) -> str:
    # Plural even for one: gate's saved decisions carry this text, and are verified.
    # The why before the parenthesis: the headline keeps what precedes " (".
    return (
        f"{count} planned episodes have no trial"
        + (f": {why}" if why else "")
        + (f" ({shown})" if shown else "")
    )
