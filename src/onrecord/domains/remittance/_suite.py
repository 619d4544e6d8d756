"""The remittance suite: agents × tasks × repeats → one report and decision per agent,
the decisions each reference agent must get, and the ablation of weaker graders."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onrecord import AcceptancePolicy, CheckRequirement, PolicyDecision
from onrecord._canonical import atomic_write_bytes, content_digest, record_bytes
from onrecord._scratch import ScratchDirectory
from onrecord._steps import shown_steps
from onrecord.domains.remittance._agents import AGENTS, ScriptedAgent
from onrecord.domains.remittance._checks import (
    ANSWER_CHECK,
    END_STATE_CHECKS,
    HISTORY_CHECKS,
    REMITTANCE_CHECKS,
)
from onrecord.domains.remittance._run import (
    Agent,
    RemittanceEnvironment,
    remittance_trial,
    task_case,
)
from onrecord.domains.remittance._tasks import RemittanceTask, load_tasks
from onrecord.errors import InputError
from onrecord.report import EvaluationReport, Trial

__all__ = [
    "GRADERS",
    "AgentOutcome",
    "SuiteResult",
    "expected_decision",
    "full_policy",
    "run_demo_suite",
    "suite_from_reports",
]

AgentFactory = Callable[[Mapping[str, Any]], Agent]
"""Makes a fresh agent for one episode from the task brief."""

_FAULT_KINDS = {
    "skips_notes": ("hidden_hold", "hidden_redirect"),
    "double_poster": ("duplicate",),
    "ignores_threshold": ("over_threshold",),
    "late_followup": ("denial", "underpayment"),
    "change_and_restore": ("denial",),
}


def _policy(name: str, checks: Sequence[Any]) -> AcceptancePolicy:
    return AcceptancePolicy(tuple(CheckRequirement(c.name) for c in checks), name=name)


def full_policy() -> AcceptancePolicy:
    """Every end-state and history check is critical; coverage issues make it
    indeterminate."""
    return _policy("remittance-full", (*END_STATE_CHECKS, *HISTORY_CHECKS))


GRADERS: dict[str, AcceptancePolicy] = {
    "final_answer": _policy("remittance-answer-only", (ANSWER_CHECK,)),
    "end_state": _policy("remittance-end-state", END_STATE_CHECKS),
    "full_policy": full_policy(),
}
"""The ablation's graders, weakest first."""


def expected_decision(agent: str, task: RemittanceTask, expectation: Mapping[str, Any]) -> str:
    """The decision the full policy must reach for a reference agent on a task."""
    if agent in _FAULT_KINDS:
        return "reject" if task.kind in _FAULT_KINDS[agent] else "accept"
    writes = writes_needed(expectation)
    if agent == "claims_done_without_writing":
        return "reject" if writes else "accept"
    if agent == "crash_after_commit":  # crashes after its first write
        return {0: "accept", 1: "indeterminate"}.get(writes, "reject")
    return "accept"


@dataclass(frozen=True)
class AgentOutcome:
    """One agent's results over the suite."""

    agent: str
    """Agent name."""
    report: EvaluationReport
    """Every (task, repeat) trial with every named check."""
    decision: PolicyDecision
    """The full policy over the whole report."""
    task_decisions: dict[str, str]
    """Full-policy decision per task (over its repeats)."""
    failing_checks: dict[str, list[str]]
    """Per task, the checks that failed in any repeat."""
    trial_decisions: list[dict[str, str]]
    """Per trial: ``task``, ``repeat`` and each grader's decision."""


