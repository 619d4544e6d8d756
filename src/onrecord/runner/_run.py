"""Run orchestration: plan a protocol, start or resume a run, grade it, decide."""

from __future__ import annotations

import difflib
import os
import secrets
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from onrecord._async import AsyncInRunningLoop
from onrecord._canonical import atomic_write_bytes, content_digest, fsync_directory, record_bytes
from onrecord._exceptions import describe
from onrecord.case import EvalCase
from onrecord.errors import InputError, OnrecordError
from onrecord.policy import AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport, Trial
from onrecord.runner._agents_and_checks import load_checks, resolve_agent
from onrecord.runner._async_preflight import refuse_async_agent_in_loop
from onrecord.runner._commit import naming_file
from onrecord.runner._decided import decision_body
from onrecord.runner._executors import Executor, InProcessExecutor, stopped_in_loop
from onrecord.runner._interrupts import (
    interrupts_kept,
    raise_noted_interrupt,
    terminations_interrupt,
)
from onrecord.runner._job import Progress, progress_of
from onrecord.runner._policy_names import refuse_unmatched_requirements
from onrecord.runner._protocol import RunProtocol, settings_differ, tasks_from
from onrecord.runner._registry import build_provider, resolve_environment
from onrecord.runner._resumable import check_resumable
from onrecord.runner._store import DECISION_SCHEMA, RunStore, RunWriter
from onrecord.runner._timeout import check_timeout, refuse_unenforceable

__all__ = [
    "DECISION_SCHEMA",
    "Progress",
    "RunResult",
    "grade_store",
    "plan_run",
    "recorded_report",
    "resume_run",
    "start_run",
]


class Graded:
    """The rule a run and its re-gradings share: a run missing planned episodes is
    never accepted, whatever the recorded ones say."""

    report: EvaluationReport
    decision: PolicyDecision
    expected: int

    @property
    def complete(self) -> bool:
        """Every planned episode is recorded (and so graded)."""
        return len(self.report.trials) == self.expected

    @property
    def exit_code(self) -> Literal[0, 1, 2]:
        """0 accept, 1 reject, 2 indeterminate; an incomplete run is never accepted."""
        if not self.complete and self.decision.decision == "accept":
            return 2
        return self.decision.exit_code


@dataclass(frozen=True)
class RunResult(Graded):
    """What a run (or a resumed run) ended with."""

    store: RunStore
    """The run directory."""
    report: EvaluationReport
    """Every recorded episode, graded."""
    decision: PolicyDecision
    """The policy's decision on the report."""
    expected: int
    """Episodes the protocol asks for."""
    recorded_now: int
    """Episodes recorded by this invocation (the others were recorded before)."""
    errors: tuple[str, ...]
    """Episodes this invocation could not record, with the reason, in plan order."""
    notices: tuple[str, ...]
    """Repairs made before resuming (a partial record cut off, ...)."""
    episode_timeout: float | None = None
    """The time limit per episode this invocation applied (None: none)."""


def plan_run(
    environment: str,
    agent: str,
    *,
    tasks: Sequence[str | EvalCase] | None = None,
    checks: Sequence[str] = ("default",),
    repeats: int = 1,
    seeds: Sequence[int] = (0,),
    max_steps: int | None = None,
    options: Mapping[str, Any] | None = None,
    policy: AcceptancePolicy | None = None,
    environment_config: Mapping[str, Any] | None = None,
    task_places: Mapping[str, str] | None = None,
) -> RunProtocol:
    """Resolve names and build the protocol, failing early on anything unknown.
    ``tasks`` holds EvalCases, or ids selecting among the environment's own tasks;
    ``task_places`` says, by case id, where a task was read (``tasks.toml: task 3``)
    for the errors about it."""
    # An empty list is a mistake to report, never "every task" / "the default checks";
    # a string would be taken letter by letter.
    for field, names in (("tasks", tasks), ("checks", checks)):
        if isinstance(names, str) or (names is not None and not names):
            raise InputError(
                f"{field} must be a non-empty list of names, got {names!r}"
                + (f"; leave {field} out for the default" if field == "tasks" else "")
            )
    # A Ctrl-C the environment's own code swallowed (sqlite3 turns one raised in an
    # authorizer into "not authorized") is an interrupt, not the provider failing.
    with interrupts_kept():
        ref = resolve_environment(environment, environment_config)
        provider = build_provider(ref)
        try:
            agent = resolve_agent(provider, agent)
            loaded = load_checks(provider, checks)
            cases = _select_tasks(provider.tasks(), tasks, environment)
            for case in cases:  # tasks from a file meet the environment's needs too
                _check_task(provider, case, task_places or {})
            refuse_unmatched_requirements(policy, loaded)
            chosen = policy if policy is not None else provider.default_policy(loaded)
            if not isinstance(chosen, AcceptancePolicy):
                raise InputError(
                    f"environment {environment!r}: default_policy() returned "
                    f"{type(chosen).__name__}, not an AcceptancePolicy; pass --policy FILE"
                )
            steps = (
                max_steps if max_steps is not None else getattr(provider, "default_max_steps", 1000)
            )
        except OnrecordError:
            raise
        except Exception as exc:
            # A custom provider's own code (tasks(), reference_agents(), ...) failing is bad
            # input naming it (exit 3), not a traceback whose exit code 1 reads as reject.
            raise InputError(
                f"environment {environment!r} ({ref.target}) failed while planning the run: "
                f"{describe(exc)}{_where(exc)}"
            ) from exc
        finally:
            provider.close()
    return RunProtocol(
        ref,
        agent,
        tuple(checks),
        {check.name: check.version for check in loaded},
        tasks_from(cases),
        repeats,
        tuple(seeds),
        steps,
        options,
        chosen.to_dict(),
    )


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-1:]
    return f" (at {frames[0].filename}:{frames[0].lineno})" if frames else ""


