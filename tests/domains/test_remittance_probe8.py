"""Eighth probe of the remittance environment: real SQLite worlds, the real tools, the
runner's provider and the full policy.

Fixed here (each test below failed before):

- a second ``request_approval`` for a line whose request is still pending (a blind retry
  after a lost reply, or a reworded reason) was written, and ``expected_changes`` then
  rejected the episode (two requests) with nothing in the tool's reply to say why. One
  posting has one pending approval: the repeat is refused, naming the pending request,
  as a second reversal of one allocation is;
- ``reverse_allocation`` citing a recoupment line reversed any allocation of the payer:
  one on another claim line than the one the recoupment names, or one larger than what
  the recoupment has left to take back (the agent's own mis-posting undone through the
  recoupment line). Only ``expected_changes`` noticed, after the episode. The tool now
  refuses both, with the claim line, the amounts and the fix;
- refusals that gave no next step or pointed at a search that does not exist (an unknown
  allocation or case id, an adjustment already posted in full, a line with nothing left
  to apply, a reversal already made) now say what to do.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from onrecord.domains.remittance import RemittanceEnvironment, load_tasks
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import Call, Reply, call, careful_but, play, provider
from tests.domains.test_remittance_probe6 import _refused

__all__ = ["provider"]  # the shared module-scoped fixture


# -- a second approval request while one is pending ------------------------------------------
def asks_twice(reason: str | None) -> Any:
    """Makes careful's approval request, then asks again (the same call, or with another
    reason) as an agent does that did not trust the first reply."""

    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        reply = yield step
        if step["tool"] == "request_approval" and reply["ok"]:
            args = dict(step["arguments"])
            if reason is not None:
                args["reason"] = reason
            context["again"] = yield call("request_approval", **args)
            context["first"] = reply["result"]["approval_id"]
        return reply

    return hook


@pytest.mark.parametrize(
    ("task_id", "reason"),
    [("threshold-01", None), ("threshold-02", "large payment, supervisor please review")],
    ids=["same-call", "reworded"],
)
def test_a_second_approval_request_while_one_is_pending_is_refused(
    provider: RemittanceProvider, task_id: str, reason: str | None
) -> None:
    """Before: both requests were written and ``expected_changes`` failed the episode
    ("expected one approval request ..., found [two]")."""
    played = play(provider, task_id, careful_but(asks_twice(reason)))
    refused = _refused(played, "request_approval")
    assert len(refused) == 1, played.actions
    message = refused[0]["error"]["message"]
    assert "already has approval request" in message, message
    assert "cents pending" in message, message
    assert "do not ask again" in message, message
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


# -- reversals on a recoupment line ------------------------------------------------------------
def _recoupment_line(context: dict[str, Any]) -> dict[str, Any]:
    return next(x for x in context["remittance"]["lines"] if x["paid_cents"] < 0)


def reverses_another_lines_payment(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    """Before careful's reversal, takes back a payment of another claim of the same payer
    (one that fits the recouped amount) citing the recoupment line: the wrong claim picked
    from a search."""
    if step["tool"] == "reverse_allocation" and "wrong" not in context:
        recoup = _recoupment_line(context)
        found = yield call("search_claims", payer_id=context["remittance"]["payer_id"], limit=200)
        for claim in found["result"]["claims"]:
            if claim["claim_id"] == recoup["claim_id"]:
                continue
            lines = (yield call("read_claim", claim_id=claim["claim_id"]))["result"]["lines"]
            fits = [
                a
                for line in lines
                for a in line["allocations"]
                if a["reverses"] is None
                and not a["reversed"]
                and 0 < a["amount_cents"] <= -recoup["paid_cents"]
            ]
            if fits:
                context["wrong"] = yield call(
                    "reverse_allocation",
                    allocation_id=fits[0]["allocation_id"],
                    remittance_line_id=recoup["rline_id"],
                    reason="payer recouped",
                )
                break
    return (yield step)


@pytest.mark.parametrize("task_id", ["recoup-01", "recoup-02", "recoup-03"])
def test_a_recoupment_takes_back_only_from_the_line_it_names(
    provider: RemittanceProvider, task_id: str
) -> None:
    """Before: the other claim's payment was reversed and ``expected_changes`` failed the
    episode afterwards ("expected one reversal of allocation ...")."""
    played = play(provider, task_id, careful_but(reverses_another_lines_payment))
    refused = _refused(played, "reverse_allocation")
    assert len(refused) == 1, played.actions
    message = refused[0]["error"]["message"]
    assert "cents from claim line CL-" in message, message
    assert "read_claim" in message, message
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


def misposts_the_offset_then_undoes_it_through_the_recoupment(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    """Before careful's reversal, posts the offset payment to the recouped claim line (the
    wrong line of the 835), notices, and undoes it citing the recoupment line, as if any
    reversal went there; told no, undoes it from the line it was posted from."""
    if step["tool"] == "reverse_allocation" and "wrong" not in context:
        recoup = _recoupment_line(context)
        offset = next(x for x in context["remittance"]["lines"] if x["paid_cents"] > 0)
        posted = yield call(
            "post_allocation",
            remittance_line_id=offset["rline_id"],
            claim_line_id=recoup["line_id"],
            amount_cents=offset["paid_cents"],
        )
        allocation = posted["result"]["allocation_id"]
        context["wrong"] = yield call(
            "reverse_allocation",
            allocation_id=allocation,
            remittance_line_id=recoup["rline_id"],
            reason="posted to the wrong line",
        )
        if not context["wrong"]["ok"]:
            yield call(
                "reverse_allocation",
                allocation_id=allocation,
                remittance_line_id=offset["rline_id"],
                reason="posted to the wrong line",
            )
    return (yield step)


def test_a_recoupment_takes_back_no_more_than_it_recoups(provider: RemittanceProvider) -> None:
    """recoup-02 recoups 85.00 from CL-100057 and pays 150.00 on another claim. Before: the
    150.00 posted to CL-100057 by mistake was reversed through the recoupment line (taking
    back 150.00 on a line that recoups 85.00), and ``expected_changes`` failed the episode."""
    played = play(
        provider,
        "recoup-02",
        careful_but(misposts_the_offset_then_undoes_it_through_the_recoupment),
    )
    refused = _refused(played, "reverse_allocation")
    assert len(refused) == 1, played.actions
    message = refused[0]["error"]["message"]
    assert "takes back 8500 cents" in message, message
    assert "at most 8500 cents are left to take back" in message, message
    assert "not the 15000 cents of allocation" in message, message
    assert "cite the line it was posted from" in message, message
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


def test_a_recoupment_taken_back_in_full_takes_nothing_more() -> None:
    """Direct on the tool world: after the recouped payment is reversed, the recoupment line
    has nothing left to take back, even one cent on the line it names."""
    task = next(t for t in load_tasks() if t.task_id == "recoup-02")
    env = RemittanceEnvironment(task)
    try:
        env.world.reset()
        recoup, offset = env.expectation["lines"]
        ok = env.world.call(
            "reverse_allocation",
            {
                "allocation_id": recoup["reverse"],
                "remittance_line_id": recoup["rline_id"],
                "reason": "payer recouped",
            },
        )
        assert ok["status"] == "ok", ok
        one_cent = env.world.call(
            "post_allocation",
            {
                "remittance_line_id": offset["rline_id"],
                "claim_line_id": recoup["targets"][0],
                "amount_cents": 1,
            },
        )
        refused = env.world.call(
            "reverse_allocation",
            {
                "allocation_id": one_cent["result"]["allocation_id"],
                "remittance_line_id": recoup["rline_id"],
                "reason": "recouped",
            },
        )
        assert refused["status"] == "rejected", refused
        assert "8500 are already taken back" in refused["error"]["message"], refused
        assert "nothing is left to take back" in refused["error"]["message"], refused
    finally:
        env.close()


# -- refusals that say what to do next ----------------------------------------------------------
def repeats(tool: str) -> Any:
    """Makes careful's ``tool`` call, then the same call again (a blind retry)."""

    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        reply = yield step
        if step["tool"] == tool and reply["ok"] and tool not in context:
            context[tool] = yield step
        return reply

    return hook