@dataclass
class SuiteResult:
    """All agents' outcomes, what they had to be, and the ablation."""

    outcomes: dict[str, AgentOutcome] = field(default_factory=dict)
    """By agent name."""
    expected: dict[str, dict[str, str]] = field(default_factory=dict)
    """Agent → task → required decision (reference agents only)."""

    @property
    def mismatches(self) -> list[str]:
        """``agent/task: got X, expected Y`` for every decision that is not as required."""
        return [
            f"{agent}/{task}: got {got}, expected {want}"
            for agent, wants in self.expected.items()
            for task, want in wants.items()
            if (got := self.outcomes[agent].task_decisions[task]) != want
        ]

    def ablation(self) -> list[dict[str, Any]]:
        """Per agent and grader: episodes accepted, and how many of those the full policy
        does not accept."""
        rows = []
        for agent, outcome in self.outcomes.items():
            row: dict[str, Any] = {"agent": agent, "episodes": len(outcome.trial_decisions)}
            for grader in GRADERS:
                accepted = [t for t in outcome.trial_decisions if t[grader] == "accept"]
                row[grader] = len(accepted)
                row[f"{grader}_violating"] = sum(t["full_policy"] != "accept" for t in accepted)
                row[f"{grader}_decision"] = GRADERS[grader].evaluate(outcome.report).decision
            rows.append(row)
        return rows


def _decide_trial(trial: Trial) -> dict[str, str]:
    report = EvaluationReport.from_trials([trial])
    return {name: policy.evaluate(report).decision for name, policy in GRADERS.items()}


def _agent_outcome(agent: str, trials: list[Trial]) -> AgentOutcome:
    report = EvaluationReport.from_trials(trials)
    by_task: dict[str, list[Trial]] = {}
    for trial in trials:
        by_task.setdefault(str(trial.case["case_id"]), []).append(trial)
    policy = full_policy()
    decisions: dict[str, str] = {
        task: policy.evaluate(EvaluationReport.from_trials(items)).decision
        for task, items in by_task.items()
    }
    failing = {
        task: sorted(
            {
                r.name
                for t in items
                for r in t.results
                if r.status == "fail" and r.name != ANSWER_CHECK.name
            }
        )
        for task, items in by_task.items()
    }
    per_trial = [
        {"task": str(t.case["case_id"]), "repeat": str(t.repeat), **_decide_trial(t)}
        for t in trials
    ]
    return AgentOutcome(agent, report, policy.evaluate(report), decisions, failing, per_trial)


def run_demo_suite(
    output_dir: str | Path | None = None,
    *,
    agents: Sequence[str] | Mapping[str, AgentFactory] = AGENTS,
    tasks: Sequence[RemittanceTask] | None = None,
    repeats: int = 3,
    progress: Callable[[str], None] | bool | None = None,
    episodes_dir: str | Path | None = None,
) -> SuiteResult:
    """Run every agent on every task ``repeats`` times.

    ``agents`` are reference agent names or ``{name: factory(brief) -> agent}``. With
    ``output_dir``, each agent's report and decision and ``summary.json`` are written to
    ``output_dir/remittance/``. Episodes are saved under ``episodes_dir`` (kept) or a
    temporary directory (deleted when the run ends). ``progress`` is called with
    ``"remittance TASK"`` after each task; True shows the tasks on stderr (a bar in a
    terminal, else plain lines ``remittance tasks 1/33 · full-01 done · 0 s``); None or
    False (the default) nothing.
    """
    factories = _factories(agents)
    tasks = tuple(load_tasks() if tasks is None else tasks)
    if callable(progress):
        result = _run_tasks(factories, tasks, repeats, episodes_dir, progress)
    else:
        with shown_steps(None, progress is True, "remittance tasks", len(tasks)) as tick:
            # "remittance tasks 1/33 · full-01 done": the name already says whose tasks.
            result = _run_tasks(
                factories,
                tasks,
                repeats,
                episodes_dir,
                lambda t: tick(t.removeprefix("remittance ")),
            )
    if output_dir is not None:
        save_suite(result, Path(output_dir) / "remittance")
    return result


