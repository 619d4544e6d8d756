"""Episode jobs: the picklable unit of work, and the function every worker runs.

A job is ``(run context, case, repeat, seed)``; the context (environment, agent, checks,
limits) is shared by every job of a run, so a pickled chunk carries it once. The worker
runs the episode, grades it, and returns the exact bytes the run store appends, so the
parent does no per-episode serialization.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onrecord._async import AsyncInRunningLoop
from onrecord._canonical import canonical_bytes, content_digest
from onrecord._exceptions import describe
from onrecord.case import EvalCase
from onrecord.episode import EPISODE_SCHEMA, OutcomeCheck
from onrecord.errors import InputError
from onrecord.runner._envref import EnvironmentRef
from onrecord.runner._provider import EnvironmentProvider, EpisodeOutput, EpisodeSpec
from onrecord.runner._provider_cache import ProviderCache, Resolved
from onrecord.runner._sealed import (
    CapturedEvidence,
    captured_fingerprint,
    events_bytes,
    evidence_fragment,
    record_line,
)
from onrecord.runner._timeout import TimedOut, marker_key, run_limited

__all__ = [
    "EPISODE_RECORD_SCHEMA",
    "EpisodeJob",
    "JobResult",
    "RunContext",
    "fingerprint",
    "run_chunk",
    "run_job",
]

EPISODE_RECORD_SCHEMA = "onrecord.run.episode/v1"
# Timing fields and the run id differ between two executions of the same episode; the
# fingerprint leaves them out so that executors (and runs) can be compared.
_VOLATILE = frozenset({"wall_time_ns", "ts", "duration_ns", "digest", "run_id"})
_FLAT_SCHEMAS = frozenset({"onrecord.run.tool-episode/v1"})


@dataclass(frozen=True)
class RunContext:
    """What every episode of a run shares."""

    run_id: str
    """Run identifier (written into action logs)."""
    environment: EnvironmentRef
    """How to build the environment."""
    agent: str
    """Reference agent name or ``module:callable``."""
    checks: tuple[str, ...]
    """``"default"`` and/or import paths of checks."""
    check_versions: Mapping[str, str]
    """The check versions the run was started with; a worker refuses others."""
    max_steps: int
    """Most actions per episode."""
    options: Mapping[str, Any] | None = None
    """Reset options."""
    episode_timeout: float | None = None
    """Seconds an episode (run and grade) may take before it is stopped and not recorded
    (None: no limit). Not part of the protocol: it never changes a recorded episode."""


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to run and grade."""

    context: RunContext
    """Shared settings."""
    case: Mapping[str, Any]
    """``EvalCase.to_dict()`` of the task."""
    repeat: int
    """Repeat number."""
    seed: int
    """Environment seed."""

    @property
    def key(self) -> tuple[str, int]:
        """(case_id, repeat): unique within a run."""
        return (str(self.case["case_id"]), self.repeat)


@dataclass(frozen=True)
class JobResult:
    """What a worker sends back: ready-to-append bytes, or the error that stopped it."""

    case_id: str
    """Case id."""
    repeat: int
    """Repeat number."""
    record: bytes = b""
    """The episode record line (canonical JSON + newline); empty on error."""
    actions: bytes = b""
    """The action-log block (JSONL)."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """Side files by sha256."""
    outcome: str = "incomplete"
    """pass / fail / incomplete (for the progress display)."""
    error: str | None = None
    """Why the episode could not be recorded (a harness failure, not the agent's)."""

    @property
    def key(self) -> tuple[str, int]:
        """(case_id, repeat)."""
        return (self.case_id, self.repeat)


MAX_KEPT_PROVIDERS = 8
"""Providers a process keeps, the most recently used, for later runs of the same
environment, agent and checks (``_provider_cache``: all but the one in use released)."""
_CACHE = ProviderCache(MAX_KEPT_PROVIDERS)


def _resolved(context: RunContext) -> Resolved:
    """The provider, agent and checks of ``context``: built once per process (the
    provider may hold an expensive template, a snapshot database each episode copies)."""
    return _CACHE.get(_cache_key(context), lambda: _build(context))


def _build(context: RunContext) -> Resolved:
    # Here, not at the top: the registry imports gymnasium, and ``RunStore`` (which
    # reads run directories for ``onrecord verify`` and ``show``) imports this module.
    from onrecord.runner._agents_and_checks import load_agent, load_checks
    from onrecord.runner._registry import build_provider

    provider = build_provider(context.environment)
    try:
        checks = load_checks(provider, context.checks)
        versions = {check.name: check.version for check in checks}
        if versions != dict(context.check_versions):
            raise InputError(
                f"the checks now have versions {versions}, but the run was "
                f"started with {dict(context.check_versions)}; finish it with "
                "the original checks, then use `onrecord regrade`"
            )
        return (provider, load_agent(provider, context.agent), checks)
    except BaseException:
        provider.close()  # never kept: its worlds would stay open
        raise


def _cache_key(context: RunContext) -> str:
    return content_digest(
        {
            "environment": context.environment.to_dict(),
            "agent": context.agent,
            "checks": list(context.checks),
        }
    )


def run_job(job: EpisodeJob) -> JobResult:
    """Run, grade and serialize one episode. Harness failures come back as ``error``, and
    so does an episode stopped by the run's ``episode_timeout``."""
    key = _cache_key(job.context)
    with _CACHE.tidied(key):  # other runs' providers released outside the limit
        return _limited(job, key)


def _limited(job: EpisodeJob, key: str) -> JobResult:
    limit = job.context.episode_timeout
    if limit is None:
        return _run_job(job, key)
    case_id, repeat = job.key
    outcome = run_limited(
        limit, lambda: _run_job(job, key), marker_key(job.context.run_id, case_id, repeat)
    )
    if isinstance(outcome, TimedOut):
        # Stopped anywhere, perhaps mid-reset of a reused tool world: the next episode
        # gets a provider (and agent) built afresh.
        _CACHE.forget(key)
        return JobResult(case_id, repeat, error=outcome.message)
    return outcome


def _run_job(job: EpisodeJob, key: str) -> JobResult:
    case_id, repeat = job.key
    context = job.context
    try:
        with _CACHE.using(key, lambda: _build(context)) as resolved:
            return _episode(job, *resolved)
    except AsyncInRunningLoop:  # every episode here would meet it: the run stops on it
        raise
    # SystemExit too: an agent calling sys.exit() must not end the whole run (with the
    # agent's exit code, possibly 0 = "accept"); only Ctrl-C stops the run.
    except (Exception, SystemExit) as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1:]
        place = f" (at {where[0].filename}:{where[0].lineno})" if where else ""
        return JobResult(case_id, repeat, error=f"{describe(exc)}{place}")


