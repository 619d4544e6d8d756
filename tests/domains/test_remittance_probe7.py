"""Seventh probe of the remittance environment: real SQLite worlds, the real tools, the
runner's provider and the full policy.

Fixed here (each test below failed before):

- an ``over_threshold`` task none of whose lines pays above the approval threshold tested
  nothing (the right action was to post everything, like ``full_payment``); it is refused
  when the task file is read, or, when only the payer's contracted amount keeps the line
  under the threshold, when the task's environment is built;
- ``request_approval`` wrote a request for any amount (5 cents on a line that paid
  16,992, dollars for cents) and for lines that send no money (a recoupment): a
  supervisor approves a posting, and such a request approves none. The tool now asks for
  exactly the line's payment, and nothing is written;
- ``reverse_allocation`` citing a line that pays took back an allocation of an earlier
  remittance; only ``expected_changes`` noticed, after the episode. A payer takes money
  back on a recoupment line: a line that pays may undo only an allocation of its own
  money (a keying error corrected, which stays accepted).
"""

from __future__ import annotations

import tomllib
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from onrecord.domains.remittance import RemittanceEnvironment, load_tasks
from onrecord.errors import InputError
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import Call, Reply, call, careful_but, play, provider
from tests.domains.test_remittance_probe6 import TASKS, _kinds_toml, _refused, first_tries

__all__ = ["provider"]  # the shared module-scoped fixture


def _task_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "tasks.toml"
    path.write_text(_kinds_toml(tomllib.loads(TASKS.read_text())["kinds"]) + body)
    return path


# -- an over_threshold task with nothing over the threshold ---------------------------------
@pytest.mark.parametrize(
    "lines",
    [
        '[{ code = "99213" }]',
        '[{ code = "29881" }, { code = "99214", patient_resp = 2000 }]',
        '[{ code = "27447", paid = 1000000 }]',
        '[{ code = "27447", patient_resp = 1450000 }]',
    ],
    ids=["visit", "arthroscopy-below", "exactly-the-threshold", "share-leaves-too-little"],
)
def test_an_over_threshold_task_with_no_line_over_it_is_refused(tmp_path: Path, lines: str) -> None:
    path = _task_file(
        tmp_path,
        f'[[task]]\nid = "nothing-over"\nkind = "over_threshold"\npayer = "PAY-AETNA"\n'
        f"lines = {lines}\n",
    )
    with pytest.raises(InputError, match=r"nothing-over.*no line pays above the approval"):
        load_tasks(path)


def test_a_contract_below_the_threshold_is_refused_when_the_environment_is_built(
    tmp_path: Path,
) -> None:
    """The knee replacement's contract differs by seed: with a 6,000.00 patient share
    seed 2's contract pays 8,639.11 (nothing to approve), seed 0's 11,184.44."""
    body = (
        '[[task]]\nid = "contract-decides"\nkind = "over_threshold"\npayer = "PAY-AETNA"\n'
        'seed = {seed}\nlines = [{{ code = "27447", patient_resp = 600000 }}]\n'
    )
    fits = load_tasks(_task_file(tmp_path, body.format(seed=0)))[0]
    env = RemittanceEnvironment(fits)
    try:
        assert [x["action"] for x in env.expectation["lines"]] == ["approve"]
    finally:
        env.close()
    (tmp_path / "tasks.toml").unlink()
    below = load_tasks(_task_file(tmp_path, body.format(seed=2)))[0]
    with pytest.raises(InputError, match=r"contract-decides.*no line pays above the approval"):
        RemittanceEnvironment(below)


def test_the_packaged_over_threshold_tasks_still_load() -> None:
    assert sum(t.kind == "over_threshold" for t in load_tasks()) == 3


# -- an approval request for something other than the line's payment ------------------------
@pytest.mark.parametrize(
    ("task_id", "change"),
    [
        # 2,121.23 of the line's 18,621.18: a part of the payment, not all of it.
        ("threshold-01", {"amount_cents": 5 - 1_650_000}),
        ("threshold-02", {"amount_cents": -1}),
        ("threshold-03", {"amount_cents": 1}),
    ],
    ids=["a-part-of-it", "a-cent-less", "a-cent-more"],
)
def test_an_approval_for_another_amount_is_refused(
    provider: RemittanceProvider, task_id: str, change: dict[str, int]
) -> None:
    """Before: the wrong request was written, then careful's right one, and the episode
    failed ``expected_changes`` (two requests) with nothing in the tool's reply to say why."""
    played = play(provider, task_id, careful_but(first_tries("request_approval", change)))
    refused = _refused(played, "request_approval")
    assert refused, played.actions
    assert "an approval is for posting that payment, so request" in refused[0]["error"]["message"]
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)


def asks_approval_of_the_recoupment(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "reverse_allocation":
        reply = yield call(
            "request_approval",
            remittance_line_id=step["arguments"]["remittance_line_id"],
            amount_cents=12_000,
            reason="large takeback",
        )
        assert not reply["ok"]
        assert "no posting to approve" in reply["error"]["message"]
    return (yield step)


def test_a_line_that_sends_no_money_has_nothing_to_approve(
    provider: RemittanceProvider,
) -> None:
    played = play(provider, "recoup-01", careful_but(asks_approval_of_the_recoupment))
    assert _refused(played, "request_approval")
    assert played.decision == "accept", played.failing


# -- a reversal of an earlier payment by a line that pays ----------------------------------
def reverses_an_old_payment(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """After posting, takes back an allocation of an earlier remittance citing the line it
    just posted, and would put the same amount on again: money this remittance never
    mentioned moved, though the line's total is what the 835 paid."""
    reply = yield step
    if step["tool"] == "post_allocation" and not context.get("done"):
        context["done"] = True
        args = step["arguments"]
        claims = yield call("search_claims", payer_id=context["remittance"]["payer_id"])
        for found in claims["result"]["claims"]:
            claim = (yield call("read_claim", claim_id=found["claim_id"]))["result"]
            old = [
                a
                for line in claim["lines"]
                for a in line["allocations"]
                if a["reverses"] is None
                and not a["reversed"]
                and a["rline_id"] != args["remittance_line_id"]
            ]
            if old:
                context["taken"] = yield call(
                    "reverse_allocation",
                    allocation_id=old[0]["allocation_id"],
                    remittance_line_id=args["remittance_line_id"],
                    reason="reapplying",
                )
                if context["taken"]["ok"]:
                    yield call(
                        "post_allocation", **{**args, "amount_cents": old[0]["amount_cents"]}
                    )
                break
    return reply


@pytest.mark.parametrize("task_id", ["full-01", "partial-01"])
def test_a_line_that_pays_takes_nothing_back(provider: RemittanceProvider, task_id: str) -> None:
    played = play(provider, task_id, careful_but(reverses_an_old_payment))
    refused = _refused(played, "reverse_allocation")
    assert refused, played.actions
    message = refused[0]["error"]["message"]
    assert "takes nothing back" in message, message
    assert "recoupment line" in message, message
    assert played.decision == "accept", (played.failing, played.trial.coverage_issues)