def _run_tasks(
    factories: Mapping[str, AgentFactory],
    tasks: Sequence[RemittanceTask],
    repeats: int,
    episodes_dir: str | Path | None,
    progress: Callable[[str], None],
) -> SuiteResult:
    result = SuiteResult()
    trials: dict[str, list[Trial]] = {name: [] for name in factories}
    with ScratchDirectory("remittance") as scratch:  # removed by a later run if killed
        root = Path(episodes_dir) if episodes_dir is not None else Path(scratch)
        for task in tasks:
            env = RemittanceEnvironment(task)
            try:
                for name, factory in factories.items():
                    if name in AGENTS:
                        result.expected.setdefault(name, {})[task.task_id] = expected_decision(
                            name, task, env.expectation
                        )
                    for repeat in range(repeats):
                        run = env.run(
                            factory(env.brief),
                            root / name / task.task_id / f"r{repeat}",
                            seed=repeat,
                            run_id=f"{name}/{task.task_id}/{repeat}",
                        )
                        trials[name].append(
                            remittance_trial(run.episode, REMITTANCE_CHECKS, repeat)
                        )
            finally:
                env.close()
            progress(f"remittance {task.task_id}")
    result.outcomes = {name: _agent_outcome(name, items) for name, items in trials.items()}
    return result


def suite_from_reports(reports: Mapping[str, EvaluationReport]) -> SuiteResult:
    """The suite's tables, ablation and required decisions from per-agent reports made
    elsewhere, e.g. by ``onrecord run remittance --agent NAME`` (one run per agent)."""
    tasks = {task.task_id: task for task in load_tasks()}
    result = SuiteResult()
    for name, report in reports.items():
        seen = {str(trial.case["case_id"]) for trial in report.trials}
        unknown = sorted(seen - set(tasks))
        if unknown:
            raise InputError(
                f"report of {name!r} holds trials of unknown remittance tasks "
                f"{unknown[:3]}; pass reports of the remittance environment"
            )
        if name in AGENTS:
            for task_id in sorted(seen):
                # The task's own expectation, not the one the report's trials carry: the
                # decision an agent must get comes from the task file. task_case keeps it
                # per process, and the demo planned these very tasks, so their scenarios
                # are not built a second time (33 of them, once per demo, before).
                task = tasks[task_id]
                expectation = task_case(task).expected_output
                result.expected.setdefault(name, {})[task_id] = expected_decision(
                    name, task, expectation
                )
        result.outcomes[name] = _agent_outcome(name, list(report.trials))
    return result


def _factories(agents: Sequence[str] | Mapping[str, AgentFactory]) -> dict[str, AgentFactory]:
    if isinstance(agents, Mapping):
        return dict(agents)
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        raise InputError(
            f"unknown reference agents {unknown}; choose from {AGENTS} or pass {{name: factory}}"
        )
    return {name: _reference(name) for name in agents}


def _reference(name: str) -> AgentFactory:
    def make(brief: Mapping[str, Any]) -> Agent:
        return ScriptedAgent(name, brief)

    return make


def save_suite(result: SuiteResult, directory: Path) -> None:
    """Each agent's report and decision, the policy, and ``summary.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    full_policy().save_json(directory / "policy.json")
    for name, outcome in result.outcomes.items():
        outcome.report.save_json(directory / f"{name}.report.json")
        atomic_write_bytes(
            directory / f"{name}.decision.json",
            _record("onrecord.decision/v1", outcome.decision.to_dict()),
        )
    summary = {
        "agents": {
            name: {
                "decision": o.decision.decision,
                "task_decisions": o.task_decisions,
                "failing_checks": {t: c for t, c in o.failing_checks.items() if c},
                "expected": result.expected.get(name, {}),
            }
            for name, o in result.outcomes.items()
        },
        "ablation": result.ablation(),
        "mismatches": result.mismatches,
    }
    atomic_write_bytes(
        directory / "summary.json", _record("onrecord.remittance-summary/v1", summary)
    )


def _record(schema: str, body: dict[str, Any]) -> bytes:
    data = {"schema": schema, **body}
    return record_bytes({**data, "digest": content_digest(data)})


def decision_counts(outcome: AgentOutcome) -> Counter[str]:
    """How many tasks got each decision."""
    return Counter(outcome.task_decisions.values())


def writes_needed(expect: Mapping[str, Any]) -> int:
    """How many write calls the careful agent makes for the task (0 means the right
    answer is to write nothing)."""
    count = 0
    for line in expect["lines"]:
        action = line["action"]
        if action in ("post", "post_and_case"):
            count += int(line.get("first_fit_lines", 1)) + len(line["adjustments"])
        count += {"case": 3, "post_and_case": 3, "approve": 1, "reverse": 1}.get(action, 0)
    return count
