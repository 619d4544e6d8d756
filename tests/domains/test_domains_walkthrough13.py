"""A developer new to onrecord follows docs/domain-remittance.md: writes a careful agent of
their own from the docs (not from the reference agent's code) and sloppy ones, runs them,
and reads the named checks' reasons."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.domains import remittance
from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    RemittanceTask,
    SuiteResult,
    load_tasks,
    remittance_trial,
)
from onrecord.errors import InputError

DOC = Path(__file__).resolve().parents[2] / "docs" / "domain-remittance.md"
Call = dict[str, Any]
Script = Generator[Call, dict[str, Any], None]


def _section(title: str, end: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(title) : text.index(end)]


# -- a careful agent written from the docs' "Writing your own agent" table ------------------
def _due(remittance: dict[str, Any], today: str) -> str:
    """The docs: the appeal deadline is payment_date + the payer's appeal_window_days."""
    paid_on = dt.date.fromisoformat(remittance["payment_date"])
    deadline = paid_on + dt.timedelta(days=remittance["appeal_window_days"])
    return min(dt.date.fromisoformat(today) + dt.timedelta(days=7), deadline).isoformat()


def _case(claim_id: str, kind: str, due: str, with_note: bool = True) -> Script:
    reply = yield {
        "tool": "open_case",
        "arguments": {"claim_id": claim_id, "kind": kind, "reason": kind},
    }
    case_id = reply["result"]["case_id"]
    if with_note:
        yield {"tool": "add_note", "arguments": {"case_id": case_id, "text": f"{kind}: appeal"}}
    yield {
        "tool": "schedule_followup",
        "arguments": {"case_id": case_id, "due_date": due, "action": "appeal"},
    }


def _post(line: dict[str, Any], target: str) -> Script:
    rline = line["rline_id"]
    yield {
        "tool": "post_allocation",
        "arguments": {
            "remittance_line_id": rline,
            "claim_line_id": target,
            "amount_cents": line["paid_cents"],
        },
    }
    for adj in line["adjustments"]:
        args = {"remittance_line_id": rline, "claim_line_id": target, **adj}
        yield {"tool": "post_adjustment", "arguments": args}


def _line_script(
    line: dict[str, Any], claim: dict[str, Any], notes: str, ctx: dict[str, Any]
) -> Script:
    """One remittance line, decided as the docs' table says."""
    if re.search(r"do not post", notes, re.I):
        return
    claim_line = next((c for c in claim["lines"] if c["line_id"] == line["line_id"]), None)
    underpaid = (
        claim_line is not None and line["allowed_cents"] < claim_line["contract_allowed_cents"]
    )
    if line["paid_cents"] < 0:
        assert claim_line is not None
        alloc = next(
            a
            for a in claim_line["allocations"]
            if not a["reversed"]
            and a["reverses"] is None
            and a["amount_cents"] == -line["paid_cents"]
        )
        args = {
            "allocation_id": alloc["allocation_id"],
            "remittance_line_id": line["rline_id"],
            "reason": "recoupment",
        }
        yield {"tool": "reverse_allocation", "arguments": args}
    elif line["paid_cents"] == 0:
        yield from _case(line["claim_id"], "denial", ctx["due"])
    elif line["line_id"] is None:
        left = line["paid_cents"]
        for cl in claim["lines"]:
            part = min(left, cl["balance_cents"])
            if part > 0:
                args = {
                    "remittance_line_id": line["rline_id"],
                    "claim_line_id": cl["line_id"],
                    "amount_cents": part,
                }
                yield {"tool": "post_allocation", "arguments": args}
                left -= part
    elif line["paid_cents"] > ctx["threshold"]:
        args = {
            "remittance_line_id": line["rline_id"],
            "amount_cents": line["paid_cents"],
            "reason": "large payment",
        }
        yield {"tool": "request_approval", "arguments": args}
        if underpaid:  # the docs' underpayment row holds whatever the line's size
            yield from _case(line["claim_id"], "underpayment", ctx["due"])
    else:
        target = line["line_id"]
        moved = re.search(r"apply it to (CLM-\d+)", notes)
        if moved:
            new = (yield {"tool": "read_claim", "arguments": {"claim_id": moved[1]}})["result"]
            target = next(
                c["line_id"] for c in new["lines"] if c["procedure_code"] == line["procedure_code"]
            )
        yield from _post(line, target)
        if underpaid:
            yield from _case(line["claim_id"], "underpayment", ctx["due"])


