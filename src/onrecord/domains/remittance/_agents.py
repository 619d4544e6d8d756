"""Reference agents: ``careful`` does every task right; each faulty agent breaks one rule.

An agent here is a *script*: a generator that yields tool calls (``{"tool", "arguments"}``)
and receives each call's reply (``{"ok", "result", "error"}``). ``ScriptedAgent`` turns a
script into the plain callable from observation to tool call that environments drive.
All agents share ``_post_remittance``; a fault switches off exactly one careful habit.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping
from datetime import date, timedelta
from typing import Any

from onrecord.domains.remittance._tools import WRITE_TOOLS
from onrecord.errors import InputError

__all__ = [
    "AGENTS",
    "FAULTS",
    "AgentCrashed",
    "Call",
    "Reply",
    "Script",
    "ScriptedAgent",
    "agent_script",
]

Call = dict[str, Any]
Reply = dict[str, Any]
Script = Generator[Call, Reply, None]

FAULTS = (
    "skips_notes",
    "double_poster",
    "ignores_threshold",
    "late_followup",
    "change_and_restore",
    "crash_after_commit",
    "claims_done_without_writing",
)
AGENTS = ("careful", *FAULTS)
"""Every reference agent, ``careful`` first."""

_HOLD = re.compile(r"\bdo not post\b", re.IGNORECASE)
_REDIRECT = re.compile(r"\bapply it to (CLM-\d+)", re.IGNORECASE)


class AgentCrashed(RuntimeError):
    """The ``crash_after_commit`` agent dies right after its first committed write."""


def call(tool: str, **arguments: Any) -> Call:
    return {"tool": tool, "arguments": arguments}


def agent_script(name: str, brief: Mapping[str, Any]) -> Script:
    """The script of reference agent ``name`` for a task described by ``brief``.

    ``brief`` holds ``remittance_id``, ``today`` and ``threshold_cents`` (what the task's
    instruction tells the agent). Faults that concern every call (crashing, not writing)
    are applied by ``ScriptedAgent``, not here.
    """
    if name not in AGENTS:
        raise InputError(f"unknown agent {name!r}; choose one of {AGENTS}")
    return _post_remittance(brief, name)


def _post_remittance(brief: Mapping[str, Any], fault: str) -> Script:
    rid = str(brief["remittance_id"])
    remittance = (yield call("read_remittance", remittance_id=rid))["result"]
    if fault != "double_poster":
        found = (
            yield call(
                "search_remittances",
                payer_id=remittance["payer_id"],
                payment_number=remittance["payment_number"],
            )
        )["result"]
        posted = [
            r["remittance_id"]
            for r in found["remittances"]
            if r["status"] == "posted" and r["remittance_id"] != rid
        ]
        if posted:
            yield call(
                "finish",
                message=f"Remittance {rid} repeats payment "
                f"{remittance['payment_number']} already posted as {posted[0]}; "
                "nothing posted.",
            )
            return
    hold, redirect = yield from _read_notes(remittance, skip=fault == "skips_notes")
    plan = _Plan(brief, remittance, fault)
    for line in remittance["lines"]:
        if line["claim_id"] in hold:
            plan.done.append(f"held {line['rline_id']} per the payer's call")
            continue
        claim_id = redirect.get(line["claim_id"], line["claim_id"])
        claim = (yield call("read_claim", claim_id=claim_id))["result"]
        yield from plan.line(line, claim)
    yield call("finish", message=f"Remittance {rid} done: " + "; ".join(plan.done) + ".")


def _read_notes(
    remittance: Mapping[str, Any],
    *,
    skip: bool,
) -> Generator[Call, Reply, tuple[set[str], dict[str, str]]]:
    hold: set[str] = set()
    redirect: dict[str, str] = {}
    if skip:
        return hold, redirect
    for claim_id in dict.fromkeys(line["claim_id"] for line in remittance["lines"]):
        notes = (yield call("read_case_notes", claim_id=claim_id))["result"]["notes"]
        for note in notes:
            if _HOLD.search(note["body"]):
                hold.add(claim_id)
            if (match := _REDIRECT.search(note["body"])) is not None:
                redirect[claim_id] = match.group(1)
    return hold, redirect


class _Plan:
    """Decides and issues the writes for one remittance line at a time."""

    def __init__(self, brief: Mapping[str, Any], remittance: Mapping[str, Any], fault: str) -> None:
        self.today = date.fromisoformat(str(brief["today"]))
        self.threshold = int(brief["threshold_cents"])
        self.deadline = date.fromisoformat(remittance["payment_date"]) + timedelta(
            days=int(remittance["appeal_window_days"])
        )
        self.fault = fault
        self.done: list[str] = []

    def line(self, line: Mapping[str, Any], claim: Mapping[str, Any]) -> Script:
        paid = int(line["paid_cents"])
        denied = paid == 0 and any(
            a["group_code"] == "CO" and a["reason_code"] != "45" for a in line["adjustments"]
        )
        if paid < 0:
            yield from self._reverse(line, claim)
        elif denied:
            yield from self._denial(line, claim)
        elif paid > self.threshold and self.fault != "ignores_threshold":
            yield call(
                "request_approval",
                remittance_line_id=line["rline_id"],
                amount_cents=paid,
                reason=f"payment of {paid / 100:.2f} is above the approval threshold",
            )
            self.done.append(f"requested approval for {line['rline_id']}")
        else:
            yield from self._post(line, claim)

    def _post(self, line: Mapping[str, Any], claim: Mapping[str, Any]) -> Script:
        targets = _targets(line, claim)
        remaining = int(line["paid_cents"])
        for target in targets:  # first fit: a claim-level payment fills lines in order
            amount = min(remaining, int(target["balance_cents"])) if len(targets) > 1 else remaining
            if amount > 0:
                yield call(
                    "post_allocation",
                    remittance_line_id=line["rline_id"],
                    claim_line_id=target["line_id"],
                    amount_cents=amount,
                )
                remaining -= amount
        for adjustment in line["adjustments"]:
            yield call(
                "post_adjustment",
                remittance_line_id=line["rline_id"],
                claim_line_id=targets[0]["line_id"],
                group_code=adjustment["group_code"],
                reason_code=adjustment["reason_code"],
                amount_cents=adjustment["amount_cents"],
            )
        self.done.append(f"posted {line['paid_cents'] / 100:.2f} from {line['rline_id']}")
        contract = targets[0].get("contract_allowed_cents")
        if len(targets) == 1 and contract is not None and line["allowed_cents"] < contract:
            yield from self._case(
                claim["claim_id"],
                "underpayment",
                f"allowed {line['allowed_cents'] / 100:.2f} is below the "
                f"contracted {contract / 100:.2f}",
            )

    def _denial(self, line: Mapping[str, Any], claim: Mapping[str, Any]) -> Script:
        if self.fault == "change_and_restore":  # writes the claim off, then undoes it
            yield call("set_claim_status", claim_id=claim["claim_id"], status="written_off")
            yield call("set_claim_status", claim_id=claim["claim_id"], status="open")
        codes = ", ".join(f"{a['group_code']}-{a['reason_code']}" for a in line["adjustments"])
        yield from self._case(claim["claim_id"], "denial", f"denied with {codes}")

    def _case(self, claim_id: str, kind: str, reason: str) -> Script:
        case = (yield call("open_case", claim_id=claim_id, kind=kind, reason=reason))["result"]
        case_id = case.get("case_id", 0)
        yield call(
            "add_note",
            case_id=case_id,
            text=f"{kind} case: {reason}; appeal by {self.deadline.isoformat()}.",
        )
        if self.fault == "late_followup":
            due = self.deadline + timedelta(days=7)
        else:
            due = min(self.today + timedelta(days=7), self.deadline - timedelta(days=1))
        yield call(
            "schedule_followup",
            case_id=case_id,
            due_date=due.isoformat(),
            action=f"appeal the {kind} before {self.deadline.isoformat()}",
        )
        self.done.append(f"opened a {kind} case on {claim_id}")

    def _reverse(self, line: Mapping[str, Any], claim: Mapping[str, Any]) -> Script:
        amount = -int(line["paid_cents"])
        for claim_line in claim["lines"]:
            for allocation in claim_line["allocations"]:
                if (
                    allocation["amount_cents"] == amount
                    and allocation["reverses"] is None
                    and not allocation["reversed"]
                ):
                    yield call(
                        "reverse_allocation",
                        allocation_id=allocation["allocation_id"],
                        remittance_line_id=line["rline_id"],
                        reason=f"payer recouped {amount / 100:.2f}",
                    )
                    self.done.append(f"reversed allocation {allocation['allocation_id']}")
                    return


def _targets(line: Mapping[str, Any], claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The claim lines a remittance line pays: its own line, the same procedure on a
    corrected claim, or (claim-level payment) every line of the claim."""
    lines: list[dict[str, Any]] = list(claim["lines"])
    if line["line_id"] is None:
        return lines
    own = [x for x in lines if x["line_id"] == line["line_id"]]
    if own:
        return own
    same_code = [x for x in lines if x["procedure_code"] == line.get("procedure_code")]
    return same_code[:1] or lines[:1]


class ScriptedAgent:
    """A callable agent: give it the last tool reply, get the next tool call.

    It applies the two faults that concern every call: ``crash_after_commit`` raises
    ``AgentCrashed`` right after its first write is acknowledged, and
    ``claims_done_without_writing`` never sends a write (it pretends each succeeded).
    """

    def __init__(self, name: str, brief: Mapping[str, Any]) -> None:
        self.name = name
        self._script = agent_script(name, brief)
        self._pending: Call | None = None

    def __call__(self, observation: Mapping[str, Any]) -> Call:
        last = observation.get("last")
        reply = (
            None
            if last is None
            else {"ok": last["status"] == "ok", "result": last["result"], "error": last["error"]}
        )
        if self._pending is None:
            step = next(self._script)
        else:
            if self._pending["tool"] in WRITE_TOOLS and self.name == "crash_after_commit":
                raise AgentCrashed("the agent crashed right after its first committed write")
            step = self._script.send(reply or {"ok": False, "result": {}, "error": None})
        while self.name == "claims_done_without_writing" and step["tool"] in WRITE_TOOLS:
            step = self._script.send({"ok": True, "result": {}, "error": None})
        self._pending = step
        return step
