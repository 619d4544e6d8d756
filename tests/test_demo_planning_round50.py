"""Planning a remittance run builds no task environment (snapshot and tool world): the
cases come from the scenarios alone, each built once per process. ``onrecord demo`` plans
all eight reference agents before its first episode, and used to build the same 33
environments once per agent (264, seconds of silence); the protocols are unchanged."""

from __future__ import annotations

import dataclasses
import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from onrecord.cli import demo
from onrecord.domains.remittance import AGENTS, RemittanceEnvironment, load_tasks
from onrecord.domains.remittance import _run as remittance_run
from onrecord.domains.remittance._run import task_case
from onrecord.errors import InputError
from onrecord.runner import _remittance, plan_run
from onrecord.runner._remittance import RemittanceProvider

# An unusual size: tasks of their own, whose scenarios no other test built in this process.
SIZE = 23
KINDS = ["full_payment", "denial"]


class _Counts:
    """Environments and scenarios built, by task id."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.environments: Counter[str] = Counter()
        self.scenarios: Counter[str] = Counter()
        counts = self

        class CountedEnvironment(RemittanceEnvironment):
            def __init__(self, task: Any, **kwargs: Any) -> None:
                counts.environments[task.task_id] += 1
                super().__init__(task, **kwargs)

        real_scenario = remittance_run.build_scenario

        def counted_scenario(task: Any) -> Any:
            counts.scenarios[task.task_id] += 1
            return real_scenario(task)

        monkeypatch.setattr(_remittance, "RemittanceEnvironment", CountedEnvironment)
        monkeypatch.setattr(remittance_run, "build_scenario", counted_scenario)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> _Counts:
    return _Counts(monkeypatch)


def _small_tasks() -> list[Any]:
    return [
        dataclasses.replace(task, size=SIZE) for task in load_tasks() if task.kind in set(KINDS)
    ]


def test_planning_every_agent_builds_no_environment_and_each_scenario_once(
    counts: _Counts,
) -> None:
    config = {"size": SIZE, "kinds": KINDS}
    protocols = [plan_run("remittance", agent, environment_config=config) for agent in AGENTS]
    task_ids = [str(case["case_id"]) for case in protocols[0].tasks]
    assert len(task_ids) == len(_small_tasks()) > 1
    assert all(p.tasks == protocols[0].tasks for p in protocols)
    assert sum(counts.environments.values()) == 0, counts.environments
    assert max(counts.scenarios.values(), default=0) <= 1, counts.scenarios


def test_the_planned_cases_are_the_environments_own(counts: _Counts) -> None:
    protocol = plan_run("remittance", "careful", environment_config={"size": SIZE, "kinds": KINDS})
    for task, planned in zip(_small_tasks(), protocol.tasks, strict=True):
        environment = RemittanceEnvironment(task)
        try:
            assert planned == environment.case.to_dict()
        finally:
            environment.close()


def test_each_case_is_a_detached_copy() -> None:
    task = _small_tasks()[0]
    first = task_case(task)
    first.expected_output["remittance_id"] = "spoiled"
    first.input["instruction"] = "spoiled"
    again = task_case(task)
    assert again.expected_output["remittance_id"] != "spoiled"
    assert again.input["instruction"] != "spoiled"
    environment = RemittanceEnvironment(task)
    try:
        assert again.to_dict() == environment.case.to_dict()
    finally:
        environment.close()


def test_a_changed_or_unknown_task_is_refused_without_building_a_world(
    counts: _Counts,
) -> None:
    provider = RemittanceProvider(size=SIZE, kinds=KINDS)
    try:
        case = provider.tasks()[0]
        provider.check_task(case)
        changed = dataclasses.replace(case, metadata={**case.metadata, "size": SIZE + 1})
        with pytest.raises(InputError, match="differs from the run's recorded task"):
            provider.check_task(changed)
        unknown = dataclasses.replace(case, case_id="no-such-task")
        with pytest.raises(InputError, match="unknown remittance task 'no-such-task'"):
            provider.check_task(unknown)
    finally:
        provider.close()
    assert sum(counts.environments.values()) == 0, counts.environments


class _FirstRun(Exception):
    """Raised where the demo starts its first run: planning is over."""


def test_the_demo_builds_no_environment_before_its_first_episode(
    counts: _Counts, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def first_run(*args: Any, **kwargs: Any) -> Any:
        raise _FirstRun

    monkeypatch.setattr(demo, "start_run", first_run)
    console = Console(file=io.StringIO(), width=100)
    with pytest.raises(_FirstRun):
        demo._remittance_runs(tmp_path, 1, 1, console)
    assert sum(counts.environments.values()) == 0, counts.environments
    assert max(counts.scenarios.values(), default=0) <= 1, counts.scenarios