def _select_tasks(
    available: Sequence[EvalCase], wanted: Sequence[str | EvalCase] | None, environment: str
) -> list[EvalCase]:
    if not isinstance(available, Sequence) or not all(
        isinstance(case, EvalCase) for case in available
    ):
        raise InputError(
            f"environment {environment!r}: tasks() must return a list of EvalCases, "
            f"got {type(available).__name__}"
        )
    if not wanted:
        if not available:
            raise InputError(
                f"environment {environment!r} has no built-in tasks; pass "
                "--tasks-file FILE with [[tasks]] entries"
            )
        return list(available)
    by_id = {case.identity["case_id"]: case for case in available}
    chosen = []
    for item in wanted:
        if isinstance(item, EvalCase):
            chosen.append(item)
        elif item in by_id:
            chosen.append(by_id[item])
        else:
            known = ", ".join(list(by_id)[:8]) + (" ..." if len(by_id) > 8 else "")
            raise InputError(
                f"unknown task {item!r} for environment {environment!r}"
                f"{did_you_mean(item, by_id)}; its tasks are: {known or 'none'}"
            )
    return chosen


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'full-01'?)`` for a mistyped id, or nothing: the 8 ids listed
    after it may not include the one meant (``full-1`` among 33 tasks)."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def _check_task(provider: Any, case: EvalCase, places: Mapping[str, str]) -> None:
    """``provider.check_task``, its refusal saying where in which file the task is."""
    try:
        provider.check_task(case)
    except InputError as exc:
        place = places.get(str(case.identity["case_id"]))
        if place is None:
            raise
        raise InputError(f"{place}: {exc}") from exc


def start_run(
    path: str | os.PathLike[str],
    protocol: RunProtocol,
    *,
    executor: Executor | None = None,
    progress: Progress | bool | None = None,
    run_id: str | None = None,
    episode_timeout: float | None = None,
) -> RunResult:
    """Create the run directory and run every episode of ``protocol``. An episode still
    running after ``episode_timeout`` seconds is stopped and not recorded (a resume
    retries it); the limit is kept with the run for resumes. ``progress=True`` shows the
    bar of ``onrecord run`` on stderr (plain lines where no bar is drawn); a ``Progress``
    object hears every episode; None, the default, shows nothing."""
    limit = check_timeout(episode_timeout)
    _refuse_unenforceable(executor, limit)  # before the directory is made
    refuse_async_agent_in_loop(path, protocol, executor)
    run_id = run_id or f"run-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"
    used = (executor or InProcessExecutor()).settings()  # what a resume runs with
    store = RunStore.create(path, run_id, protocol, episode_timeout=limit, executor=used)
    return _execute(store, executor, progress, limit)


def resume_run(
    path: str | os.PathLike[str],
    *,
    expect: RunProtocol | None = None,
    executor: Executor | None = None,
    progress: Progress | bool | None = None,
    episode_timeout: float | None = None,
) -> RunResult:
    """Run the episodes a run directory does not hold yet (``progress`` as in
    ``start_run``). ``expect``, when given, must
    equal the stored protocol (flags on the command line must not silently change it).
    ``episode_timeout`` replaces, for this resume, the limit the run was started with."""
    given = check_timeout(episode_timeout)
    store = RunStore.open(path)
    limit = store.episode_timeout if given is None else given
    _refuse_unenforceable(executor, limit)
    from onrecord import __version__

    if store.library_version != __version__:
        raise InputError(
            f"{store.path} was started by onrecord {store.library_version}; "
            f"this is {__version__}: resume it with that version (or regrade it)"
        )
    check_resumable(store)  # before anything runs: the checks, and importing the agent
    if expect is not None and (differences := store.protocol.differences(expect)):
        raise settings_differ(store.path, differences)
    return _execute(store, executor, progress, limit)


