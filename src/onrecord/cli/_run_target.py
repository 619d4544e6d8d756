"""Where ``onrecord run`` writes: a new run's ``--out`` (refused when in use), or the
run ``--resume`` continues and the protocol its command line expects of it (the
settings it names put in place of the run's own)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from onrecord._canonical import to_portable
from onrecord._saved_episode import refuse_episode_given_as
from onrecord.case import EvalCase
from onrecord.episode._verify_files import check_entry
from onrecord.errors import InputError
from onrecord.runner import RunConfig, RunProtocol, RunStore, plan_run
from onrecord.runner._executor_settings import resumed_choice
from onrecord.runner._protocol import differences_in, settings_differ, tasks_from
from onrecord.runner._run import did_you_mean
from onrecord.runner._store import startable_entry

__all__ = ["refuse_used", "resume_target", "resumed_executor", "task_places", "tasks_file_cases"]


def task_places(config: RunConfig) -> dict[str, str] | None:
    """Where each task of ``tasks_file`` is, for the errors planning names a task in."""
    if config.tasks_file is None:
        return None
    cases = config.cases() or []
    return {
        str(case.identity["case_id"]): f"{config.tasks_file}: task {number}"
        for number, case in enumerate(cases, start=1)
    }


def tasks_file_cases(config: RunConfig) -> list[EvalCase] | None:
    """The tasks of ``tasks_file``, narrowed to ``tasks`` when both are given (a config
    file's ``tasks_file`` with ``--tasks`` on the command line)."""
    cases = config.cases()
    if cases is None or config.tasks is None:
        return cases
    by_id = {str(case.identity["case_id"]): case for case in cases}
    for name in config.tasks:
        if name not in by_id:
            raise InputError(
                f"unknown task {name!r} in {config.tasks_file}{did_you_mean(name, by_id)}; "
                "its tasks are: "
                f"{', '.join(list(by_id)[:8])}{' ...' if len(by_id) > 8 else ''}"
            )
    return [by_id[name] for name in config.tasks]


def refuse_used(out: Path) -> None:
    """Before any executor starts (a Ray cluster takes seconds): ``start_run`` refuses a
    directory in use too, but only after that wait."""
    refuse_episode_given_as(out, "out")  # not a run to resume either
    if out.is_dir() and not all(map(startable_entry, out.iterdir())):
        raise InputError(
            f"{out} already exists and is not empty; pass --resume to continue the run in "
            "it, or choose another --out directory"
        )


def resume_target(config: RunConfig) -> tuple[str, RunProtocol | None]:
    given = config.environment
    for named in filter(None, (given, config.out)):
        refuse_episode_given_as(Path(named), "resume")
    # ``--resume runs/x --out ./runs/x/`` (or an absolute --out from a config file) names
    # one directory twice: compare the paths, not their spelling.
    same = config.out is None or Path(config.out).resolve() == Path(given or ".").resolve()
    if given and check_entry(Path(given, "run.json")):
        if not same:
            # Else the run directory was read as an environment: "unknown environment".
            raise InputError(
                f"--resume {given} and --out {config.out} (or a --config file's out) name "
                "two different run directories; resume one: `onrecord run --resume RUN`"
            )
        out, config = given, replace(config, environment=None)
    elif config.out:
        out = config.out
    else:
        raise _no_run(given)
    stored = RunStore.open(out).protocol
    _refuse_other_environment(config, stored, out)
    return out, _expected(config, stored)


def _no_run(given: str | None) -> InputError:
    """Why ``--resume`` has no run to continue: the directory given is not one (before,
    "--resume needs the run directory" was said of a directory given)."""
    how = "`onrecord run --resume RUN` takes the run's --out directory"
    if not given:
        return InputError(f"--resume needs the run directory: {how}")
    path = Path(given)
    if path.is_dir():
        return InputError(f"{given} is not a run directory (it has no run.json): {how}")
    if path.exists():
        return InputError(f"{given} is not a directory: {how}")
    return InputError(f"no such directory: {given}; {how}")


def resumed_executor(config: RunConfig, out: str) -> RunConfig:
    """``config`` with the executor the run in ``out`` was started with, where the
    command line names none: a run started on a process pool (its agent may kill its
    process) must not be resumed in-process, where that kills onrecord."""
    recorded = RunStore.open(out).executor_settings
    name, workers, address = resumed_choice(
        recorded, config.executor, config.workers, config.address
    )
    return replace(config, executor=name, workers=workers, address=address)


def _refuse_other_environment(config: RunConfig, stored: RunProtocol, out: str) -> None:
    """Refuse, naming it, an environment or environment setting other than the run's
    before planning with it: planned, the other environment's own refusal came first
    (ledger's checks "do not match the policy"; a remittance task "differs from the
    run's recorded task" for another size), naming no setting."""
    if config.environment is None and config.environment_config is None:
        return
    environment = stored.environment
    name = _given(config.environment, environment.name)
    if name != environment.name:
        raise settings_differ(out, differences_in("environment", environment.name, name))
    given = to_portable({**environment.config, **(config.environment_config or {})}, "$")
    if changed := differences_in("environment.config", dict(environment.config), given):
        raise settings_differ(out, changed)


def _expected(config: RunConfig, stored: RunProtocol) -> RunProtocol | None:
    """The run's protocol with every setting the command line (or --config) names put
    in its place; None when it names none. Settings left out keep the run's values, so
    only what was named can differ (and is refused by ``resume_run``)."""
    if all(getattr(config, name) is None for name in _SETTINGS):
        return None
    cases = tasks_file_cases(config)
    policy = config.acceptance_policy()
    if all(getattr(config, name) is None for name in _RESOLVED):
        return replace(
            stored,
            agent=_given(config.agent, stored.agent),
            tasks=stored.tasks if cases is None else tasks_from(cases),
            repeats=_given(config.repeats, stored.repeats),
            seeds=tuple(_given(config.seeds, stored.seeds)),
            max_steps=_given(config.max_steps, stored.max_steps),
            options=_given(config.options, stored.options),
            policy=stored.policy if policy is None else policy.to_dict(),
        )
    # Names of environments, tasks and checks must be resolved (check versions loaded).
    environment = stored.environment
    same_environment = config.environment in (None, environment.name)
    return plan_run(
        _given(config.environment, environment.name),
        _given(config.agent, stored.agent),
        tasks=cases or _named(config.tasks, stored) or _named(None, stored),
        checks=_given(config.checks, stored.checks),
        repeats=_given(config.repeats, stored.repeats),
        seeds=_given(config.seeds, stored.seeds),
        max_steps=_given(config.max_steps, stored.max_steps),
        options=_given(config.options, stored.options),
        policy=stored.acceptance_policy if policy is None else policy,
        # Keys left out keep the run's values, like every other setting.
        environment_config={
            **(environment.config if same_environment else {}),
            **(config.environment_config or {}),
        },
        task_places=task_places(config),
    )


def _named(names: list[str] | None, stored: RunProtocol) -> list[str | EvalCase] | None:
    """``--tasks`` on resume picks among the run's own tasks first (they may come from a
    tasks file the environment does not hold); other ids are the environment's. No
    names: every task of the run."""
    cases = {str(task["case_id"]): EvalCase.from_dict(task) for task in stored.tasks}
    if names is None:
        return list(cases.values())
    return [cases.get(name, name) for name in names]


# Settings that define the protocol (executor, workers, address and out do not).
_SETTINGS = (
    "environment",
    "agent",
    "tasks",
    "tasks_file",
    "repeats",
    "seeds",
    "max_steps",
    "checks",
    "policy",
    "options",
    "environment_config",
)
_RESOLVED = ("environment", "environment_config", "tasks", "checks")


def _given(value: Any, stored: Any) -> Any:
    return stored if value is None else value