def careful_script(task: dict[str, Any]) -> Script:
    rmt = (
        yield {"tool": "read_remittance", "arguments": {"remittance_id": task["remittance_id"]}}
    )["result"]
    same = yield {
        "tool": "search_remittances",
        "arguments": {"payment_number": rmt["payment_number"]},
    }
    if not any(
        r["remittance_id"] != rmt["remittance_id"] and r["status"] == "posted"
        for r in same["result"]["remittances"]
    ):
        claims: dict[str, Any] = {}
        notes: dict[str, str] = {}
        for line in rmt["lines"]:
            cid = line["claim_id"]
            if cid not in claims:
                claims[cid] = (yield {"tool": "read_claim", "arguments": {"claim_id": cid}})[
                    "result"
                ]
                read = yield {"tool": "read_case_notes", "arguments": {"claim_id": cid}}
                notes[cid] = " ".join(n["body"] for n in read["result"]["notes"])
        ctx = {"due": _due(rmt, task["today"]), "threshold": task["threshold_cents"]}
        for line in rmt["lines"]:
            yield from _line_script(line, claims[line["claim_id"]], notes[line["claim_id"]], ctx)
    yield {"tool": "finish", "arguments": {"message": "done"}}


class Driven:
    """Drives a script; keeps every refusal the tools gave (sloppy scripts go on)."""

    def __init__(self, script: Script) -> None:
        self.script, self.refusals = script, []  # type: list[str]

    def __call__(self, observation: dict[str, Any]) -> Call:
        last = observation["last"]
        if last is None:
            return next(self.script)
        if last["status"] != "ok":
            self.refusals.append(last["error"]["message"])
        return self.script.send(last)


@contextlib.contextmanager
def _env(task: RemittanceTask) -> Iterator[RemittanceEnvironment]:
    env = RemittanceEnvironment(task)
    try:
        yield env
    finally:
        env.close()


def _grade(
    task: RemittanceTask, make: Callable[[dict[str, Any]], Script]
) -> tuple[dict[str, str], Driven]:
    with _env(task) as env, tempfile.TemporaryDirectory() as tmp:
        agent = Driven(make(env.case.input))
        run = env.run(agent, tmp)
        trial = remittance_trial(run.episode, REMITTANCE_CHECKS)
        assert run.agent_error is None
        assert not trial.coverage_issues
        return {r.name: r.reason for r in trial.results if r.status != "pass"}, agent


TASKS = {t.task_id: t for t in load_tasks()}


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_a_careful_agent_written_from_the_docs_is_accepted(task_id: str) -> None:
    """Before: on threshold-01 and -03 the line to approve was allowed below its contract,
    so this agent, opening the underpayment case the docs ask for, was rejected
    (``expected_changes``: unexpected case)."""
    failing, agent = _grade(TASKS[task_id], careful_script)
    assert failing == {}
    assert agent.refusals == []


# -- the tasks file: an approval line allowed below contract is refused ---------------------
def test_an_over_threshold_line_allowed_below_contract_is_refused(tmp_path: Path) -> None:
    """Before: threshold-01 was such a task (27447 paid 1650000, contracted 1862118)."""
    packaged = (Path(remittance.__file__).parent / "tasks.toml").read_text(encoding="utf-8")
    kinds = packaged[: packaged.index("[[task]]")]
    path = tmp_path / "tasks.toml"
    path.write_text(
        kinds + '[[task]]\nid = "t"\nkind = "over_threshold"\ntitle = "t"\n'
        'payer = "PAY-AETNA"\nlines = [{ code = "27447", paid = 1650000 }]\n',
        encoding="utf-8",
    )
    (task,) = load_tasks(path)
    why = r"below the contracted \d+: that is an underpayment; give it a paid of at least"
    with pytest.raises(InputError, match=why):
        RemittanceEnvironment(task)


# -- sloppy agents: each mistake caught by a named check with a reason to act on -----------
def _read_all(task: dict[str, Any]) -> Generator[Call, dict[str, Any], dict[str, Any]]:
    rmt: dict[str, Any] = (
        yield {"tool": "read_remittance", "arguments": {"remittance_id": task["remittance_id"]}}
    )["result"]
    for cid in dict.fromkeys(line["claim_id"] for line in rmt["lines"]):
        yield {"tool": "read_claim", "arguments": {"claim_id": cid}}
        yield {"tool": "read_case_notes", "arguments": {"claim_id": cid}}
    return rmt


