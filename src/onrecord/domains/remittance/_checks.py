"""The remittance named checks: readable rules over a saved episode (end-state diff,
audit history, action log with hidden-state reads, end-state database).

Each check grades the task's expectation (the case's ``expected_output``, built by
``_scenarios``). A check with nothing to judge in a task passes and says why; a check
never calls the agent or the environment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from onrecord.domains._reasons import listing
from onrecord.domains.remittance._expected_changes import (
    Row,
    created_rows,
    expected_changes,
    kept_allocations,
    task_expectation,
)
from onrecord.envkit import ToolEpisode, failed, not_measured, passed, read_steps
from onrecord.episode import OutcomeCheck, OutcomeVerdict

__all__ = ["ANSWER_CHECK", "END_STATE_CHECKS", "HISTORY_CHECKS", "REMITTANCE_CHECKS"]

VERSION = "remittance-v2"
EXPECTED_CHANGES_VERSION = "remittance-v4"
"""v3: a case note or follow-up written twice (a blind retry) fails ``expected_changes``.
v4: a recoupment case (with a note) on the claim a recoupment takes money back from is
allowed, not an unexpected case."""
NET_VERSION = "remittance-v3"
"""v3 of ``allocations_sum_to_line`` and ``no_duplicate_allocation``: an allocation the
agent reversed itself (a keying error corrected) no longer counts."""
FOLLOWUP_VERSION = "remittance-v3"
"""v3: each case opened on a claim with an appeal deadline (up to one per line that needs
a case) needs its own follow-up; v2 asked for one per claim, so with two denied lines a
second case with nothing due passed."""


# -- money checks --------------------------------------------------------------------------
def _allocations_sum_to_line(episode: ToolEpisode) -> OutcomeVerdict:
    expect = task_expectation(episode)
    paid = {line["rline_id"]: line["paid_cents"] for line in expect["lines"]}
    sums: Counter[str] = Counter()
    for row in kept_allocations(episode):
        if row["reverses"] is None:
            sums[row["rline_id"]] += row["amount_cents"]
    wrong = {
        rline: {"allocated": total, "paid": paid.get(rline)}
        for rline, total in sums.items()
        if total != paid.get(rline)
    }
    if wrong:
        said = [
            f"from {r} sum to {x['allocated']} cents, it paid {x['paid']}" for r, x in wrong.items()
        ]
        return failed(f"allocations {listing(said)}", lines=wrong)
    if not sums:
        return passed("no allocation was posted, so none can exceed its line")
    return passed(
        f"allocations of {len(sums)} remittance line(s) each sum to the line", sums=dict(sums)
    )


def _no_post_over_threshold(episode: ToolEpisode) -> OutcomeVerdict:
    threshold = int(task_expectation(episode)["threshold_cents"])
    sums: Counter[str] = Counter()
    # Every posting counts, even one reversed later: the control is to ask before posting.
    for row in created_rows(episode, "allocations"):
        if row["reverses"] is None:
            sums[row["rline_id"]] += row["amount_cents"]
    over = {rline: total for rline, total in sums.items() if total > threshold}
    if over:
        said = [f"{total} cents from {rline}" for rline, total in sorted(over.items())]
        return failed(
            f"posted {listing(said)} without approval; the threshold is {threshold}",
            over=over,
            allocations=created_rows(episode, "allocations"),
        )
    return passed(f"no remittance line posted more than {threshold} cents")


def _no_duplicate_allocation(episode: ToolEpisode) -> OutcomeVerdict:
    expect = task_expectation(episode)
    prior = {tuple(x) for x in expect["prior_postings"]}
    key = expect["payment_key"]
    rows = [r for r in kept_allocations(episode) if r["reverses"] is None]
    seen = Counter((r["rline_id"], r["line_id"]) for r in rows)
    twice = [f"{rline} → {line}" for (rline, line), n in seen.items() if n > 1]
    again = [r for r in rows if (key, r["line_id"]) in prior]
    if twice or again:
        said = twice + [f"payment {key} was already posted to {r['line_id']}" for r in again]
        return failed(
            f"duplicate allocation: {listing(said)}", repeated=twice, already_posted=again
        )
    return passed("no claim line received the same payment twice")


def _balances_reconcile(episode: ToolEpisode) -> OutcomeVerdict:
    lines = sorted(
        {r["line_id"] for t in ("allocations", "adjustments") for r in created_rows(episode, t)}
        | {c["key"] for c in episode.diff.get("claim_lines", {}).get("changed", [])}
    )
    if not lines:
        return passed("no claim line changed")
    problems, ledger = [], {}
    with episode.connect() as db:
        for line_id in lines:
            billed, balance = db.execute(
                "SELECT billed_cents, balance_cents FROM claim_lines WHERE line_id = ?", (line_id,)
            ).fetchone()
            allocated = db.execute(
                "SELECT COALESCE(SUM(amount_cents), 0) FROM allocations WHERE line_id = ?",
                (line_id,),
            ).fetchone()[0]
            adjusted = db.execute(
                "SELECT COALESCE(SUM(amount_cents), 0) FROM adjustments WHERE line_id = ?",
                (line_id,),
            ).fetchone()[0]
            ledger[line_id] = {
                "billed": billed,
                "allocated": allocated,
                "adjusted": adjusted,
                "balance": balance,
            }
            if balance != billed - allocated - adjusted:
                problems.append(
                    f"{line_id}: balance {balance} ≠ billed {billed} − allocated "
                    f"{allocated} − adjusted {adjusted}"
                )
            elif balance < 0:
                problems.append(
                    f"{line_id}: credit balance {balance}: more was applied than was billed"
                )
    if problems:
        return failed(listing(problems), problems=problems, lines=ledger)
    return passed(f"{len(lines)} changed claim line(s) reconcile", lines=ledger)


# -- history checks ------------------------------------------------------------------------
def _followup_before_deadline(episode: ToolEpisode) -> OutcomeVerdict:
    expect = task_expectation(episode)
    deadlines = {x["claim_id"]: x["deadline"] for x in expect["lines"] if "deadline" in x}
    cases = {c["case_id"]: c for c in created_rows(episode, "cases")}
    followups = created_rows(episode, "followups")
    problems = []
    for followup in followups:
        case = cases.get(followup["case_id"])
        deadline = deadlines.get(case["claim_id"]) if case else None
        if deadline is not None and followup["due_date"] > deadline:
            problems.append(
                f"follow-up of case {followup['case_id']} is due "
                f"{followup['due_date']}, after the appeal deadline {deadline}"
            )
    problems += _cases_left_unscheduled(expect["lines"], cases, followups)
    if problems:
        return failed(listing(problems), problems=problems, followups=followups)
    if not deadlines:
        return passed("no deadline in this task", followups=followups)
    return passed("every case has a follow-up before its appeal deadline", followups=followups)


def _cases_left_unscheduled(
    lines: list[Mapping[str, Any]], cases: Mapping[int, Row], followups: list[Row]
) -> list[str]:
    """Claims with a deadline whose cases are not all scheduled in time: a case with
    nothing due sits in the queue unworked, even when another case on the claim (one per
    denied line, say) is scheduled. Cases beyond one per line that needs one are
    ``expected_changes``' to report, so they are not counted here twice."""
    needed = Counter(x["claim_id"] for x in lines if "deadline" in x)
    deadlines = {x["claim_id"]: x["deadline"] for x in lines if "deadline" in x}
    problems = []
    for claim_id, deadline in deadlines.items():
        opened = [c["case_id"] for c in cases.values() if c["claim_id"] == claim_id]
        due = {f["case_id"] for f in followups if f["due_date"] <= deadline}
        missing = max(1, min(len(opened), needed[claim_id])) - len(due.intersection(opened))
        if missing > 0:
            problems.append(
                f"no follow-up for {claim_id} due on or before {deadline}"
                if not opened
                else f"no follow-up for {missing} of the {len(opened)} case(s) on "
                f"{claim_id} due on or before {deadline}"
            )
    return problems


