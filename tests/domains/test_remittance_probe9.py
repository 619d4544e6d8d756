"""Ninth probe of the remittance and ledger domains: what a developer reads first.

Fixed here (each test below failed before), on real episodes (real SQLite worlds, the
real tools, the runner's provider or the docs' own agents):

- a failing check's reason named only its first problem, the others only in
  ``evidence["problems"]``: ``onrecord show`` and the HTML report put the reason first,
  so a developer fixed one problem, re-ran and only then met the next. ``expected_changes``
  now names every problem, money first (the wrong amount and the wrong claim line
  together), up to four and "and N more"; ``balances_reconcile``,
  ``no_duplicate_allocation``, ``allocations_sum_to_line`` and ``no_post_over_threshold``
  name every line, and the ledger's ``history_intact`` every way the history broke;
- ``post_adjustment`` of a code already posted in full did not list the line's 835
  adjustments, as the refusal of an unknown code does.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path
from typing import Any

from onrecord.domains.ledger import LEDGER_CHECKS
from onrecord.domains.remittance._agents import WRITE_TOOLS, agent_script
from onrecord.episode import evaluate_episode
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_domains_walkthrough13 import TASKS, _grade, wrong_line_then_posted_again
from tests.domains.test_ledger_probe6_agents import _play
from tests.domains.test_ledger_probe10 import SWITCHED_OFF
from tests.domains.test_remittance_probe import Call, Reply, careful_but, play, provider
from tests.domains.test_remittance_probe6 import _refused
from tests.domains.test_remittance_probe8 import repeats

__all__ = ["provider"]  # the shared module-scoped fixture


def _result(played: Any, check: str) -> Any:
    return next(r for r in played.trial.results if r.name == check)


def pretends_to_write(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """Careful's reads, its writes never sent (a reply made up for each)."""
    if step["tool"] in WRITE_TOOLS and step["tool"] != "finish":
        return {"ok": True, "result": {"case_id": 1, "allocation_id": 1}, "error": None}
    return (yield step)


# -- expected_changes names every problem --------------------------------------------------
def test_the_wrong_claim_line_is_in_the_reason_beside_the_wrong_amount() -> None:
    """The walkthrough's case: 10.00 of the first line posted to the second line's claim
    line, then the whole line refused. Before: "2 expected change(s) wrong: RL-…: allocated
    1000 cents, the remittance paid 22000" and nothing about the claim line."""
    failing, _ = _grade(TASKS["full-02"], wrong_line_then_posted_again)
    reason = failing["expected_changes"]
    assert re.search(r"allocated 1000 cents, the remittance paid 22000", reason), reason
    assert re.search(r"allocated to \['CL-\d+'\], expected only \['CL-\d+'\]", reason), reason


def test_money_comes_first_and_the_rest_is_counted(provider: RemittanceProvider) -> None:
    """partial-04 read but not posted: three lines unallocated and three without their
    adjustments. Before: only the first line's allocation was named."""
    played = play(provider, "partial-04", careful_but(pretends_to_write))
    result = _result(played, "expected_changes")
    problems = result.evidence["problems"]
    assert len(problems) == 6
    head, tail = result.reason.split(": ", 1)
    assert head == "6 expected change(s) wrong"
    shown = tail.split("; ")
    assert shown[-1] == "and 2 more (see the evidence)"
    assert [re.sub(r"RL-\d+: ", "", s).split(",")[0] for s in shown[:3]] == [
        "allocated 0 cents"
    ] * 3
    assert "adjustments [] differ from the 835's" in shown[3]


def test_a_line_that_needs_approval_does_not_hide_the_line_left_unposted(
    provider: RemittanceProvider,
) -> None:
    """threshold-02: its first line needs an approval, its second is posted. The line's
    money, unposted, is named first."""
    played = play(provider, "threshold-02", careful_but(pretends_to_write))
    reason = _result(played, "expected_changes").reason
    money = reason.index("allocated 0 cents")
    assert money < reason.index("expected one approval request") < reason.index("adjustments")


# -- the other checks name every line ----------------------------------------------------------
def test_a_double_poster_is_told_every_line_it_posted_again(
    provider: RemittanceProvider,
) -> None:
    """duplicate-02 pays two lines already posted; double_poster posts both again. Before:
    each check named the first claim line only."""
    played = play(provider, "duplicate-02", lambda brief: agent_script("double_poster", brief))
    lines = sorted(
        {a["arguments"]["claim_line_id"] for a in played.actions if a["tool"] == "post_allocation"}
    )
    assert len(lines) == 2
    for check in ("balances_reconcile", "no_duplicate_allocation"):
        reason = _result(played, check).reason
        assert all(line in reason for line in lines), reason
    reason = _result(played, "expected_changes").reason
    assert reason.count("must not be posted (duplicate)") == 2, reason


# -- the ledger: every way the history broke ------------------------------------------------
def test_the_ledger_reason_names_the_unaudited_posting_too(tmp_path: Path) -> None:
    """The audit switched off and left off, then the invoice posted: before, the reason
    named the triggers only; the posting with no audit record was in no reason."""
    verdict = _history_intact(tmp_path, "audit left off, then posted")
    assert "The audit triggers were changed" in verdict.reason
    assert "1 posting(s) the episode added are not in the audit history" in verdict.reason
    assert verdict.evidence["unaudited_postings"]


def test_the_ledger_reason_names_every_observation_with_changed_triggers(
    tmp_path: Path,
) -> None:
    verdict = _history_intact(tmp_path, "dropped, bank account changed and restored, recreated")
    assert "observation 2: dropped" in verdict.reason
    assert "observation 3: dropped" in verdict.reason  # before: the first observation only


# -- post_adjustment posted in full lists the 835's adjustments ------------------------------
def test_an_adjustment_posted_in_full_lists_the_lines_835_adjustments(
    provider: RemittanceProvider,
) -> None:
    """partial-02's line carries CO-45 and PR-2; CO-45 posted twice. Before: "… at most 0
    cents of CO-45 are left, not 8668; it is posted in full: post no more CO-45", with no
    word of the PR-2 the line still carries."""
    played = play(provider, "partial-02", careful_but(repeats("post_adjustment")))
    (refused,) = _refused(played, "post_adjustment")
    message = refused["error"]["message"]
    assert re.search(
        r"\(its 835 adjustments: CO-45 \d+ cents, PR-2 4500 cents\); it is posted in full", message
    ), message
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


def _history_intact(tmp_path: Path, case: str) -> Any:
    """The ``history_intact`` result of the ``SWITCHED_OFF`` episode named ``case``."""
    actions, scripts = SWITCHED_OFF[case]
    report = evaluate_episode(_play(tmp_path, actions, scripts), LEDGER_CHECKS)
    return report.trials[0].result("history_intact")
