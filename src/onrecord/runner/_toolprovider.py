"""``ToolWorldProvider``: an environment built with ``onrecord.envkit`` (a snapshot, tools,
tasks with expected-diff rules) as an ``onrecord run`` environment, graded with the
envkit checks over each episode's ``ToolEpisode`` (diff, audit history, tool calls).

Return one from a ``module:factory`` (``onrecord run mymodule:make -a careful``) or
register the factory with ``register_environment``; every worker process builds it
afresh from that reference. See docs/envkit.md, "Under ``onrecord run``".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from onrecord._close_names import misspelt_keys
from onrecord.case import EvalCase
from onrecord.envkit import Snapshot, Tool, ToolContext, ToolWorld, check_rules, get_check, tool
from onrecord.envkit._rule_names import schema_facts
from onrecord.envkit._setup import hidden_layouts
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy
from onrecord.report import Trial
from onrecord.runner._policy_names import refuse_unmatched_requirements
from onrecord.runner._provider import AgentFactory
from onrecord.runner._toolrules import check_rule_values
from onrecord.runner._toolrunner import ToolWorldRunner

__all__ = ["ENVKIT_CHECKS", "ToolWorldProvider"]

ENVKIT_CHECKS = ("envkit/diff_satisfies_rules", "envkit/rejected_calls_changed_nothing")
"""The envkit checks a ``ToolWorldProvider`` grades with unless told otherwise."""

# The built-in checks that read a task's expected_output, and the key each reads.
_READS = {"envkit/diff_satisfies_rules": "rules", "envkit/diff_matches_expected": "diff"}

SnapshotSource = Snapshot | Callable[[EvalCase], Snapshot]


def _finish_tool(name: str) -> Tool:
    def finish(ctx: ToolContext, message: str = "") -> dict[str, Any]:
        """End the episode, saying what was done."""
        return {"finished": True, "message": message}

    built: Tool = tool(finish, name=name, example={"message": "done"})
    return built


class ToolWorldProvider(ToolWorldRunner):
    """Episodes of a tool world of your own: every task's world is reset to its start
    snapshot, the agent calls tools until it calls ``finish`` (or raises, or runs out of
    steps), and the episode is recorded and graded as a ``ToolEpisode``."""

    def __init__(
        self,
        snapshot: SnapshotSource,
        tools: Sequence[Tool],
        *,
        environment_id: str,
        tasks: Sequence[EvalCase] = (),
        checks: Sequence[OutcomeCheck] = (),
        envkit_checks: Sequence[str] = ENVKIT_CHECKS,
        agents: Mapping[str, Any] | None = None,
        policy: AcceptancePolicy | None = None,
        hidden: Sequence[str] = (),
        foreign_keys: bool = False,
        max_steps: int = 50,
        finish_tool: str = "finish",
    ) -> None:
        super().__init__()
        if not isinstance(environment_id, str) or not environment_id.strip():
            raise InputError(
                "ToolWorldProvider environment_id must be a non-empty string naming the "
                f"environment and its version, e.g. 'pharmacy/v1'; got {environment_id!r}"
            )
        if not isinstance(snapshot, Snapshot) and not callable(snapshot):
            raise InputError(
                "ToolWorldProvider snapshot must be an envkit Snapshot (Snapshot.build or "
                "Snapshot.from_file), or a function of the task's EvalCase returning one; "
                f"got {type(snapshot).__name__}"
            )
        if not isinstance(finish_tool, str) or not finish_tool:
            raise InputError(
                f"ToolWorldProvider finish_tool must be a tool name, got {finish_tool!r}"
            )
        if type(max_steps) is not int or max_steps < 1:
            raise InputError(
                f"ToolWorldProvider max_steps must be a positive int, got {max_steps!r}"
            )
        if type(foreign_keys) is not bool:
            raise InputError(
                f"ToolWorldProvider foreign_keys must be True or False, got {foreign_keys!r}"
            )
        self.environment_id = environment_id
        self.finish_tool = finish_tool
        self.default_max_steps = max_steps
        self._snapshot = snapshot
        self._snapshots: dict[str, Snapshot] = {}
        self._tools = _tools(tools, finish_tool)
        self._hidden = _names("hidden", hidden)
        self._foreign_keys = foreign_keys
        self._checks = (*_envkit(envkit_checks), *_own(checks))
        _unique(self._checks)
        self._reads = [_READS[c.name] for c in self._checks if c.name in _READS]
        self._agents = _agents(agents)
        if policy is not None and not isinstance(policy, AcceptancePolicy):
            raise InputError(
                f"ToolWorldProvider policy must be an AcceptancePolicy or None, got "
                f"{type(policy).__name__}"
            )
        self._policy = policy
        self._check_policy()
        if isinstance(snapshot, Snapshot):
            self._check_hidden(snapshot)
        if not isinstance(tasks, Sequence) or isinstance(tasks, str):
            raise InputError(f"ToolWorldProvider tasks must be a list of EvalCases, got {tasks!r}")
        for index, case in enumerate(tasks):
            self._check_task(case, f"tasks[{index}]")
        self._tasks = tuple(tasks)

    # -- EnvironmentProvider ----------------------------------------------------------------
    def tasks(self) -> Sequence[EvalCase]:
        return self._tasks

    def default_checks(self) -> Sequence[OutcomeCheck]:
        return self._checks

    def default_policy(self, checks: Sequence[OutcomeCheck]) -> AcceptancePolicy:
        if self._policy is not None and tuple(checks) == self._checks:
            return self._policy
        return super().default_policy(checks)

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        return self._agents

    def check_task(self, case: EvalCase) -> None:
        self._check_task(case, "task")

    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        trial = super().trial(subject, checks, repeat)
        # The environment's own version label enters every trial's settings, and so the
        # report's lock: runs of pharmacy/v1 and pharmacy/v2 are not compared as equals.
        settings = {**trial.settings, "environment_id": self.environment_id}
        return dataclasses.replace(trial, settings=settings)

    # -- worlds -------------------------------------------------------------------------------
    def _world_key(self, case: EvalCase) -> str:
        if isinstance(self._snapshot, Snapshot):
            return ""  # one world for every task
        return f"{case.identity['case_id']}#{case.content_digest}"

    def _start_snapshot(self, case: EvalCase) -> Snapshot:
        if isinstance(self._snapshot, Snapshot):
            return self._snapshot
        key = self._world_key(case)
        if key not in self._snapshots:
            built = self._snapshot(case)
            if not isinstance(built, Snapshot):
                raise InputError(
                    f"ToolWorldProvider snapshot({case.identity['case_id']!r}) returned "
                    f"{type(built).__name__}; the snapshot function must return an envkit "
                    "Snapshot (Snapshot.build or Snapshot.from_file)"
                )
            self._check_hidden(built)
            self._snapshots[key] = built
        return self._snapshots[key]

    def _build_world(self, case: EvalCase) -> ToolWorld:
        return ToolWorld(
            self._start_snapshot(case),
            self._tools,
            hidden=self._hidden,
            foreign_keys=self._foreign_keys,
        )

    def _check_policy(self) -> None:
        """Refuse a policy requiring a check the provider does not grade with, as
        ``--policy`` is refused: graded anyway, the requirement is undecided in every
        report, so the run would call the agent for every episode and end
        indeterminate."""
        try:
            refuse_unmatched_requirements(self._policy, self._checks)
        except InputError as error:
            raise InputError(
                f"ToolWorldProvider policy: {error}; a ToolWorldProvider's policy "
                "grades its own checks, so give the check as checks= or envkit_checks="
            ) from None

    def _check_hidden(self, snapshot: Snapshot) -> None:
        """The hidden tables are in ``snapshot``: refused as ToolWorld refuses them, with
        its hints (a view: hide the tables it reads; a misspelt table: the one meant)."""
        try:
            hidden_layouts(snapshot, self._hidden)
        except InputError as error:  # names the class the user called
            raise InputError(f"ToolWorldProvider {error}") from None

    def _check_task(self, case: Any, where: str) -> None:
        if not isinstance(case, EvalCase):
            raise InputError(
                f"ToolWorldProvider {where} must be an EvalCase(input, expected_output, "
                f"case_id=...), got {type(case).__name__}"
            )
        name = f"{where} ({case.identity['case_id']!r})"
        if not self._reads:
            return
        expected = case.expected_output
        is_map = isinstance(expected, Mapping)
        for key in self._reads:
            if not is_map or key not in expected:
                check = next(k for k, v in _READS.items() if v == key)
                # A misspelt key (rule = [...] for rules) read as no key at all.
                given = [k for k in expected if isinstance(k, str)] if is_map else []
                raise InputError(
                    f"{name} has no expected_output[{key!r}]{misspelt_keys(given, [key])}, "
                    f"which the check {check} grades: give the task "
                    f"EvalCase(input, {{{key!r}: [...]}}) "
                    + (
                        "with rules built by onrecord.envkit (created, changed, deleted, "
                        "unchanged, only_tables, no_other_changes)"
                        if key == "rules"
                        else "with the diff the episode should leave"
                    )
                    + f" (in a --tasks-file: expected_output = {{ {key} = ... }}, "
                    "as the helpers write it), or leave the check out (envkit_checks=...)"
                )
        if "rules" in self._reads:
            snapshot = self._start_snapshot(case)
            tables = {table.name: table.columns for table in snapshot.tables}
            conn = snapshot.connection
            try:
                check_rules({}, expected["rules"], tables=tables, schema=lambda: schema_facts(conn))
            except InputError as exc:
                raise InputError(f"{name} expected_output['rules']: {exc}") from exc
            check_rule_values(name, snapshot, expected["rules"])


def _tools(tools: Any, finish_tool: str) -> tuple[Tool, ...]:
    if not isinstance(tools, Sequence) or isinstance(tools, str) or not tools:
        raise InputError(
            f"ToolWorldProvider tools must be a non-empty list of tools declared with "
            f"@onrecord.envkit.tool, got {tools!r}"
        )
    names: set[str] = set()
    for index, item in enumerate(tools):
        if not isinstance(item, Tool):
            raise InputError(
                f"ToolWorldProvider tools[{index}] is a {type(item).__name__}, not a Tool: "
                "declare it with @onrecord.envkit.tool (writes=True for a tool that "
                "changes rows)"
            )
        if item.name in names:
            raise InputError(f"ToolWorldProvider tools: two tools are named {item.name!r}")
        names.add(item.name)
    if finish_tool in names:
        return tuple(tools)
    return (*tools, _finish_tool(finish_tool))


def _names(field: str, values: Any) -> tuple[str, ...]:
    if (
        isinstance(values, str)
        or not isinstance(values, Sequence)
        or not all(isinstance(v, str) for v in values)
    ):
        raise InputError(f"ToolWorldProvider {field} must be a list of table names, got {values!r}")
    return tuple(values)


def _envkit(names: Any) -> list[OutcomeCheck]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InputError(
            f"ToolWorldProvider envkit_checks must be a list of registered check names such "
            f"as {list(ENVKIT_CHECKS)}, got {names!r}"
        )
    found = []
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise InputError(
                f"ToolWorldProvider envkit_checks[{index}] must be a registered check's "
                f"name, got {type(name).__name__}; pass OutcomeChecks of your own as checks="
            )
        try:
            found.append(get_check(name))
        except InputError as exc:
            raise InputError(f"ToolWorldProvider envkit_checks[{index}]: {exc}") from exc
    return found


def _own(checks: Any) -> list[OutcomeCheck]:
    if isinstance(checks, OutcomeCheck) or not isinstance(checks, Sequence):
        raise InputError(
            f"ToolWorldProvider checks must be a list of OutcomeChecks, got {checks!r}"
        )
    for index, item in enumerate(checks):
        if not isinstance(item, OutcomeCheck):
            raise InputError(
                f"ToolWorldProvider checks[{index}] is a {type(item).__name__}, not an "
                "OutcomeCheck: declare it with @onrecord.envkit.check(name, version) or "
                "@onrecord.episode.outcome_check(name, version), or wrap the function "
                "as OutcomeCheck(name, version, function)"
            )
    return list(checks)


def _unique(checks: Sequence[OutcomeCheck]) -> None:
    if not checks:
        raise InputError(
            "ToolWorldProvider has no checks: keep the envkit checks (envkit_checks) or "
            "give checks of your own (checks=[...])"
        )
    seen: set[str] = set()
    for item in checks:
        if item.name in seen:
            raise InputError(
                f"ToolWorldProvider: two checks are named {item.name!r} (envkit_checks "
                "and checks together); check names must be unique"
            )
        seen.add(item.name)


def _agents(agents: Any) -> dict[str, Any]:
    if agents is None:
        return {}
    if not isinstance(agents, Mapping):
        raise InputError(
            f"ToolWorldProvider agents must map names to agents, got {type(agents).__name__}"
        )
    for name, agent in agents.items():
        if not isinstance(name, str) or not name.strip() or ":" in name:
            raise InputError(
                f"ToolWorldProvider agents: {name!r} is not an agent name (a non-empty "
                "string without ':')"
            )
        if not callable(agent):
            raise InputError(
                f"ToolWorldProvider agents[{name!r}] is a {type(agent).__name__}, not "
                "callable: give a function marked @agent_factory (called with the "
                "episode's AgentContext) or a callable taking the task's input, either "
                "returning act(observation) -> {'tool': ..., 'arguments': {...}}"
            )
    return dict(agents)
