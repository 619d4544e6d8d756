"""A saved policy decision made again, as ``onrecord gate`` made it.

``gate RUN --output FILE`` never accepts a partial run: it saves the policy's decision
on the episodes the run holds made indeterminate, with a reason (``the run is
incomplete: N planned episodes have no trial …``). ``verify`` compared such a record
with the policy's decision alone, so every honest one, with its report and policy
beside it, was refused as "changed after it was decided".

Beside a run's or regrade's own ``report.json`` the decision is made again exactly as
``gate`` makes it there, from the run's plan: an incomplete reason added to a complete
run's decision, or an accept claimed for a partial run, is refused (only what stopped
the missing episodes is taken as saved: a later resume may fail them another way).
Beside a report file copied elsewhere the plan is gone: the record must be the policy's
decision on that report (as ``gate REPORT`` decides a report file), or that decision
made indeterminate by a reason of the form gate writes, naming episodes the report holds
no trial of; how many were missing and why is taken as it says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onrecord._compare_sources import ComparedSource, load_source
from onrecord.cli._bundle import named
from onrecord.cli._partial import NEVER_ACCEPTED, gated, run_directory
from onrecord.errors import ConsistencyError
from onrecord.policy import INCOMPLETE_RUN, AcceptancePolicy
from onrecord.report import EvaluationReport
from onrecord.runner._decided import difference

__all__ = ["decided_again"]

# A count as gate writes one: ASCII digits (``\d`` also takes "١", which int() reads as
# 1), no leading zero, and short enough for int() (which refuses over 4,300 digits).
_COUNT = "([1-9][0-9]{0,17})"
_REASON = re.compile(
    rf"{re.escape(INCOMPLETE_RUN)}{_COUNT} planned episodes have no trial"
    rf"(?:: ([^()]+))? \((.+)\); {re.escape(NEVER_ACCEPTED)}",
    re.DOTALL,  # a case id may hold a newline
)
_MORE = re.compile(rf"(.+) and {_COUNT} more", re.DOTALL)
_CAUSE = re.compile(rf"{_COUNT} \S.*")  # `why_of_errors`: "2 timed out", "1 raised KeyError"


def decided_again(
    path: Path,
    body: Mapping[str, Any],
    policy_path: Path,
    report: EvaluationReport,
    report_path: Path,
) -> str:
    """Raise ``ConsistencyError`` unless ``body`` (saved at ``path``, deciding ``report``
    saved at ``report_path``) is what the policy at ``policy_path`` decides as gate
    decides; return what the summary adds to ``as POLICY decides``."""
    policy = AcceptancePolicy.load(policy_path)
    folder = run_directory(report_path)
    if folder is not None:
        source = named(folder, lambda: load_source(folder))
        plan = _plan(source)
        again = _saved_why(gated(policy.evaluate(source.report), folder, source).to_dict(), body)
        _same(
            path, body, again, f"`onrecord gate` decides with {policy_path} for {folder} ({plan})"
        )
        return f" for its run ({plan})"
    expected = policy.evaluate(report).to_dict()
    what = f"{policy_path} decides for {report_path}"
    reasons = list(body["reasons"])
    partial = bool(reasons) and reasons[-1].startswith(INCOMPLETE_RUN)
    if partial and expected["decision"] != "reject":  # as `gate` adds it (never to a reject)
        expected = {
            **expected,
            "decision": "indeterminate",
            "reasons": [*expected["reasons"], reasons[-1]],
        }
    _same(path, body, expected, what)
    if not partial:
        return ""
    count = _incomplete(path, reasons[-1], report, report_path)
    episodes = f"{count} planned episode{'s' if count != 1 else ''}"
    return (
        f", made indeterminate by its run being incomplete ({episodes} with no trial, "
        "taken as it says: a report file does not hold its run's plan)"
    )


def _saved_why(again: dict[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """``again`` with the saved record's cause of the missing episodes (``1 timed out``)
    when its incomplete reason differs from the saved one in that alone: the cause is
    read from ``errors.jsonl``, which a later resume failing the same episode another
    way appends to, leaving the report (and so the decision) as it was."""
    made, saved = list(again["reasons"]), list(body.get("reasons") or [])
    # Only a cause of gate's form that adds up ("1 timed out"), not any text in its place.
    last = saved[-1] if saved and isinstance(saved[-1], str) else ""
    apart = _apart_from_why(last) if _parsed(last) else None
    if made and apart is not None and _apart_from_why(made[-1]) == apart:
        return {**again, "reasons": [*made[:-1], saved[-1]]}
    return again


def _apart_from_why(reason: object) -> tuple[str, str] | None:
    """Gate's incomplete-run reason without its cause: the count and the episodes."""
    match = _REASON.fullmatch(reason) if isinstance(reason, str) else None
    return None if match is None else (match[1], match[3])


def _plan(source: ComparedSource) -> str:
    planned = source.planned or 0
    return f"{planned - len(source.missing)} of {planned} planned episodes recorded"


def _same(path: Path, body: Mapping[str, Any], expected: Mapping[str, Any], what: str) -> None:
    found = difference(dict(body), dict(expected))
    if found is not None:
        raise ConsistencyError(
            f"{path} is not what {what}: {found}; it was changed after it was decided"
        )


def _incomplete(path: Path, reason: str, report: EvaluationReport, report_path: Path) -> int:
    """How many planned episodes ``reason`` (gate's incomplete-run reason) says have no
    trial; raises unless it has gate's form, adds up, and names none ``report`` holds."""
    parsed = _parsed(reason)
    if parsed is None:
        raise ConsistencyError(
            f"{path}: its last reason is not the incomplete-run reason `onrecord gate` "
            f"writes (a count, what stopped them, the episodes): {reason[:100]!r}; it was "
            "changed after it was decided"
        )
    count, episodes = parsed
    held = {f"{trial.case['case_id']}#{trial.repeat}" for trial in report.trials}
    for episode in episodes:
        if episode in held:
            raise ConsistencyError(
                f"{path} says {episode} has no trial, but {report_path} holds its trial: "
                "it was changed after it was decided"
            )
    return count


def _parsed(reason: str) -> tuple[int, list[str]] | None:
    """The count and named episodes of gate's incomplete-run reason (``_partial``: at
    most 5 named, then ``and N more``; causes counted no more than the episodes), or
    None for text that is not one."""
    match = _REASON.fullmatch(reason)
    if match is None:
        return None
    count, why, shown = int(match[1]), match[2], match[3]
    more = _MORE.fullmatch(shown)
    episodes = _episodes(more[1] if more else shown)
    causes = [_CAUSE.fullmatch(part) for part in why.split(", ")] if why else []
    adds_up = (
        count >= 1
        and len(set(episodes)) == len(episodes) == min(count, 5)
        and (int(more[2]) if more else 0) == count - len(episodes)
        and all(causes)
        and sum(int(cause[1]) for cause in causes if cause) <= count
    )
    return (count, episodes) if adds_up else None


def _episodes(shown: str) -> list[str]:
    """The ``case_id#repeat`` episodes gate joined with ", ": a case id may hold ", "
    itself, so a piece not ending in ``#repeat`` belongs with the next one."""
    episodes: list[str] = []
    pieces: list[str] = []
    for piece in shown.split(", "):
        pieces.append(piece)
        case, sep, repeat = piece.rpartition("#")
        if sep and repeat.isascii() and repeat.isdigit() and (case or len(pieces) > 1):
            episodes.append(", ".join(pieces))
            pieces = []
    return [] if pieces else episodes  # a text ending in no episode names none of them