def _refuse_unenforceable(executor: Executor | None, limit: float | None) -> None:
    """Episodes of the in-process executor run here: refuse a limit they cannot keep."""
    if executor is None or isinstance(executor, InProcessExecutor):
        refuse_unenforceable(limit)


def _execute(
    store: RunStore,
    executor: Executor | None,
    given: Progress | bool | None,
    limit: float | None,
) -> RunResult:
    progress = progress_of(given)
    executor = executor or InProcessExecutor()
    failures: list[tuple[int, str]] = []
    with terminations_interrupt(), RunWriter(store) as writer:
        planned = store.protocol.jobs(store.run_id, episode_timeout=limit)
        order = {job.key: index for index, job in enumerate(planned)}
        jobs = [job for job in planned if job.key not in writer.done]
        before = len(writer.done)
        progress.start(store.protocol.episodes, before)
        try:
            # A Ctrl-C swallowed here (in a progress display, or a weakref callback that
            # it landed in) ran the whole run to its end: it stops after the episode
            # just recorded, as one that was not swallowed does.
            with interrupts_kept():
                for result in executor.run(jobs):
                    writer.append(result)
                    if result.error is not None:
                        message = f"{result.case_id}#{result.repeat}: {result.error}"
                        failures.append((order.get(result.key, len(order)), message))
                    progress.advance(result)
                    raise_noted_interrupt()
        except AsyncInRunningLoop as exc:
            raise InputError(stopped_in_loop(store.path)) from exc
        finally:
            progress.stop()
        recorded_now = len(writer.done) - before
        notices = tuple(writer.notices)
        # Graded under the lock: a resume removes leftover temporary files, and must not
        # take the report.json this process is about to rename into place.
        writer.sync()
        report, decision = grade_store(store)
    return RunResult(
        store,
        report,
        decision,
        store.protocol.episodes,
        recorded_now,
        # In plan order, not completion order: the summary names the first ten, which
        # must not depend on the executor or on how many workers ran the episodes.
        tuple(message for _, message in sorted(failures, key=lambda failure: failure[0])),
        notices,
        limit,
    )


def grade_store(store: RunStore) -> tuple[EvaluationReport, PolicyDecision]:
    """Build the report from the recorded trials (in plan order), decide, save both."""
    protocol = store.protocol
    report = recorded_report(store)
    decision = protocol.acceptance_policy.evaluate(report)
    save_grading(store.path, report, decision, expected=protocol.episodes)
    return report, decision


def recorded_report(store: RunStore) -> EvaluationReport:
    """The report of the trials the run's records carry (each graded when recorded), in
    plan order: what ``grade_store`` saves, and what ``show`` lists for an interrupted
    run that has no report.json yet. Saves nothing."""
    protocol = store.protocol
    order = {job.key: index for index, job in enumerate(protocol.jobs(store.run_id))}
    trials = sorted(
        ((order[record.key], Trial.from_dict(record.data["trial"])) for record in store.records()),
        key=lambda item: item[0],
    )
    return EvaluationReport.from_trials(
        (trial for _, trial in trials), lock_extra=protocol.lock_extra()
    )


def save_grading(
    directory: str | os.PathLike[str],
    report: EvaluationReport,
    decision: PolicyDecision,
    *,
    expected: int,
) -> None:
    """Write ``report.json`` and ``decision.json`` into ``directory`` (atomically)."""
    target = os.fspath(directory)
    # The old decision goes first: killed between the two renames, a resume left the new
    # report beside the old decision, which `verify` and `show` refused as an edit. A
    # report.json without decision.json reads as a grading interrupted (not as one).
    with naming_file(os.path.join(target, "decision.json")):
        if os.path.lexists(os.path.join(target, "decision.json")):
            os.unlink(os.path.join(target, "decision.json"))
            fsync_directory(Path(target))  # gone on disk before the new report replaces the old
    with naming_file(os.path.join(target, "report.json")):
        report.save_json(os.path.join(target, "report.json"))
    # Exactly what ``check_decided`` makes again: verification refuses any other field.
    body = decision_body(report, decision, expected)
    body["digest"] = content_digest(body)
    with naming_file(os.path.join(target, "decision.json")):
        atomic_write_bytes(os.path.join(target, "decision.json"), record_bytes(body))


def trials_by_key(trials: Iterable[Trial]) -> dict[tuple[str, int], Trial]:
    """Trials keyed by (case_id, repeat)."""
    return {(str(trial.case["case_id"]), trial.repeat): trial for trial in trials}
