"""Third probe of the domain environments: real SQLite, the real tools and checks.

Fixed here (each test below failed before): a case note or follow-up written twice word
for word (a blind retry) was accepted; a task file could describe a remittance whose
expectation was impossible or wrong (a negative payment to post, an underpayment case
expected on a line paid at contract, a typo'd field silently ignored) and careful agents
were then rejected; ``crash_after_commit`` had the wrong required decision on a
claim-level payment that fills two lines; a remittance could reverse another payer's
payment; a correct agent driven through the Gymnasium face was indeterminate after one
harmless read past its finish; the ledger environment acknowledged postings that wrote
nothing when reset with a seed other than the ledger's.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase, EvaluationReport
from onrecord.domains.ledger import (
    LEDGER_CHECKS,
    LedgerAction,
    LedgerEnv,
    LedgerObserver,
    create_ledger,
    idempotent_post,
    scripted_interact,
    unsafe_post,
)
from onrecord.domains.ledger import full_policy as ledger_policy
from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    WRITE_TOOLS,
    RemittanceEnvironment,
    ScriptedAgent,
    expected_decision,
    full_policy,
    load_tasks,
    remittance_trial,
)
from onrecord.envkit import save_episode
from onrecord.episode import evaluate_episode
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import Call, Reply, call, careful_but, play, provider

__all__ = ["provider"]  # the shared module-scoped fixture

TASKS = Path(__file__).parents[2] / "src/onrecord/domains/remittance/tasks.toml"
HEADER = TASKS.read_text().split("# ----")[0]  # the [kinds.*] tables


def _tasks(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "tasks.toml"
    path.write_text(HEADER + body)
    return path


# -- a note or follow-up written twice ---------------------------------------------------
def repeats(tool: str) -> Any:
    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        reply = yield step
        if step["tool"] == tool:  # the ack "got lost": sent again without looking
            yield step
        return reply

    return hook


@pytest.mark.parametrize(
    ("tool", "why"),
    [("add_note", "the same note was written 2 times"), ("schedule_followup", "the same follow")],
)
@pytest.mark.parametrize("task_id", ["denial-01", "underpaid-02"])
def test_a_note_or_followup_written_twice_is_rejected(
    provider: RemittanceProvider, task_id: str, tool: str, why: str
) -> None:
    played = play(provider, task_id, careful_but(repeats(tool)))
    assert (played.decision, played.failing) == ("reject", {"expected_changes"})
    assert any(why in p for p in played.problems("expected_changes"))
    versions = {r.name: r.version for r in played.trial.results}
    assert versions["expected_changes"] == "remittance-v4"
    assert versions["balances_reconcile"] == "remittance-v2"  # its verdicts did not change


def looks_before_retrying(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """After each case write the agent treats the ack as lost, looks (read_claim shows the
    follow-ups, read_case_notes the notes) and sends it again only if it is missing."""
    reply = yield step
    if step["tool"] in ("add_note", "schedule_followup"):
        claim_id = context["remittance"]["lines"][0]["claim_id"]
        claim = (yield call("read_claim", claim_id=claim_id))["result"]
        notes = (yield call("read_case_notes", claim_id=claim_id))["result"]["notes"]
        landed = {
            "add_note": [n["body"] for n in notes],
            "schedule_followup": [f["action"] for c in claim["cases"] for f in c["followups"]],
        }[step["tool"]]
        key = "text" if step["tool"] == "add_note" else "action"
        assert step["arguments"][key] in landed
    return reply


@pytest.mark.parametrize("task_id", ["denial-03", "underpaid-01"])
def test_an_agent_that_looks_before_retrying_is_accepted(
    provider: RemittanceProvider, task_id: str
) -> None:
    assert play(provider, task_id, careful_but(looks_before_retrying)).decision == "accept"


# -- task files whose expectation was wrong ----------------------------------------------
DEADLINE = "deadline_in_days = 9\n"


def _lines(*lines: str) -> str:
    return "lines = [" + ", ".join("{ " + line + " }" for line in lines) + "]"


@pytest.mark.parametrize(
    ("kind", "extra", "lines", "why"),
    [
        ("partial_contractual", "", _lines('code = "99213", patient_resp = 50000'), "exceeds"),
        ("full_payment", "", _lines('code = "99213", patient_resp = 20000'), "exceeds"),
        ("partial_contractual", "", _lines('code = "99213", patient_resp = -5'), "at least 0"),
        ("underpayment", DEADLINE, _lines('code = "99213"'), "underpaid_by"),
        ("underpayment", DEADLINE, _lines('code = "99213", underpaid_by = 99999'), "would pay"),
        ("partial_contractual", "", _lines('code = "99213", paid = 100'), "below the contracted"),
        (
            "over_threshold",
            "",
            _lines('code = "27447", paid = 1650000', 'code = "99213", paid = 10'),
            "below the contracted",
        ),
        ("partial_contractual", "", _lines('code = "99213", patient_rsp = 1'), "unknown field"),
        ("hidden_hold", "", _lines('code = "99213", underpaid_by = 100'), "unknown field"),
        ("full_payment", "", _lines('code = "12345"'), "code must be one of"),
        ("denial", DEADLINE, _lines('code = "99213"'), "CARC reason code"),
        ("denial", DEADLINE, _lines('code = "99213", denial = "45"'), "CARC reason code"),
        ("denial", "deadline_in_day = 9\n", _lines('code = "99213", denial = "50"'), "needs"),
        ("denial", 'deadline_in_days = "9"\n', _lines('code = "99213", denial = "50"'), "integer"),
        ("split", "", _lines('code = "99213"'), "needs parameters"),
        ("full_payment", "", "lines = []", "lines is empty"),
    ],
)
def test_a_task_whose_expectation_would_be_wrong_is_refused(
    tmp_path: Path, kind: str, extra: str, lines: str, why: str
) -> None:
    body = f'[[task]]\nid = "custom"\npayer = "PAY-AETNA"\nkind = "{kind}"\n{extra}{lines}\n'
    path = _tasks(tmp_path, body)
    with pytest.raises(InputError, match=why):
        RemittanceEnvironment(load_tasks(path)[0])


def test_a_task_for_an_unknown_payer_is_refused(tmp_path: Path) -> None:
    body = '[[task]]\nid = "x"\nkind = "full_payment"\npayer = "PAY-ACME"\n' + _lines(
        'code = "99213"'
    )
    with pytest.raises(InputError, match="payer must be one of"):
        load_tasks(_tasks(tmp_path, body))


CUSTOM = """
[[task]]
id = "zero-pay"
kind = "partial_contractual"
payer = "PAY-AETNA"
lines = [{ code = "99213", paid = 0, patient_resp = 12000 }, { code = "85025" }]

