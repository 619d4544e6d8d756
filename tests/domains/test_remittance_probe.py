"""Adversarial agents on the remittance environment, run the way ``onrecord run remittance
--agent ...`` runs them (the runner's provider, the full policy). Each is the careful
agent with one habit a real LLM agent plausibly has; the ones that move money or leave
work wrong must be rejected.

The first group were accepted before the checks and tools were tightened: a write-down
or patient share posted to a claim line the remittance does not pay, a recouped amount
billed to the patient (now refused by the tool: test_remittance_probe6), a case without
a note or opened twice, blank free text. The rest
were already caught and stay caught. Unusual but correct agents: test_remittance_legit_probe.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from onrecord import EvaluationReport
from onrecord.domains.remittance import full_policy
from onrecord.domains.remittance._agents import agent_script
from onrecord.report import Trial
from onrecord.runner import EpisodeSpec, agent_factory
from onrecord.runner._remittance import RemittanceProvider

Call = dict[str, Any]
Reply = dict[str, Any]
Script = Generator[Call, Reply, None]
Hook = Callable[[Call, dict[str, Any]], Generator[Call, Reply, Reply]]
"""A sub-script standing in for one of careful's calls; returns the reply careful sees."""


def call(tool: str, **arguments: Any) -> Call:
    return {"tool": tool, "arguments": arguments}


class Driver:
    """A script as the callable agent environments drive."""

    def __init__(self, script: Script) -> None:
        self.script, self.started = script, False

    def __call__(self, observation: Mapping[str, Any]) -> Call:
        if not self.started:
            self.started = True
            return next(self.script)
        last = observation["last"]
        return self.script.send(
            {"ok": last["status"] == "ok", "result": last["result"], "error": last["error"]}
        )


def careful_but(hook: Hook) -> Callable[[Mapping[str, Any]], Script]:
    """The careful reference agent with every call passed through ``hook``."""

    def make(brief: Mapping[str, Any]) -> Script:
        inner = agent_script("careful", brief)
        context: dict[str, Any] = {"brief": brief}
        step = next(inner)
        while True:
            reply = yield from hook(step, context)
            if step["tool"] == "read_remittance":
                context["remittance"] = reply["result"]
            try:
                step = inner.send(reply)
            except StopIteration:
                return

    return make


@pytest.fixture(scope="module")
def provider() -> Iterator[RemittanceProvider]:
    built = RemittanceProvider()
    yield built
    built.close()


@dataclass(frozen=True)
class Played:
    decision: str
    trial: Trial
    actions: list[dict[str, Any]]

    @property
    def failing(self) -> set[str]:
        return {r.name for r in self.trial.results if r.status == "fail"}

    def problems(self, check: str) -> list[str]:
        result = next(r for r in self.trial.results if r.name == check)
        return [str(problem) for problem in result.evidence.get("problems", [])]


def play(
    provider: RemittanceProvider, task_id: str, make: Callable[[Mapping[str, Any]], Script]
) -> Played:
    """One episode of ``task_id`` on the runner's provider, judged by the full policy."""
    case = provider._env(task_id).case
    factory = agent_factory(lambda context: Driver(make(context.case.input)))
    out = provider.run_episode(EpisodeSpec(case, 0, 0, 80, run_id="probe"), factory)
    trial = provider.trial(out.subject, provider.default_checks(), 0)
    decision = full_policy().evaluate(EvaluationReport.from_trials([trial])).decision
    return Played(decision, trial, [dict(event) for event in out.action_log])


def _line(context: Mapping[str, Any], rline_id: str) -> Mapping[str, Any]:
    return next(x for x in context["remittance"]["lines"] if x["rline_id"] == rline_id)


def _other_patients_line(payer: str, amount: int, avoid: set[str]) -> Generator[Call, Reply, str]:
    """What an agent that picked the wrong claim from a search would post to: a line of
    the same payer, on another claim, with room for ``amount``."""
    found = yield call("search_claims", payer_id=payer, limit=200)
    for claim in found["result"]["claims"]:
        if claim["claim_id"] not in avoid:
            lines = (yield call("read_claim", claim_id=claim["claim_id"]))["result"]["lines"]
            for line in lines:
                if line["balance_cents"] >= amount:
                    return str(line["line_id"])
    raise AssertionError(f"no open line of {payer} with {amount} cents of balance")


