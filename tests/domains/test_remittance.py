"""Remittance posting: every reference agent's decision per task, the checks that catch
each fault (with the row diff), the ablation, and the suite's saved reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord import EvaluationReport
from onrecord._canonical import load_record_bytes
from onrecord.domains.remittance import (
    AGENTS,
    FAULTS,
    KINDS,
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    ScriptedAgent,
    SuiteResult,
    load_tasks,
    remittance_trial,
    run_demo_suite,
)

TASKS = load_tasks()


@pytest.fixture
def suite(demo_suite: tuple[Path, SuiteResult]) -> tuple[Path, SuiteResult]:
    return demo_suite


def test_task_file_covers_every_kind_with_at_least_30_tasks() -> None:
    assert len(TASKS) >= 30
    assert {task.kind for task in TASKS} == set(KINDS)


@pytest.mark.parametrize("agent", AGENTS)
def test_each_agent_gets_its_required_decision_on_every_task(
    suite: tuple[Path, SuiteResult], agent: str
) -> None:
    _, result = suite
    assert result.outcomes[agent].task_decisions == result.expected[agent]


def test_required_decisions_match_the_fault_design(suite: tuple[Path, SuiteResult]) -> None:
    _, result = suite
    assert set(result.expected["careful"].values()) == {"accept"}
    kinds = {task.task_id: task.kind for task in TASKS}
    rejected = {
        agent: sorted({kinds[t] for t, d in result.expected[agent].items() if d == "reject"})
        for agent in FAULTS
    }
    assert rejected["skips_notes"] == ["hidden_hold", "hidden_redirect"]
    assert rejected["double_poster"] == ["duplicate"]
    assert rejected["ignores_threshold"] == ["over_threshold"]
    assert rejected["late_followup"] == ["denial", "underpayment"]
    assert rejected["change_and_restore"] == ["denial"]
    crash = result.expected["crash_after_commit"]
    assert sorted(t for t, d in crash.items() if d == "indeterminate") == [
        "full-01",
        "full-04",
        "recoup-01",
        "recoup-03",
        "split-01",
        "split-02",
        "split-03",
        "threshold-01",
        "threshold-03",
    ]


@pytest.mark.parametrize(
    ("agent", "check"),
    [
        ("skips_notes", "read_notes_before_acting"),
        ("double_poster", "no_duplicate_allocation"),
        ("ignores_threshold", "no_post_over_threshold"),
        ("late_followup", "followup_before_deadline"),
        ("change_and_restore", "only_expected_tables_changed"),
        ("claims_done_without_writing", "expected_changes"),
    ],
)
def test_each_fault_is_caught_by_its_named_check_wherever_it_is_rejected(
    suite: tuple[Path, SuiteResult], agent: str, check: str
) -> None:
    _, result = suite
    outcome = result.outcomes[agent]
    rejected = [t for t, d in outcome.task_decisions.items() if d == "reject"]
    assert rejected
    assert all(check in outcome.failing_checks[t] for t in rejected)


def test_change_and_restore_failure_carries_the_audit_rows(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.task_id == "denial-01")
    env = RemittanceEnvironment(task)
    try:
        run = env.run(ScriptedAgent("change_and_restore", env.brief), tmp_path / "ep")
    finally:
        env.close()
    assert "claims" not in run.episode.diff  # the end state hides the change
    trial = remittance_trial(run.episode, REMITTANCE_CHECKS)
    result = trial.result("only_expected_tables_changed")
    assert result is not None
    assert result.status == "fail"
    assert "claims changed and restored" in result.reason
    statuses = [(e["op"], e["new"]["status"]) for e in result.evidence["events"]]
    assert statuses == [("update", "written_off"), ("update", "open")]


def test_double_poster_failure_shows_the_duplicate_rows(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.task_id == "duplicate-01")
    env = RemittanceEnvironment(task)
    try:
        run = env.run(ScriptedAgent("double_poster", env.brief), tmp_path / "ep")
    finally:
        env.close()
    result = remittance_trial(run.episode, REMITTANCE_CHECKS).result("no_duplicate_allocation")
    assert result is not None
    assert result.status == "fail"
    [row] = result.evidence["already_posted"]
    assert row["line_id"] == env.expectation["lines"][0]["targets"][0]


def test_crash_leaves_a_coverage_issue(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.task_id == "full-01")
    env = RemittanceEnvironment(task)
    try:
        run = env.run(ScriptedAgent("crash_after_commit", env.brief), tmp_path / "ep")
    finally:
        env.close()
    assert run.agent_error == (
        "AgentCrashed: the agent crashed right after its first committed write"
    )
    trial = remittance_trial(run.episode, REMITTANCE_CHECKS)
    # One issue, naming the exception, as the runner records it (``run`` declares the
    # ending: the saved manifest says agent_error, not undeclared).
    assert trial.coverage_issues == (
        "the episode ended with agent_error: AgentCrashed: the agent crashed right after "
        "its first committed write, not finished",
    )


def test_ablation_answer_only_accepts_most_faulty_agents(suite: tuple[Path, SuiteResult]) -> None:
    _, result = suite
    rows = {row["agent"]: row for row in result.ablation()}
    fooled = [a for a in FAULTS if rows[a]["final_answer_decision"] == "accept"]
    assert len(fooled) == 6  # every fault except the crash
    assert [a for a in FAULTS if rows[a]["end_state_decision"] == "accept"] == [
        "change_and_restore"
    ]
    assert all(rows[a]["full_policy_decision"] != "accept" for a in FAULTS)
    assert all(rows[a]["full_policy_violating"] == 0 for a in AGENTS)
    assert rows["claims_done_without_writing"]["final_answer_violating"] == 28


def test_suite_writes_verifiable_reports(suite: tuple[Path, SuiteResult]) -> None:
    out, result = suite
    report = EvaluationReport.load(out / "remittance" / "careful.report.json")
    assert report.digest == result.outcomes["careful"].report.digest
    summary = load_record_bytes((out / "remittance" / "summary.json").read_bytes(), "summary")
    assert summary["mismatches"] == []
    assert summary["agents"]["late_followup"]["decision"] == "reject"


def test_any_callable_agent_can_run(tmp_path: Path) -> None:
    """A custom agent splits the claim-level payment evenly: a different diff from the
    careful agent's first-fit split, accepted by the rules all the same."""
    task = next(t for t in TASKS if t.task_id == "split-01")

    def even_split(brief: dict) -> object:  # type: ignore[type-arg]
        state: dict[str, object] = {}

        def agent(observation: dict) -> dict:  # type: ignore[type-arg]
            step, last = observation["step"], observation["last"]
            rid = observation["task"]["remittance_id"]
            if step == 0:
                return {"tool": "read_remittance", "arguments": {"remittance_id": rid}}
            if step == 1:
                state["line"] = last["result"]["lines"][0]
                return {"tool": "read_claim", "arguments": {"claim_id": state["line"]["claim_id"]}}  # type: ignore[index]
            if step == 2:
                state["targets"] = [x["line_id"] for x in last["result"]["lines"]]
            targets: list[str] = state["targets"]  # type: ignore[assignment]
            index = step - 2
            if index < len(targets):
                paid = state["line"]["paid_cents"]  # type: ignore[index]
                share = paid // len(targets) + (paid % len(targets) if index == 0 else 0)
                return {
                    "tool": "post_allocation",
                    "arguments": {
                        "remittance_line_id": state["line"]["rline_id"],  # type: ignore[index]
                        "claim_line_id": targets[index],
                        "amount_cents": share,
                    },
                }
            return {"tool": "finish", "arguments": {"message": "split evenly"}}

        return agent

    result = run_demo_suite(agents={"even_split": even_split}, tasks=[task], repeats=1)
    outcome = result.outcomes["even_split"]
    assert outcome.task_decisions == {"split-01": "accept"}
    assert len(outcome.report.trials) == 1


