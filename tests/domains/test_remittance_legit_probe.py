"""Unusual but correct agents on the remittance environment must be accepted: a false
reject blocks a good release. Each is the careful agent working in another valid way
(other tool order, extra reads, a refused call retried correctly, money posted last,
a claim-level payment split the other way round), run through the runner's provider and
judged by the full policy."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from datetime import date, timedelta
from typing import Any

import pytest

from onrecord.domains.remittance import WRITE_TOOLS
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import (
    Call,
    Hook,
    Reply,
    Script,
    call,
    careful_but,
    play,
    provider,
)

__all__ = ["provider"]  # the shared module-scoped fixture


def extra_reads(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "read_remittance":
        yield call("search_remittances", status="posted", limit=5)
        for line in reply["result"]["lines"]:
            claim = (yield call("read_claim", claim_id=line["claim_id"]))["result"]
            yield call("read_open_balances", patient_id=claim["patient_id"])
            yield call("read_case_notes", claim_id=line["claim_id"])
    return reply


def retries_refused_calls(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """Dollars as a float, a made-up tool, an unknown argument, an empty message: each
    refused (nothing written), then sent right."""
    args = step["arguments"]
    wrong: list[Call] = []
    if step["tool"] in ("post_allocation", "post_adjustment"):
        wrong.append(call(step["tool"], **{**args, "amount_cents": args["amount_cents"] / 100}))
    elif step["tool"] == "read_remittance":
        wrong += [call("get_remittance", **args), call("read_remittance", **args, verbose=True)]
    elif step["tool"] == "finish":
        wrong.append(call("finish", message=""))
    for attempt in wrong:
        assert not (yield attempt)["ok"]
    return (yield step)


def money_last_in_reverse(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """Cases, notes and follow-ups first; allocations, adjustments, approvals and
    reversals held back and sent, last line first, just before finishing."""
    held: list[Call] = context.setdefault("held", [])
    if step["tool"] in WRITE_TOOLS - {"open_case", "add_note", "schedule_followup"}:
        held.append(step)
        return {"ok": True, "result": {"allocation_id": 0, "line_balance_cents": 0}, "error": None}
    if step["tool"] == "finish":
        for write in reversed(held):
            assert (yield write)["ok"]
    return (yield step)


def followup_on_deadline_day(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "schedule_followup":
        remittance = context["remittance"]
        deadline = date.fromisoformat(remittance["payment_date"]) + timedelta(
            days=remittance["appeal_window_days"]
        )
        step = call("schedule_followup", **{**step["arguments"], "due_date": deadline.isoformat()})
    return (yield step)


def documents_more(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "schedule_followup":
        case_id = step["arguments"]["case_id"]
        yield call("add_note", case_id=case_id, text="Called the payer; appeal form requested.")
        yield call("schedule_followup", **{**step["arguments"], "action": "check the form arrived"})
    return reply


@pytest.mark.parametrize(
    ("hook", "task_ids"),
    [
        (extra_reads, ["full-01", "denial-01", "hidden-03", "duplicate-02", "recoup-02"]),
        (retries_refused_calls, ["full-02", "partial-04", "split-02", "hidden-03"]),
        (money_last_in_reverse, ["underpaid-02", "recoup-02", "partial-04", "threshold-02"]),
        (followup_on_deadline_day, ["denial-03", "underpaid-02"]),
        (documents_more, ["denial-01", "underpaid-01"]),
    ],
)
def test_unusual_but_correct_agents_are_accepted(
    provider: RemittanceProvider, hook: Hook, task_ids: list[str]
) -> None:
    for task_id in task_ids:
        played = play(provider, task_id, careful_but(hook))
        # The hook must really make the agent work differently, or this accepts the
        # careful agent itself.
        usual = play(provider, task_id, careful_but(_as_is))
        assert _calls(played) != _calls(usual), (task_id, hook.__name__)
        assert played.decision == "accept", (task_id, played.failing, played.trial.coverage_issues)


def _as_is(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    return (yield step)


def _calls(played: Any) -> list[tuple[str, Any]]:
    return [(action["tool"], action["arguments"]) for action in played.actions]


def split_last_line_first(brief: Mapping[str, Any]) -> Script:
    """A claim-level payment filled from the claim's last line, without the duplicate
    search (the task is not a duplicate), notes read before the first write."""
    remittance = (yield call("read_remittance", remittance_id=brief["remittance_id"]))["result"]
    line = remittance["lines"][0]
    yield call("read_case_notes", claim_id=line["claim_id"])
    claim = (yield call("read_claim", claim_id=line["claim_id"]))["result"]
    remaining = line["paid_cents"]
    for target in reversed(claim["lines"]):
        amount = min(remaining, target["balance_cents"])
        if amount > 0:
            yield call(
                "post_allocation",
                remittance_line_id=line["rline_id"],
                claim_line_id=target["line_id"],
                amount_cents=amount,
            )
            remaining -= amount
    yield call("finish", message=f"Posted {line['paid_cents']} cents over {claim['claim_id']}.")


@pytest.mark.parametrize("task_id", ["split-01", "split-02", "split-03"])
def test_a_split_in_another_valid_order_is_accepted(
    provider: RemittanceProvider, task_id: str
) -> None:
    assert play(provider, task_id, split_last_line_first).decision == "accept"