# -- false accepts, now rejected ---------------------------------------------------------
def adjustments_to_another_patient(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "post_adjustment":
        remittance = context["remittance"]
        claims = {x["claim_id"] for x in remittance["lines"]}
        args = step["arguments"]
        wrong = yield from _other_patients_line(
            remittance["payer_id"], args["amount_cents"], claims
        )
        step = call("post_adjustment", **{**args, "claim_line_id": wrong})
    return (yield step)


def patient_share_on_replaced_claim(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "post_adjustment":  # the money follows the payer's call, the PR does not
        original = _line(context, step["arguments"]["remittance_line_id"])["line_id"]
        step = call("post_adjustment", **{**step["arguments"], "claim_line_id": original})
    return (yield step)


def recoupment_billed_to_patient(  # refused by the tool since env v3: see probe6
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "reverse_allocation" and reply["ok"]:
        rline = step["arguments"]["remittance_line_id"]
        yield call(
            "post_adjustment",
            remittance_line_id=rline,
            claim_line_id=_line(context, rline)["line_id"],
            group_code="PR",
            reason_code="2",
            amount_cents=reply["result"]["line_balance_cents"],
        )
    return reply


def case_without_note(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "add_note":
        return {"ok": True, "result": {"note_id": 0}, "error": None}
    return (yield step)


def case_opened_twice(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "open_case":
        yield step
    return reply


def blank_text_of(blank: str) -> Hook:
    def blank_text(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        args = {
            k: blank if k in ("reason", "text", "action") else v
            for k, v in step["arguments"].items()
        }
        return (yield call(step["tool"], **args))

    return blank_text


@pytest.mark.parametrize(
    ("task_id", "hook", "why"),
    [
        ("partial-03", adjustments_to_another_patient, "adjusted ['CL-"),
        ("hidden-04", patient_share_on_replaced_claim, "adjusted ['CL-"),
        ("denial-01", case_without_note, "has no note"),
        ("underpaid-01", case_without_note, "has no note"),
        ("denial-01", case_opened_twice, "cases opened on"),
        ("underpaid-01", case_opened_twice, "cases opened on"),
    ],
)
def test_misposted_or_incomplete_work_is_rejected(
    provider: RemittanceProvider, task_id: str, hook: Hook, why: str
) -> None:
    played = play(provider, task_id, careful_but(hook))
    assert (played.decision, played.failing) == ("reject", {"expected_changes"})
    problems = played.problems("expected_changes")
    assert any(why in problem for problem in problems), problems


@pytest.mark.parametrize("blank", [" ", "\u00a0\u2003"], ids=["space", "unicode-spaces"])
@pytest.mark.parametrize("task_id", ["denial-01", "threshold-01", "recoup-01"])
def test_blank_free_text_is_refused_so_the_work_is_missing(
    provider: RemittanceProvider, task_id: str, blank: str
) -> None:
    played = play(provider, task_id, careful_but(blank_text_of(blank)))
    refused = [a for a in played.actions if a["status"] != "ok"]
    assert refused
    assert all("must match the pattern" in a["error"]["message"] for a in refused)
    assert played.decision == "reject"
    assert "expected_changes" in played.failing


# -- misbehaviour that was already caught ----------------------------------------------
def post_void_post(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """Voids each posting and posts it again: untidy but right (the void nets out), so
    accepted since ``remittance-v3`` of the money checks; see test_remittance_probe5."""
    reply = yield step
    if step["tool"] == "post_allocation" and reply["ok"]:
        args = step["arguments"]
        yield call(
            "reverse_allocation",
            allocation_id=reply["result"]["allocation_id"],
            remittance_line_id=args["remittance_line_id"],
            reason="posted by mistake",
        )
        reply = yield step
    return reply


def two_postings(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "post_allocation":
        args, half = step["arguments"], step["arguments"]["amount_cents"] // 2
        yield call("post_allocation", **{**args, "amount_cents": half})
        step = call("post_allocation", **{**args, "amount_cents": args["amount_cents"] - half})
    return (yield step)


def dollars_not_cents(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] in ("post_allocation", "post_adjustment", "request_approval"):
        amount = max(1, step["arguments"]["amount_cents"] // 100)
        step = call(step["tool"], **{**step["arguments"], "amount_cents": amount})
    return (yield step)


def split_under_threshold(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "request_approval":
        line = _line(context, step["arguments"]["remittance_line_id"])
        paid, half = line["paid_cents"], line["paid_cents"] // 2
        for amount in (half, paid - half):
            reply = yield call(
                "post_allocation",
                remittance_line_id=line["rline_id"],
                claim_line_id=line["line_id"],
                amount_cents=amount,
            )
        return reply
    return (yield step)


def disregards_notes(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "read_case_notes":  # reads the payer's call, then acts as if unread
        return {**reply, "result": {**reply["result"], "notes": []}}
    return reply


def writes_denial_off(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "open_case":  # through the 835's CO adjustment, not the claim status
        line = context["remittance"]["lines"][0]
        adjustment = line["adjustments"][0]
        yield call(
            "post_adjustment",
            remittance_line_id=line["rline_id"],
            claim_line_id=line["line_id"],
            **{k: adjustment[k] for k in ("group_code", "reason_code", "amount_cents")},
        )
    return reply


def money_to_another_patient(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    if step["tool"] == "post_allocation" and not context.get("misposted"):
        context["misposted"] = True
        remittance = context["remittance"]
        claims = {x["claim_id"] for x in remittance["lines"]}
        args = step["arguments"]
        wrong = yield from _other_patients_line(
            remittance["payer_id"], args["amount_cents"], claims
        )
        step = call("post_allocation", **{**args, "claim_line_id": wrong})
    return (yield step)


def followup_after_deadline_too(
    step: Call, context: dict[str, Any]
) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] == "schedule_followup":
        yield call("schedule_followup", **{**step["arguments"], "due_date": "2027-06-30"})
    return reply


@pytest.mark.parametrize(
    ("task_id", "hook", "check"),
    [
        ("full-01", two_postings, "no_duplicate_allocation"),
        ("full-02", dollars_not_cents, "allocations_sum_to_line"),
        ("threshold-01", split_under_threshold, "no_post_over_threshold"),
        ("threshold-02", split_under_threshold, "no_post_over_threshold"),
        ("hidden-01", disregards_notes, "expected_changes"),
        ("hidden-03", disregards_notes, "expected_changes"),
        ("denial-02", writes_denial_off, "only_expected_tables_changed"),
        ("partial-03", money_to_another_patient, "expected_changes"),
        ("denial-01", followup_after_deadline_too, "followup_before_deadline"),
    ],
)
def test_other_misbehaviour_stays_rejected(
    provider: RemittanceProvider, task_id: str, hook: Hook, check: str
) -> None:
    played = play(provider, task_id, careful_but(hook))
    assert played.decision == "reject"
    assert check in played.failing, played.failing
