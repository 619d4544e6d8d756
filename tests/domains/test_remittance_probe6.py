"""Sixth probe of the remittance environment: real SQLite worlds, the real tools, the
runner's provider and the full policy.

Fixed here (each test below failed before):

- ``post_allocation`` applied any amount from a remittance line, even more than the payer
  sent on it (a cent too much, a billion dollars, money from a recoupment line that sends
  none); only ``balances_reconcile`` or ``expected_changes`` noticed, after the episode.
  A poster cannot apply money not received: the call is refused, naming what the line
  paid, what is applied and what is left, and nothing is written;
- ``post_adjustment`` posted any group and reason code in any amount "from" a remittance
  line, though an 835 adjustment is what the 835 carries: a code the line does not carry
  (a recouped amount billed to the patient, CO-42 for CO-45), or more of it than it
  carries (a cent too much), is refused, listing the line's adjustments;
- a ``hidden_redirect`` task whose lines repeat a procedure code had two equally valid
  postings (either corrected line could take either payment) and an expectation that
  picked one, so careful was rejected; such a task is now refused when the file is read;
- a posting that leaves a claim line with a credit balance (a payment already posted,
  posted again) said nothing beyond a negative balance; it is still posted (real money
  can overpay a claim) but the reply names the credit balance and how to undo a mistake.

A cent too little is still accepted by the tools and still rejected by the checks.
"""

from __future__ import annotations

import tomllib
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from onrecord.domains.remittance import load_tasks
from onrecord.domains.remittance._agents import agent_script
from onrecord.errors import InputError
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import (
    Call,
    Reply,
    call,
    careful_but,
    play,
    provider,
    recoupment_billed_to_patient,
)

__all__ = ["provider"]  # the shared module-scoped fixture

TASKS = Path(__file__).parents[2] / "src/onrecord/domains/remittance/tasks.toml"


def _refused(played: Any, tool: str) -> list[dict[str, Any]]:
    return [a for a in played.actions if a["tool"] == tool and a["status"] == "rejected"]


def first_tries(tool: str, change: dict[str, Any], *, then_right: bool = True) -> Any:
    """Before each ``tool`` call, tries it once with ``change`` (amount deltas for
    ``amount_cents``, values otherwise); then, if ``then_right``, makes careful's call."""

    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        if step["tool"] == tool:
            args = dict(step["arguments"])
            for key, value in change.items():
                args[key] = args[key] + value if key == "amount_cents" else value
            reply = yield call(tool, **args)
            if not then_right:
                return reply
        return (yield step)

    return hook


# -- allocations above what the remittance line paid ------------------------------------------
@pytest.mark.parametrize(
    ("task_id", "extra"),
    [("full-01", 1), ("partial-01", 1), ("split-01", 1), ("underpaid-01", 10**9)],
)
def test_allocating_more_than_the_line_paid_is_refused(
    provider: RemittanceProvider, task_id: str, extra: int
) -> None:
    played = play(
        provider, task_id, careful_but(first_tries("post_allocation", {"amount_cents": extra}))
    )
    refused = _refused(played, "post_allocation")
    assert refused, played.actions
    assert "cents are left to post" in refused[0]["error"]["message"], refused[0]
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