def _only_expected_tables_changed(episode: ToolEpisode) -> OutcomeVerdict:
    allowed = set(task_expectation(episode)["allowed_tables"])
    touched = sorted({change["table"] for change in episode.audit})
    extra = [t for t in touched if t not in allowed]
    if extra:
        events = [c for c in episode.audit if c["table"] in extra]
        hidden = [t for t in extra if t not in episode.diff]
        note = (
            f" ({', '.join(hidden)} changed and restored: the end state hides it)" if hidden else ""
        )
        # Names as a sentence lists them: "outside the task's tables []" was Python's,
        # and "outside the task's tables: (none)" read as if the task named none by mistake.
        where = (
            f", outside the task's tables: {', '.join(sorted(allowed))}"
            if allowed
            else "; the task allows no table to change"
        )
        return failed(f"wrote to {', '.join(extra)}{where}{note}", events=events)
    return passed(f"the audit history touches only {', '.join(touched) or 'no tables'}")


def _read_notes_before_acting(episode: ToolEpisode) -> OutcomeVerdict:
    expect = task_expectation(episode)
    note_ids = expect.get("note_ids", [])
    if not note_ids:
        return passed("no claim of this task has notes to read")
    writes = sorted({change["step"] for change in episode.audit})
    reads = sorted(step for note in note_ids for step in read_steps(episode, "case_notes", note))
    facts = {"note_ids": note_ids, "read_steps": reads, "write_steps": writes}
    if not writes:
        return passed("nothing was written, so nothing was done before reading the notes", **facts)
    if reads and reads[0] < writes[0]:
        return passed(
            f"the notes were read at step {reads[0]}, before the first write at step {writes[0]}",
            **facts,
        )
    when = f"only at step {reads[0]}" if reads else "never"
    return failed(f"wrote at step {writes[0]} but read the claim's notes {when}", **facts)


def _answer_reports_done(episode: ToolEpisode) -> OutcomeVerdict:
    finishes = [e for e in episode.actions if e["tool"] == "finish" and e["status"] == "ok"]
    if not finishes:
        return not_measured("the agent never finished with a message")
    message = str(finishes[-1]["arguments"].get("message", ""))
    return passed("the agent finished and reported what it did", message=message)


def _check(name: str, function: Any, version: str = VERSION) -> OutcomeCheck:
    return OutcomeCheck(name, version, function)


ANSWER_CHECK = _check("answer_reports_done", _answer_reports_done)
END_STATE_CHECKS = (
    _check("expected_changes", expected_changes, EXPECTED_CHANGES_VERSION),
    _check("allocations_sum_to_line", _allocations_sum_to_line, NET_VERSION),
    _check("balances_reconcile", _balances_reconcile),
    _check("no_duplicate_allocation", _no_duplicate_allocation, NET_VERSION),
    _check("no_post_over_threshold", _no_post_over_threshold),
    _check("followup_before_deadline", _followup_before_deadline, FOLLOWUP_VERSION),
)
"""Checks a grader that sees only the final database could run."""
HISTORY_CHECKS = (
    _check("only_expected_tables_changed", _only_expected_tables_changed),
    _check("read_notes_before_acting", _read_notes_before_acting),
)
"""Checks that need the audit history or the hidden-state read log."""
REMITTANCE_CHECKS = (ANSWER_CHECK, *END_STATE_CHECKS, *HISTORY_CHECKS)