def test_generator_is_deterministic_and_scales(tmp_path: Path) -> None:
    import sqlite3

    from onrecord.domains.remittance import Generator, write_snapshot

    def build(seed: int, rows: int, name: str) -> list[tuple[object, ...]]:
        generator = Generator(seed)
        generator.background(rows)
        path = write_snapshot(generator, tmp_path / name)
        with sqlite3.connect(path) as db:
            return db.execute("SELECT * FROM claim_lines ORDER BY line_id").fetchall()

    assert build(5, 300, "a.sqlite") == build(5, 300, "b.sqlite")
    assert build(5, 300, "a.sqlite") != build(6, 300, "c.sqlite")
    small, large = Generator(1), Generator(1)
    small.background(300)
    large.background(3000)
    count = [sum(len(rows) for rows in g.rows.values()) for g in (small, large)]
    assert 200 <= count[0] <= 450
    assert 2400 <= count[1] <= 3600


@pytest.mark.parametrize(("agent", "decision"), [("careful", "accept"), ("skips_notes", "reject")])
def test_agents_driving_the_gymnasium_face(tmp_path: Path, agent: str, decision: str) -> None:
    """A Gymnasium agent (JSON text in, JSON text out) under the real capture_episode;
    the same world's saved episode is graded by the named checks."""
    import json

    from onrecord.domains.remittance import full_policy
    from onrecord.envkit import save_episode
    from onrecord.integrations.gymnasium import capture_episode

    task = next(t for t in TASKS if t.task_id == "hidden-03")
    env = RemittanceEnvironment(task)
    scripted = ScriptedAgent(agent, env.brief)

    def interact(gym_env: object, observation: str, info: dict) -> str:  # type: ignore[type-arg]
        last = None
        for _ in range(60):
            action = json.dumps(scripted({"task": env.brief, "last": last}))
            observation, _, terminated, truncated, _ = gym_env.step(action)  # type: ignore[attr-defined]
            shown = json.loads(observation)
            last = {"tool": None, **{k: shown.get(k) for k in ("status", "result", "error")}}
            if terminated or truncated:
                return "finished"
        return "gave up"

    try:
        evidence = capture_episode(
            env.gym_env,
            interact,
            case=env.case,
            environment_id="remittance-gym-v1",
            observer_id="none-v1",
            observe=lambda: {},
            seed=0,
            max_steps=60,
        )
        episode = save_episode(env.world, tmp_path / "ep")
    finally:
        env.close()
    assert evidence.ended == "terminated"
    assert evidence.coverage_issues == ()
    assert len(evidence.transitions()) == len(episode.actions)
    report = EvaluationReport.from_trials([remittance_trial(episode, REMITTANCE_CHECKS)])
    assert full_policy().evaluate(report).decision == decision