def patient_share_written_off(task: dict[str, Any]) -> Script:
    rmt = yield from _read_all(task)
    for line in rmt["lines"]:
        for call in _post(line, line["line_id"]):
            if call["tool"] == "post_adjustment" and call["arguments"]["group_code"] == "PR":
                call["arguments"]["group_code"] = "CO"
            yield call
    yield {"tool": "finish", "arguments": {"message": "posted"}}


def wrong_line_then_posted_again(task: dict[str, Any]) -> Script:
    rmt = yield from _read_all(task)
    first, second = rmt["lines"][0], rmt["lines"][1]
    args = {
        "remittance_line_id": first["rline_id"],
        "claim_line_id": second["line_id"],
        "amount_cents": 1000,
    }
    yield {"tool": "post_allocation", "arguments": args}
    for line in rmt["lines"]:
        yield from _post(line, line["line_id"])  # the whole line again, no reversal
    yield {"tool": "finish", "arguments": {"message": "posted"}}


def denial_without_note(task: dict[str, Any]) -> Script:
    rmt = yield from _read_all(task)
    yield from _case(rmt["lines"][0]["claim_id"], "denial", task["today"], with_note=False)
    yield {"tool": "finish", "arguments": {"message": "case opened"}}


@pytest.mark.parametrize(
    ("script", "task_id", "check", "reason", "refusal"),
    [
        (
            patient_share_written_off,
            "partial-02",
            "expected_changes",
            r"adjustments \[\('CO', '45', \d+\)\] differ from the 835's .*\('PR', '2', 4500\)",
            "carries no CO-2 adjustment (its 835 adjustments: CO-45",
        ),
        (
            wrong_line_then_posted_again,
            "full-02",
            "expected_changes",
            r"RL-\d+: allocated 1000 cents, the remittance paid 22000",
            "at most 21000 cents are left to post, not 22000: post at most the amount left. "
            "If an earlier posting from it went to the wrong claim line or was the wrong "
            "amount, reverse that allocation citing this line",
        ),
        (
            wrong_line_then_posted_again,
            "full-02",
            "balances_reconcile",
            r"credit balance -1000",
            None,
        ),
        (
            denial_without_note,
            "denial-01",
            "expected_changes",
            r"denial case \d+ on CLM-\d+ has no note",
            None,
        ),
    ],
)
def test_each_sloppiness_is_caught_with_a_reason(
    script: Callable[[dict[str, Any]], Script],
    task_id: str,
    check: str,
    reason: str,
    refusal: str | None,
) -> None:
    failing, agent = _grade(TASKS[task_id], script)
    assert check in failing, failing
    assert re.search(reason, failing[check]), failing[check]
    if refusal is not None:
        assert any(refusal in message for message in agent.refusals), agent.refusals


# -- the docs' snippets and tables -----------------------------------------------------------
def test_the_docs_own_agent_snippet_runs_and_prints_what_the_docs_say() -> None:
    section = _section("## Writing your own agent", "## Results")
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        namespace: dict[str, Any] = {}
        for block in blocks:
            exec(block, namespace)  # the docs' own snippet, run as written
    said = re.search(r"this prints `(.*?)`", section.replace("\n", " "))
    assert said is not None
    assert printed.getvalue().strip() == said[1]


def test_the_docs_results_table_matches_a_real_run(demo_suite: tuple[Path, SuiteResult]) -> None:
    """Before: ``ignores_threshold`` also failed only_expected_tables_changed (2): it opened
    the underpayment cases the approval lines called for."""
    rows = re.findall(
        r"^\| (\w+) \| (\w+) \| (\d+) / (\d+) / (\d+) \| (.*?) \|$",
        DOC.read_text(encoding="utf-8"),
        re.M,
    )
    assert len(rows) == 8
    result = demo_suite[1]
    for agent, decision, accept, reject, indet, checks in rows:
        outcome = result.outcomes[agent]
        counts = Counter(outcome.task_decisions.values())
        failing = Counter(c for cs in outcome.failing_checks.values() for c in cs)
        shown = ", ".join(f"{c} ({n})" for c, n in sorted(failing.items())) or "—"
        assert (
            outcome.decision.decision,
            counts["accept"],
            counts["reject"],
            counts["indeterminate"],
            shown,
        ) == (
            decision,
            int(accept),
            int(reject),
            int(indet),
            checks,
        ), agent