def tries_first(tool: str, change: dict[str, Any]) -> Any:
    """Before careful's first ``tool`` call, makes it once with ``change``."""

    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        if step["tool"] == tool and tool not in context:
            context[tool] = yield call(tool, **{**step["arguments"], **change})
        return (yield step)

    return hook


def allocates_from_the_denial(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "open_case" and "done" not in context:
        context["done"] = True
        line = context["remittance"]["lines"][0]
        yield call(
            "post_allocation",
            remittance_line_id=line["rline_id"],
            claim_line_id=line["line_id"],
            amount_cents=100,
        )
    return (yield step)


@pytest.mark.parametrize(
    ("task_id", "hook", "tool", "says"),
    [
        ("full-01", repeats("post_allocation"), "post_allocation", "nothing is left to post"),
        ("partial-01", repeats("post_adjustment"), "post_adjustment", "posted in full: post no"),
        ("denial-01", allocates_from_the_denial, "post_allocation", "paid 0 cents: it sends no"),
        ("recoup-01", repeats("reverse_allocation"), "reverse_allocation", "(by allocation "),
        (
            "recoup-01",
            tries_first("reverse_allocation", {"allocation_id": 10**9}),
            "reverse_allocation",
            "read_claim lists each claim line's allocations",
        ),
        (
            "denial-01",
            tries_first("add_note", {"case_id": 10**9}),
            "add_note",
            "open_case returns a case's id",
        ),
    ],
    ids=[
        "allocated-in-full",
        "adjusted-in-full",
        "denied-line",
        "reversed",
        "no-such-allocation",
        "no-such-case",
    ],
)
def test_a_refusal_says_what_to_do_next(
    provider: RemittanceProvider, task_id: str, hook: Any, tool: str, says: str
) -> None:
    """Before: "at most 0 cents are left to post, not 16992; post at most the amount left",
    "... at most 0 cents of CO-45 are left, not 3012" (no next step), "unknown allocation_id
    1000000000; search first" (no tool searches allocations or cases), "allocation 42 was
    already reversed" (by what, from where)."""
    played = play(provider, task_id, careful_but(hook))
    refused = _refused(played, tool)
    assert len(refused) == 1, played.actions
    assert says in refused[0]["error"]["message"], refused[0]["error"]["message"]
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)
