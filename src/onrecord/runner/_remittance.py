"""``onrecord run remittance``: the remittance-posting domain as a run environment.

Config: ``size`` (background rows of every task's snapshot, default each task's own),
``tasks_file`` (another task file), ``kinds`` (only tasks of these kinds).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onrecord.case import EvalCase
from onrecord.domains.remittance import (
    AGENTS,
    KINDS,
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    RemittanceTask,
    ScriptedAgent,
    full_policy,
    load_tasks,
    remittance_trial,
)
from onrecord.domains.remittance._run import MAX_STEPS
from onrecord.envkit import ToolEpisode
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy
from onrecord.report import Trial
from onrecord.runner._provider import (
    AGENT_FACTORY_MARK,
    AgentContext,
    AgentFactory,
    EnvironmentProvider,
    EpisodeOutput,
    EpisodeSpec,
    SavedEpisode,
    agent_factory,
    failing_agent,
)
from onrecord.runner._toolworld import (
    episode_from_evidence,
    rebuild_episode,
    table_layouts,
    tool_evidence,
)

__all__ = ["RemittanceProvider", "remittance"]


def _reference(name: str) -> AgentFactory:
    return agent_factory(lambda context: ScriptedAgent(name, context.case.input))


class RemittanceProvider(EnvironmentProvider):
    """Remittance tasks on fresh tool worlds; one snapshot per task, reset per episode."""

    default_max_steps = MAX_STEPS

    def __init__(
        self,
        *,
        size: int | None = None,
        tasks_file: str | None = None,
        kinds: Sequence[str] | None = None,
    ) -> None:
        tasks = load_tasks(tasks_file)
        if kinds is not None:
            tasks = _of_kinds(tasks, kinds)
        if size is not None:
            if type(size) is not int or size < 1:
                raise InputError(f"remittance size must be a positive integer, got {size!r}")
            tasks = tuple(dataclasses.replace(task, size=size) for task in tasks)
        self._tasks = {task.task_id: task for task in tasks}
        self._envs: dict[str, RemittanceEnvironment] = {}
        self._schemas: dict[str, list[dict[str, Any]]] = {}
        self._layouts: dict[str, dict[str, dict[str, list[str]]]] = {}
        self._workdir = tempfile.TemporaryDirectory(prefix="onrecord-remittance-")
        self.environment_id = "onrecord.domains.remittance/v1"

    def _env(self, case_id: str) -> RemittanceEnvironment:
        if case_id not in self._envs:
            if case_id not in self._tasks:
                raise InputError(f"unknown remittance task {case_id!r}")
            env = RemittanceEnvironment(self._tasks[case_id])
            self._envs[case_id] = env
            self._schemas[case_id] = env.world.tool_schemas()
            self._layouts[case_id] = table_layouts(env.world)
        return self._envs[case_id]

    def tasks(self) -> Sequence[EvalCase]:
        return [self._env(task_id).case for task_id in self._tasks]

    def default_checks(self) -> Sequence[OutcomeCheck]:
        return REMITTANCE_CHECKS

    def default_policy(self, checks: Sequence[OutcomeCheck]) -> AcceptancePolicy:
        if tuple(checks) == tuple(REMITTANCE_CHECKS):
            return full_policy()
        return super().default_policy(checks)

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        return {name: _reference(name) for name in AGENTS}

    def run_episode(self, spec: EpisodeSpec, agent: Any) -> EpisodeOutput:
        env = self._env(str(spec.case.identity["case_id"]))
        if env.case.identity != spec.case.identity:
            raise InputError(
                f"task {spec.case.case_id!r} differs from the run's recorded "
                "task (its content digest changed); start a new run"
            )
        try:
            act = (
                agent(AgentContext(spec.case, spec.repeat, spec.seed))
                if getattr(agent, AGENT_FACTORY_MARK, False)
                else agent(spec.case.input)
            )
        except Exception as exc:  # the agent's failure, recorded in its episode
            act = failing_agent(f"building the agent raised {type(exc).__name__}: {exc}", exc)
        played = env.play(act, seed=spec.seed, run_id=spec.run_id, max_steps=spec.max_steps)
        tools = self._schemas[env.task.task_id]
        evidence = tool_evidence(
            env.world,
            ending=played.ending,
            agent_error=played.agent_error,
            tools=tools,
            layouts=self._layouts[env.task.task_id],
        )
        events = list(played.actions)
        subject = episode_from_evidence(evidence, events, env.world.path, tools)
        return EpisodeOutput(evidence, subject, events)

    def load_subject(self, saved: SavedEpisode) -> ToolEpisode:
        env = self._env(str(saved.evidence["task_id"]))
        return rebuild_episode(
            saved.evidence,
            saved.action_log,
            env.snapshot,
            self._schemas[env.task.task_id],
            Path(self._workdir.name),
        )

    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        return remittance_trial(subject, checks, repeat)

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
        self._workdir.cleanup()


def _of_kinds(tasks: tuple[RemittanceTask, ...], kinds: Any) -> tuple[RemittanceTask, ...]:
    # A string is a Sequence too: kinds="late" must not mean the letters l, a, t, e.
    if not isinstance(kinds, list | tuple) or not all(isinstance(k, str) for k in kinds):
        raise InputError(
            f"remittance kinds must be a list of task kinds, got {kinds!r}; write "
            "--env-config 'kinds=[\"...\"]' with kinds from " + ", ".join(KINDS)
        )
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        wrong = f"unknown {', '.join(map(repr, unknown))}" if unknown else "none given"
        raise InputError(f"remittance kinds: {wrong}; the kinds are {', '.join(KINDS)}")
    chosen = tuple(task for task in tasks if task.kind in set(kinds))
    if not chosen:
        raise InputError(f"remittance: no task is of the kinds {kinds!r}")
    return chosen


def remittance(**config: Any) -> RemittanceProvider:
    """Factory registered as ``remittance``."""
    return RemittanceProvider(**config)