[[task]]
id = "split-wide"
kind = "split"
payer = "PAY-BCBS"
paid = 30000
lines = [{ code = "99213" }, { code = "99214" }]
"""


def _decide(env: RemittanceEnvironment, agent: str, tmp_path: Path) -> str:
    run = env.run(ScriptedAgent(agent, env.brief), tmp_path / agent)
    trial = remittance_trial(run.episode, REMITTANCE_CHECKS)
    return full_policy().evaluate(EvaluationReport.from_trials([trial])).decision


@pytest.mark.parametrize("task_id", ["zero-pay", "split-wide"])
def test_custom_tasks_get_the_decisions_they_must_get(tmp_path: Path, task_id: str) -> None:
    """A line paid nothing because it all went to the deductible is posted (write-down and
    patient share, no allocation) and accepted; a claim-level payment that fills two
    lines needs two allocations, so crashing after the first is a reject."""
    task = next(t for t in load_tasks(_tasks(tmp_path, CUSTOM)) if t.task_id == task_id)
    env = RemittanceEnvironment(task)
    try:
        for agent in ("careful", "crash_after_commit"):
            want = expected_decision(agent, task, env.expectation)
            assert (agent, _decide(env, agent, tmp_path)) == (agent, want)
        assert want == "reject"
    finally:
        env.close()


# -- tools ---------------------------------------------------------------------------------
def test_a_remittance_cannot_reverse_another_payers_payment() -> None:
    env = RemittanceEnvironment(next(t for t in load_tasks() if t.task_id == "recoup-01"))
    try:
        world = env.world
        world.reset()
        rline = env.expectation["lines"][0]["rline_id"]  # a UHC recoupment
        db = world.connect_readonly()
        try:
            other = db.execute(
                "SELECT a.allocation_id FROM allocations a JOIN claim_lines l USING (line_id) "
                "JOIN claims c USING (claim_id) WHERE c.payer_id != 'PAY-UHC' LIMIT 1"
            ).fetchone()[0]
        finally:
            db.close()
        before = world.state_digest()
        event = world.call(
            "reverse_allocation",
            {"allocation_id": other, "remittance_line_id": rline, "reason": "recouped"},
        )
        assert event["status"] == "rejected"
        assert "only its own payments" in event["error"]["message"]
        assert world.state_digest() == before
    finally:
        env.close()


# -- the Gymnasium face: calls after the finish ------------------------------------------
def _gym(extra: dict[str, Any] | None, tmp_path: Path) -> tuple[str, tuple[str, ...]]:
    env = RemittanceEnvironment(next(t for t in load_tasks() if t.task_id == "full-01"))
    try:
        gym_env = env.gym_env()
        gym_env.reset(seed=0)
        agent, last, terminated = ScriptedAgent("careful", env.brief), None, False
        while not terminated:
            action = agent({"task": env.brief, "tools": [], "step": 0, "last": last})
            text, _, terminated, _, _ = gym_env.step(json.dumps(action))
            shown = json.loads(text)
            last = {k: shown.get(k) for k in ("status", "result", "error")}
        if extra is not None:  # a loop that sends one more call after `terminated`
            gym_env.step(json.dumps(extra))
        trial = remittance_trial(save_episode(env.world, tmp_path / "e"), REMITTANCE_CHECKS)
        decision = full_policy().evaluate(EvaluationReport.from_trials([trial])).decision
        return decision, trial.coverage_issues
    finally:
        env.close()


def test_a_read_after_finishing_is_harmless_but_a_write_attempt_is_not(tmp_path: Path) -> None:
    env = RemittanceEnvironment(next(t for t in load_tasks() if t.task_id == "full-01"))
    line = env.expectation["lines"][0]
    env.close()
    read = {"tool": "read_remittance", "arguments": {"remittance_id": "RMT-100001"}}
    post = {
        "tool": "post_allocation",
        "arguments": {
            "remittance_line_id": line["rline_id"],
            "claim_line_id": line["targets"][0],
            "amount_cents": line["paid_cents"],
        },
    }
    assert _gym(None, tmp_path / "a") == ("accept", ())
    assert _gym(read, tmp_path / "b") == ("accept", ())
    decision, issues = _gym(post, tmp_path / "c")
    assert decision == "indeterminate"
    assert "then tried post_allocation" in issues[0]
    assert "refused: nothing changed" in issues[0]


# -- legitimate but unusual agents stay accepted -------------------------------------------
def shuffled(seed: int) -> Any:
    """Every write held back and sent at the end in a random order (a case's note and
    follow-up right after it), as an agent that plans first and executes later."""

    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        held: list[list[Call]] = context.setdefault("held", [])
        if step["tool"] in WRITE_TOOLS:
            if step["tool"] in ("add_note", "schedule_followup"):
                held[-1].append(step)
            else:
                held.append([step])
            return {"ok": True, "result": {"case_id": 0, "allocation_id": 0}, "error": None}
        if step["tool"] == "finish":
            random.Random(seed).shuffle(held)
            for group in held:
                case_id = None
                for write in group:
                    if case_id is not None:
                        write = call(write["tool"], **{**write["arguments"], "case_id": case_id})
                    reply = yield write
                    assert reply["ok"], reply
                    case_id = reply["result"].get("case_id", case_id)
        return (yield step)

    return hook


def rereads_after_every_write(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    reply = yield step
    if step["tool"] in WRITE_TOOLS:
        yield call("read_claim", claim_id=context["remittance"]["lines"][-1]["claim_id"])
        yield call("read_remittance", remittance_id=context["brief"]["remittance_id"])
    return reply


@pytest.mark.parametrize(
    "task_id", ["partial-04", "underpaid-02", "recoup-02", "threshold-02", "hidden-04", "split-02"]
)
def test_other_orders_and_rereads_are_accepted(provider: RemittanceProvider, task_id: str) -> None:
    for make in (
        careful_but(shuffled(1)),
        careful_but(shuffled(2)),
        careful_but(rereads_after_every_write),
    ):
        played = play(provider, task_id, make)
        assert played.decision == "accept", (task_id, played.failing)


# -- new ways to get the money wrong, already caught ---------------------------------------
def changes(tool: str, **change: Any) -> Any:
    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        if step["tool"] == tool and not context.get("done"):
            context["done"] = True
            args = step["arguments"]
            step = call(tool, **{**args, **{k: f(args) for k, f in change.items()}})
        return (yield step)

    return hook


@pytest.mark.parametrize(
    ("task_id", "hook"),
    [
        ("partial-02", changes("post_allocation", amount_cents=lambda a: a["amount_cents"] - 1)),
        ("partial-02", changes("post_adjustment", group_code=lambda a: "OA")),
        ("partial-02", changes("post_adjustment", reason_code=lambda a: "253")),
        ("partial-04", changes("post_adjustment", amount_cents=lambda a: a["amount_cents"] + 1)),
        ("denial-02", changes("open_case", kind=lambda a: "other")),
        (
            "recoup-02",
            changes("reverse_allocation", allocation_id=lambda a: a["allocation_id"] - 1),
        ),
    ],
)
def test_off_by_a_cent_or_a_code_is_rejected(
    provider: RemittanceProvider, task_id: str, hook: Any
) -> None:
    played = play(provider, task_id, careful_but(hook))
    assert played.decision == "reject"
    assert "expected_changes" in played.failing


# -- ledger: the invoice is the ledger's own -----------------------------------------------
@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return create_ledger(tmp_path / "ledger.sqlite", seed=7)


@pytest.mark.parametrize("seed", [7, 8, 17])
def test_a_correct_ledger_agent_is_accepted_whatever_the_reset_seed(
    ledger: Path, seed: int
) -> None:
    evidence = capture_episode(
        lambda: LedgerEnv(ledger),
        scripted_interact((LedgerAction.POST, LedgerAction.FINISH)),
        case=EvalCase({"task": "Post the invoice once"}, case_id="ledger-seed"),
        environment_id="onrecord-ledger-probe3",
        observer_id="ledger-readonly-sqlite-v2",
        observe=LedgerObserver(ledger),
        seed=seed,
        max_steps=5,
    )
    report = evaluate_episode(evidence, list(LEDGER_CHECKS))
    assert ledger_policy().evaluate(report).decision == "accept"
    assert len(evidence.final_state["postings"]) == 1


@pytest.mark.parametrize("handler", [idempotent_post, unsafe_post])
def test_a_posting_handler_never_acknowledges_a_posting_that_wrote_nothing(
    ledger: Path, handler: Any
) -> None:
    connection = sqlite3.connect(ledger)
    try:
        with pytest.raises(InputError, match="no invoice 'INV-0000'"):
            handler(connection, "INV-0000")
        assert connection.execute("SELECT count(*) FROM postings").fetchone()[0] == 0
    finally:
        connection.close()
