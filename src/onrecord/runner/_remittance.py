"""``onrecord run remittance``: the remittance-posting domain as a run environment.

Config: ``size`` (background rows of every task's snapshot, default each task's own),
``tasks_file`` (another task file), ``kinds`` (only tasks of these kinds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
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
)
from onrecord.domains.remittance._run import ENVIRONMENT_ID, MAX_STEPS, task_case
from onrecord.envkit import ToolWorld
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy
from onrecord.runner._provider import AgentFactory, agent_factory
from onrecord.runner._toolrunner import ToolWorldRunner

__all__ = ["RemittanceProvider", "remittance"]


def _reference(name: str) -> AgentFactory:
    return agent_factory(lambda context: ScriptedAgent(name, context.case.input))


class RemittanceProvider(ToolWorldRunner):
    """Remittance tasks on fresh tool worlds; one snapshot per task, reset per episode."""

    default_max_steps = MAX_STEPS

    def __init__(
        self,
        *,
        size: int | None = None,
        tasks_file: str | None = None,
        kinds: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        tasks = load_tasks(tasks_file)
        if kinds is not None:
            tasks = _of_kinds(tasks, kinds)
        if size is not None:
            if type(size) is not int or size < 1:
                raise InputError(f"remittance size must be a positive integer, got {size!r}")
            tasks = tuple(dataclasses.replace(task, size=size) for task in tasks)
        self._tasks = {task.task_id: task for task in tasks}
        self._envs: dict[str, RemittanceEnvironment] = {}
        self.environment_id = ENVIRONMENT_ID  # also in every task's snapshot name

    def _task(self, case_id: str) -> RemittanceTask:
        if case_id not in self._tasks:
            raise InputError(
                f"unknown remittance task {case_id!r}: a remittance task is built from "
                "its task file ([[task]] entries; --env-config tasks_file=FILE), not "
                "given as a --tasks-file case"
            )
        return self._tasks[case_id]

    def _env(self, case_id: str) -> RemittanceEnvironment:
        if case_id not in self._envs:
            self._envs[case_id] = RemittanceEnvironment(self._task(case_id))
        return self._envs[case_id]

    def _world_key(self, case: EvalCase) -> str:
        return str(case.identity["case_id"])

    def _build_world(self, case: EvalCase) -> ToolWorld:
        return self._env(self._world_key(case)).world

    def _episode_case(self, case: EvalCase) -> EvalCase:
        # An episode needs the world anyway: its environment holds the case too.
        return _same_task(case, self._env(self._world_key(case)).case)

    def check_task(self, case: EvalCase) -> None:
        # Planning needs no world: building 33 snapshots per plan_run made `onrecord
        # demo` build the same ones once per agent before its first episode.
        _same_task(case, task_case(self._task(self._world_key(case))))

    def _close_world(self, key: str, world: ToolWorld) -> None:
        # The environment keeps its snapshot (the costly part) and opens a new world
        # when next asked for one.
        self._envs[key].close()

    def close(self) -> None:
        super().close()
        for env in self._envs.values():  # those whose world was never kept
            env.close()
        self._envs.clear()

    def tasks(self) -> Sequence[EvalCase]:
        return [task_case(task) for task in self._tasks.values()]

    def default_checks(self) -> Sequence[OutcomeCheck]:
        return REMITTANCE_CHECKS

    def default_policy(self, checks: Sequence[OutcomeCheck]) -> AcceptancePolicy:
        if tuple(checks) == tuple(REMITTANCE_CHECKS):
            return full_policy()
        return super().default_policy(checks)

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        return {name: _reference(name) for name in AGENTS}


def _same_task(case: EvalCase, known: EvalCase) -> EvalCase:
    """``known``, the domain's own case, when ``case`` is it (a task that is not one of
    this domain's, or whose content changed, is refused)."""
    if known.identity != case.identity:
        raise InputError(
            f"task {case.case_id!r} differs from the run's recorded "
            "task (its content digest changed); start a new run"
        )
    return known


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
