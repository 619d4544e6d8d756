"""The remittance check ``expected_changes``: every change the task calls for, and no
other, in the end-state diff (allocations, adjustments, approvals, cases), and the row
helpers the other checks share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from onrecord.domains._reasons import listing
from onrecord.domains.remittance._case_checks import CASE_ACTIONS, case_problems
from onrecord.envkit import ToolEpisode, failed, passed
from onrecord.episode import OutcomeVerdict

__all__ = [
    "Row",
    "created_rows",
    "expected_changes",
    "kept_allocations",
    "task_expectation",
]

Row = dict[str, Any]
Problem = tuple[int, str]
"""A problem and its rank: the reason lists money on the wrong line or amount first (0),
then adjustments and approvals (1), a required case missing (2), the case queue's noise
(3: a case not called for, one without a note, a blind retry)."""


def task_expectation(episode: ToolEpisode) -> Mapping[str, Any]:
    task = episode.task or {}
    expected = task.get("expected_output")
    if not isinstance(expected, Mapping) or "lines" not in expected:
        raise ValueError(
            "the episode's task has no remittance expectation; run it with "
            "onrecord.domains.remittance"
        )
    return expected


def created_rows(episode: ToolEpisode, table: str) -> list[Row]:
    return list(episode.diff.get(table, {}).get("created", []))


def kept_allocations(episode: ToolEpisode) -> list[Row]:
    """The allocations the episode created, less the ones it took back itself (and those
    reversals): a biller who keys a wrong amount, reverses it and posts the right one
    leaves the books right, with the correction on record in the audit history. A
    reversal of an allocation made before the episode stays: that moved money."""
    created = created_rows(episode, "allocations")
    own = {row["allocation_id"] for row in created if row["reverses"] is None}
    undone = {row["reverses"] for row in created if row["reverses"] in own}
    return [
        row
        for row in created
        if row["allocation_id"] not in undone and row["reverses"] not in undone
    ]


def _money_rows(episode: ToolEpisode, table: str, rline_id: str) -> list[Row]:
    rows = kept_allocations(episode) if table == "allocations" else created_rows(episode, table)
    return [row for row in rows if row["rline_id"] == rline_id]


# -- expected_changes ----------------------------------------------------------------------
_MONEY_ACTIONS = ("post", "post_and_case")


def _adjustment_problems(line: Mapping[str, Any], adjustments: list[Row]) -> list[Problem]:
    """The line's adjustments must be exactly the 835's (none for a recoupment), each on
    a claim line the remittance line pays: a write-down or patient share on another line
    moves money on the wrong account even when the codes and amounts are right."""
    rline, problems = line["rline_id"], []
    got = Counter((a["group_code"], a["reason_code"], a["amount_cents"]) for a in adjustments)
    want = Counter(tuple(x) for x in line["adjustments"])
    if got != want:
        problems.append(
            (
                1,
                f"{rline}: adjustments {sorted(got.elements())} differ from the "
                f"835's {sorted(want.elements())}",
            )
        )
    stray = sorted({a["line_id"] for a in adjustments if a["line_id"] not in line["targets"]})
    if stray:
        problems.append((1, f"{rline}: adjusted {stray}, expected only {line['targets']}"))
    return problems


def _posting_problems(line: Mapping[str, Any], allocations: list[Row]) -> list[Problem]:
    """A line that pays: its whole payment allocated, only to the lines it pays."""
    rline, problems = line["rline_id"], []
    total = sum(a["amount_cents"] for a in allocations)
    if total != line["paid_cents"]:
        problems.append(
            (0, f"{rline}: allocated {total} cents, the remittance paid {line['paid_cents']}")
        )
    stray = sorted({a["line_id"] for a in allocations if a["line_id"] not in line["targets"]})
    if stray:
        problems.append((0, f"{rline}: allocated to {stray}, expected only {line['targets']}"))
    taken_back = [a["reverses"] for a in allocations if a["reverses"] is not None]
    if taken_back:
        problems.append(
            (0, f"{rline}: reversed allocation(s) {taken_back}; it pays, it recoups none")
        )
    return problems


def _line_problems(episode: ToolEpisode, line: Mapping[str, Any]) -> list[Problem]:
    rline, action = line["rline_id"], line["action"]
    allocations = _money_rows(episode, "allocations", rline)
    adjustments = _money_rows(episode, "adjustments", rline)
    problems: list[Problem] = []
    if action in _MONEY_ACTIONS:
        problems += _posting_problems(line, allocations)
        problems += _adjustment_problems(line, adjustments)
    elif action == "reverse":
        reversals = [a["reverses"] for a in allocations]
        if reversals != [line["reverse"]]:
            # The rows themselves are in the evidence's diff; the reason names ids.
            problems.append(
                (
                    0,
                    f"{rline}: expected one reversal of allocation {line['reverse']}, "
                    f"found {len(allocations)} allocation(s) reversing {reversals}",
                )
            )
        problems += _adjustment_problems(line, adjustments)
    elif allocations or adjustments:
        problems.append(
            (
                0,
                f"{rline}: must not be posted ({action}), but {len(allocations)} "
                f"allocation(s) and {len(adjustments)} adjustment(s) were created",
            )
        )
    if action in CASE_ACTIONS:
        kinds = [
            c["kind"] for c in created_rows(episode, "cases") if c["claim_id"] == line["claim_id"]
        ]
        if line["case_kind"] not in kinds:
            problems.append(
                (2, f"{rline}: no {line['case_kind']} case opened on {line['claim_id']}")
            )
    asked = [a["amount_cents"] for a in _money_rows(episode, "approvals", rline)]
    if action == "approve" and asked != [line["paid_cents"]]:
        problems.append(
            (
                1,
                f"{rline}: expected one approval request for {line['paid_cents']} "
                f"cents, found requests for {asked}",
            )
        )
    if action != "approve" and asked:
        problems.append((1, f"{rline}: approval requested although none is needed"))
    return problems


def expected_changes(episode: ToolEpisode) -> OutcomeVerdict:
    expect = task_expectation(episode)
    ranked = [p for line in expect["lines"] for p in _line_problems(episode, line)]
    known = {line["rline_id"] for line in expect["lines"]}
    for table in ("allocations", "adjustments", "approvals"):
        outside = [r for r in created_rows(episode, table) if r["rline_id"] not in known]
        if outside:
            ranked.append(
                (
                    0,
                    f"{table}: {len(outside)} row(s) for remittance lines outside "
                    f"{expect['remittance_id']}",
                )
            )
    cases, notes, followups = (
        created_rows(episode, t) for t in ("cases", "case_notes", "followups")
    )
    ranked += [(3, p) for p in case_problems(cases, notes, followups, expect["lines"])]
    # Stable: lines keep the task's order within a rank.
    problems = [text for _, text in sorted(ranked, key=lambda p: p[0])]
    diff = {
        t: episode.diff[t]
        for t in ("allocations", "adjustments", "approvals", "cases", "case_notes")
        if t in episode.diff
    }
    if problems:
        return failed(
            f"{len(problems)} expected change(s) wrong: {listing(problems)}",
            problems=problems,
            diff=diff,
        )
    return passed("the end-state diff satisfies every rule of the task", diff=diff)