def _episode(
    job: EpisodeJob, provider: EnvironmentProvider, agent: Any, checks: list[OutcomeCheck]
) -> JobResult:
    spec = EpisodeSpec(
        EvalCase.from_dict(job.case),
        job.repeat,
        job.seed,
        job.context.max_steps,
        job.context.options,
        job.context.run_id,
    )
    output = provider.run_episode(spec, agent)
    trial = provider.trial(output.subject, checks, job.repeat)
    return _result(job, output, trial.to_dict(), trial.outcome)


def run_chunk(jobs: Sequence[EpisodeJob]) -> list[JobResult]:
    """Run several jobs in order (the unit sent to a pool worker or a Ray task)."""
    return [run_job(job) for job in jobs]


def _result(
    job: EpisodeJob, output: EpisodeOutput, trial: dict[str, Any], outcome: str
) -> JobResult:
    actions = b"".join(canonical_bytes(event) + b"\n" for event in output.action_log)
    files = {hashlib.sha256(data).hexdigest(): data for data in output.files.values()}
    record = {
        "schema": EPISODE_RECORD_SCHEMA,
        "run_id": job.context.run_id,
        "case_id": job.key[0],
        "repeat": job.repeat,
        "seed": job.seed,
        # A captured episode's canonical bytes, spliced in (``_sealed``): the record is
        # serialized and hashed once, the evidence never parsed or written again.
        "evidence": evidence_fragment(output.evidence),
        "trial": trial,
        "fingerprint": fingerprint(output.evidence, output.action_log),
        "action_log": {
            "events": len(output.action_log),
            "bytes": len(actions),
            "sha256": hashlib.sha256(actions).hexdigest(),
        },
        "files": {
            name: hashlib.sha256(data).hexdigest() for name, data in sorted(output.files.items())
        },
    }
    return JobResult(job.key[0], job.repeat, record_line(record), actions, files, outcome)


def fingerprint(evidence: Mapping[str, Any], action_log: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of what happened, without timings or run ids: equal for two executions of
    the same deterministic episode, whichever process or machine ran them."""
    if type(evidence) is CapturedEvidence:  # the same bytes, from the spliced columns
        return captured_fingerprint(evidence, "wall_time_ns", events_bytes(action_log, _VOLATILE))
    schema = evidence.get("schema")
    if schema == EPISODE_SCHEMA:
        core: Any = {key: value for key, value in evidence.items() if key != "digest"}
        core["steps"] = {
            key: value for key, value in evidence["steps"].items() if key != "wall_time_ns"
        }
    elif schema in _FLAT_SCHEMAS:  # timings live only in the action log
        core = {key: value for key, value in evidence.items() if key not in _VOLATILE}
    else:
        core = _without_volatile(evidence)
    events = [
        {key: value for key, value in event.items() if key not in _VOLATILE} for event in action_log
    ]
    return hashlib.sha256(canonical_bytes([core, events])).hexdigest()


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_volatile(item) for key, item in value.items() if key not in _VOLATILE}
    if isinstance(value, list):
        return [_without_volatile(item) for item in value]
    return value


class Progress:
    """Receives progress events; the default does nothing. The CLI draws a bar,
    ``ConsoleProgress``, which ``progress=True`` passes to the run. (Here,
    beside ``JobResult``, not in ``_run``: the CLI's progress module imports it, and
    ``_run`` imports every environment's code, which reading a record must not.)"""

    def start(self, total: int, done: int) -> None:
        """``total`` episodes in the run, ``done`` of them already recorded."""

    def advance(self, result: JobResult) -> None:
        """One episode finished (recorded, or failed to record)."""

    def stop(self) -> None:
        """The run loop ended."""


def progress_of(progress: Progress | bool | None) -> Progress:
    """What ``progress=`` of ``start_run``, ``resume_run`` and ``regrade_run`` means:
    True the bar of ``onrecord run`` on stderr, None or False nothing (the default: a
    library that prints unasked garbles its callers' own output), else the object given."""
    if progress is True:
        # Imported here: rich is not loaded by a run that shows nothing.
        from onrecord._progress import ConsoleProgress

        return ConsoleProgress()
    if progress is None or progress is False:
        return Progress()
    return progress