def allocates_from_the_recoupment(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    """Instead of reversing, 'posts' the recoupment's amount back onto the claim line."""
    if step["tool"] == "reverse_allocation":
        rline = step["arguments"]["remittance_line_id"]
        line = next(x for x in context["remittance"]["lines"] if x["rline_id"] == rline)
        yield call(
            "post_allocation",
            remittance_line_id=rline,
            claim_line_id=line["line_id"],
            amount_cents=-line["paid_cents"],
        )
    return (yield step)


def test_a_recoupment_line_has_no_money_to_allocate(provider: RemittanceProvider) -> None:
    played = play(provider, "recoup-01", careful_but(allocates_from_the_recoupment))
    refused = _refused(played, "post_allocation")
    assert refused
    assert "reverse the recouped allocation" in refused[0]["error"]["message"]
    assert played.decision == "accept", played.failing


# -- adjustments the 835 line does not carry ------------------------------------------------
@pytest.mark.parametrize(
    ("task_id", "hook", "message"),
    [
        ("recoup-01", recoupment_billed_to_patient, "carries no PR-2 adjustment"),
        ("recoup-02", recoupment_billed_to_patient, "carries no PR-2 adjustment"),
        ("partial-01", first_tries("post_adjustment", {"reason_code": "42"}), "carries no CO-42"),
        (
            "partial-02",
            first_tries("post_adjustment", {"amount_cents": 1}),
            "cents of CO-45 are left",
        ),
    ],
    ids=["recouped-to-patient-1", "recouped-to-patient-2", "wrong-reason", "a-cent-too-much"],
)
def test_an_adjustment_the_835_does_not_carry_is_refused(
    provider: RemittanceProvider, task_id: str, hook: Any, message: str
) -> None:
    played = play(provider, task_id, careful_but(hook))
    refused = _refused(played, "post_adjustment")
    assert refused, played.actions
    assert message in refused[0]["error"]["message"]
    assert played.decision == "accept", played.failing


def test_a_cent_too_little_is_still_rejected_by_the_checks(provider: RemittanceProvider) -> None:
    played = play(
        provider,
        "partial-02",
        careful_but(first_tries("post_adjustment", {"amount_cents": -1}, then_right=False)),
    )
    assert not _refused(played, "post_adjustment")
    assert played.decision == "reject"
    assert "expected_changes" in played.failing


# -- a credit balance is posted, and said ----------------------------------------------------
@pytest.mark.parametrize("task_id", ["duplicate-01", "duplicate-02"])
def test_a_posting_that_leaves_a_credit_balance_says_so(
    provider: RemittanceProvider, task_id: str
) -> None:
    played = play(provider, task_id, lambda brief: agent_script("double_poster", brief))
    posted = [a for a in played.actions if a["tool"] == "post_allocation"]
    assert posted
    assert all(a["status"] == "ok" for a in posted)
    credit = [a["result"] for a in posted if a["result"]["line_balance_cents"] < 0]
    assert credit, posted
    assert credit[0]["credit_balance_cents"] == -credit[0]["line_balance_cents"]
    assert "reverse_allocation" in credit[0]["warning"]
    assert played.decision == "reject"
    assert {"balances_reconcile", "no_duplicate_allocation"} <= played.failing


# -- a task with two equally valid postings -------------------------------------------------
def test_a_redirect_whose_lines_repeat_a_procedure_is_refused(tmp_path: Path) -> None:
    """With two 99213 lines on the corrected claim either payment fits either line; the
    expectation picked one mapping, so careful (which took the first 99213 for both) and
    any agent that picked the other were rejected. Such a task is now refused."""
    kinds = tomllib.loads(TASKS.read_text())["kinds"]
    task = (
        '[[task]]\nid = "redirect-twice"\nkind = "hidden_redirect"\npayer = "PAY-AETNA"\n'
        'lines = [{ code = "99213" }, { code = "99213", patient_resp = 2000 }]\n'
    )
    path = tmp_path / "tasks.toml"
    path.write_text(_kinds_toml(kinds) + task)
    with pytest.raises(InputError, match=r"redirect-twice.*repeat code\(s\) \['99213'\]"):
        load_tasks(path)


def _kinds_toml(kinds: dict[str, Any]) -> str:
    out = []
    for name, kind in kinds.items():
        tables = ", ".join(f'"{t}"' for t in kind["allowed_tables"])
        focus = ", ".join(f'"{f}"' for f in kind["focus"])
        out.append(f"[kinds.{name}]\nallowed_tables = [{tables}]\nfocus = [{focus}]\n")
    return "\n".join(out) + "\n"
