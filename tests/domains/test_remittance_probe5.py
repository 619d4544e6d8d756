"""Fifth probe of the remittance environment: real SQLite worlds, the real tools, the
runner's provider and the full policy.

Fixed here (each test below failed before):

- ``set_claim_status`` to the status a claim already has wrote an unchanged row, so the
  audit history showed a write to ``claims`` and an agent that only confirmed a status
  failed ``only_expected_tables_changed``: a no-op changes nothing in the books, so it
  now writes nothing;
- ``open_case`` offers kind ``recoupment``, yet a recoupment case on the recouped claim
  (a billing office's habit: the takeback is tracked for review or dispute) was an
  "unexpected case" in the very task that recoups; it is now allowed there (with a note),
  and still refused anywhere else, twice on one line, or without a note;
- an agent that keyed a wrong amount, reversed its own allocation and posted the right
  one (the books right, the correction on record) failed ``allocations_sum_to_line`` and
  ``no_duplicate_allocation``; and a posting line that reversed an allocation made before
  the episode was let through by ``expected_changes`` when the money netted out (the
  tool refuses that reversal since environment v3: see test_remittance_probe7).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import (
    Call,
    Reply,
    call,
    careful_but,
    play,
    post_void_post,
    provider,
)

__all__ = ["provider"]  # the shared module-scoped fixture


# -- a status set to the value it has ---------------------------------------------------------
def confirms_status(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """Before finishing, sets each claim's status to what ``read_claim`` showed."""
    if step["tool"] == "finish":
        for line in context["remittance"]["lines"]:
            claim = (yield call("read_claim", claim_id=line["claim_id"]))["result"]
            reply = yield call(
                "set_claim_status", claim_id=claim["claim_id"], status=claim["status"]
            )
            assert reply["ok"], reply
            assert reply["result"]["changed"] is False
    return (yield step)


@pytest.mark.parametrize("task_id", ["full-01", "denial-01", "recoup-01", "hidden-01"])
def test_setting_a_claim_to_its_own_status_writes_nothing(
    provider: RemittanceProvider, task_id: str
) -> None:
    played = play(provider, task_id, careful_but(confirms_status))
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


def appeals_the_denial(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "finish":
        claim = context["remittance"]["lines"][0]["claim_id"]
        reply = yield call("set_claim_status", claim_id=claim, status="appealed")
        assert reply["result"]["changed"] is True
    return (yield step)


def test_a_real_status_change_outside_the_task_is_still_caught(
    provider: RemittanceProvider,
) -> None:
    played = play(provider, "denial-01", careful_but(appeals_the_denial))
    assert played.decision == "reject"
    assert "only_expected_tables_changed" in played.failing


# -- recoupment cases ------------------------------------------------------------------------
def recoupment_case(*, note: bool = True, times: int = 1, on_every_claim: bool = False) -> Any:
    """After each reversal (or, ``on_every_claim``, on every claim the remittance pays),
    opens ``times`` recoupment cases, each with a note unless ``note`` is false."""

    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        reply = yield step
        claims: list[str] = []
        if on_every_claim and step["tool"] == "read_remittance":
            claims = sorted({x["claim_id"] for x in reply["result"]["lines"]})
        elif not on_every_claim and step["tool"] == "reverse_allocation":
            rline = step["arguments"]["remittance_line_id"]
            claims = [
                x["claim_id"] for x in context["remittance"]["lines"] if x["rline_id"] == rline
            ]
        for claim_id in claims:
            for _ in range(times):
                opened = yield call(
                    "open_case", claim_id=claim_id, kind="recoupment", reason="payer took back EFT"
                )
                assert opened["ok"], opened
                if note:
                    case_id = opened["result"]["case_id"]
                    yield call("add_note", case_id=case_id, text="Reversal posted; check the EOB.")
        return reply

    return hook


@pytest.mark.parametrize("task_id", ["recoup-01", "recoup-02", "recoup-03"])
def test_a_noted_recoupment_case_on_the_recouped_claim_is_accepted(
    provider: RemittanceProvider, task_id: str
) -> None:
    played = play(provider, task_id, careful_but(recoupment_case()))
    assert played.decision == "accept", (played.failing, played.problems("expected_changes"))


@pytest.mark.parametrize(
    ("task_id", "hook", "problem"),
    [
        ("recoup-01", recoupment_case(note=False), "has no note"),
        ("recoup-01", recoupment_case(times=2), "expected at most 1"),
        ("recoup-02", recoupment_case(on_every_claim=True), "unexpected case"),
        ("full-01", recoupment_case(on_every_claim=True), "unexpected case"),
    ],
    ids=["no-note", "twice", "offset-claim", "no-recoupment"],
)
def test_other_recoupment_cases_are_still_rejected(
    provider: RemittanceProvider, task_id: str, hook: Any, problem: str
) -> None:
    played = play(provider, task_id, careful_but(hook))
    assert played.decision == "reject"
    assert any(problem in p for p in played.problems("expected_changes")), played.problems(
        "expected_changes"
    )


# -- a keying error corrected by a reversal --------------------------------------------------
def keys_wrong_then_corrects(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """Posts a dollar too little, reverses that allocation, then posts the right amount.
    (A dollar too much is refused since the remittance line does not hold it: probe6.)"""
    if step["tool"] == "post_allocation":
        args = step["arguments"]
        wrong = yield call(
            "post_allocation", **{**args, "amount_cents": args["amount_cents"] - 100}
        )
        undo = yield call(
            "reverse_allocation",
            allocation_id=wrong["result"]["allocation_id"],
            remittance_line_id=args["remittance_line_id"],
            reason="keyed the wrong amount; reposting",
        )
        assert undo["ok"], undo
    return (yield step)


@pytest.mark.parametrize(
    ("task_id", "hook"),
    [
        ("full-01", keys_wrong_then_corrects),
        ("partial-01", keys_wrong_then_corrects),
        ("split-01", keys_wrong_then_corrects),
        ("underpaid-01", keys_wrong_then_corrects),
        ("full-01", post_void_post),
        ("partial-02", post_void_post),
    ],
)
def test_a_corrected_posting_is_accepted(
    provider: RemittanceProvider, task_id: str, hook: Any
) -> None:
    played = play(provider, task_id, careful_but(hook))
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


# A posting line reversing an allocation made before the episode is refused by the tool
# since environment v3: test_remittance_probe7.
