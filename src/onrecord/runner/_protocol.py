"""The run protocol: everything that defines which episodes a run holds and how they
are graded. It is fixed when the run starts and checked again on every resume."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from onrecord._canonical import to_portable
from onrecord.case import EvalCase
from onrecord.errors import InputError, SchemaError
from onrecord.policy import AcceptancePolicy
from onrecord.runner._envref import EnvironmentRef
from onrecord.runner._job import EpisodeJob, RunContext
from onrecord.runner._protocol_fields import checked_protocol, protocol_field, shortened

__all__ = ["MAX_EPISODES", "MAX_SEED", "RunProtocol", "differences_in", "settings_differ"]

MAX_SEED = 2**64 - 1
"""Largest seed (seeds are stored as JSON integers, exact up to 64 bits)."""
MAX_EPISODES = 10_000_000
"""Most episodes one run may hold: the plan of every episode is held in memory."""
_MAX_INT = 2**63 - 1


@dataclass(frozen=True)
class RunProtocol:
    """Environment, agent, checks, tasks × seeds × repeats, limits and policy."""

    environment: EnvironmentRef
    """How to build the environment."""
    agent: str
    """Reference agent name or ``module:callable``."""
    checks: tuple[str, ...]
    """``"default"`` and/or import paths of checks."""
    check_versions: Mapping[str, str]
    """Name → version of every check, as resolved when the run started."""
    tasks: tuple[Mapping[str, Any], ...]
    """The cases, as ``EvalCase.to_dict()``."""
    repeats: int = 1
    """Repeats per (task, seed)."""
    seeds: tuple[int, ...] = (0,)
    """Environment seeds; each task runs ``repeats`` times per seed."""
    max_steps: int = 1000
    """Most actions per episode."""
    options: Mapping[str, Any] | None = None
    """Reset options."""
    policy: Mapping[str, Any] = field(default_factory=dict)
    """``AcceptancePolicy.to_dict()`` of the policy that decides the run."""

    def __post_init__(self) -> None:
        if type(self.repeats) is not int or self.repeats < 1:
            raise InputError(f"repeats must be a positive integer, got {self.repeats!r}")
        if self.repeats > MAX_EPISODES:
            raise InputError(
                f"repeats must be at most {MAX_EPISODES:,}, got {self.repeats!r}: a run "
                f"holds at most {MAX_EPISODES:,} episodes; split it over several runs"
            )
        if not self.seeds:
            raise InputError("seeds is empty; a run needs at least one seed (the default is 0)")
        if not all(type(s) is int and 0 <= s <= MAX_SEED for s in self.seeds):
            raise InputError(
                f"seeds must be integers from 0 to 2**64 - 1, got {_short(list(self.seeds))}"
            )
        if len(set(self.seeds)) != len(self.seeds):
            raise InputError(
                f"seeds must not repeat, got {_short(list(self.seeds))}; use repeats "
                "to run a seed several times"
            )
        if type(self.max_steps) is not int or not 1 <= self.max_steps <= _MAX_INT:
            raise InputError(
                f"max_steps must be a positive integer below 2**63, got {self.max_steps!r}"
            )
        if not self.tasks:
            raise InputError("a run needs at least one task")
        if self.options is not None:
            # Episodes get the options as run.json stores them; a value JSON cannot hold
            # fails here, before the run directory is made.
            if not isinstance(self.options, Mapping):
                raise InputError(f"options must be a table, got {self.options!r}")
            object.__setattr__(self, "options", to_portable(dict(self.options), "options"))
        if self.episodes > MAX_EPISODES:
            raise InputError(
                f"the run would hold {self.episodes:,} episodes ({len(self.tasks)} tasks × "
                f"{len(self.seeds)} seeds × {self.repeats} repeats); a run holds at most "
                f"{MAX_EPISODES:,}: split it over several runs"
            )
        counts = Counter(task["case_id"] for task in self.tasks)
        if len(counts) != len(self.tasks):
            raise InputError(
                f"task ids must be unique; repeated: "
                f"{sorted(i for i, n in counts.items() if n > 1)[:5]}"
            )

    @property
    def episodes(self) -> int:
        """Number of episodes the run holds when complete."""
        return len(self.tasks) * len(self.seeds) * self.repeats

    @property
    def acceptance_policy(self) -> AcceptancePolicy:
        """The policy object."""
        return AcceptancePolicy.from_dict(self.policy)

    def context(self, run_id: str, *, episode_timeout: float | None = None) -> RunContext:
        """The settings every job shares (the time limit is the run's, not the protocol's:
        it never changes what a recorded episode holds)."""
        return RunContext(
            run_id,
            self.environment,
            self.agent,
            self.checks,
            dict(self.check_versions),
            self.max_steps,
            self.options,
            episode_timeout,
        )

    def jobs(self, run_id: str, *, episode_timeout: float | None = None) -> list[EpisodeJob]:
        """Every episode in a fixed order: task, then seed, then repeat. A case's repeat
        number counts across seeds: seed index × repeats + repeat."""
        context = self.context(run_id, episode_timeout=episode_timeout)
        return [
            EpisodeJob(context, task, index * self.repeats + repeat, seed)
            for task in self.tasks
            for index, seed in enumerate(self.seeds)
            for repeat in range(self.repeats)
        ]

    @cached_property
    def _identities(self) -> dict[str, dict[str, Any]]:
        # Case id → the identity a trial of that task is graded under.
        return {
            str(task["case_id"]): {
                "case_id": task["case_id"],
                "source_id": task.get("source_id"),
                "content_digest": task.get("content_digest"),
            }
            for task in self.tasks
        }

    def unplanned(self, record: Mapping[str, Any]) -> str | None:
        """Why an episode record is not one of the episodes this protocol plans (None
        when it is): its task, its repeat, the seed planned for that repeat, and the
        task and repeat its graded trial names. A record with a valid digest can still
        be one the plan never made (copied from another run, or edited and re-digested):
        counted, it would make a run missing planned episodes look complete."""
        case_id, repeat, seed = record.get("case_id"), record.get("repeat"), record.get("seed")
        identity = self._identities.get(case_id) if isinstance(case_id, str) else None
        if identity is None:
            return f"its task {case_id!r} is not one of the run's tasks"
        count = len(self.seeds) * self.repeats
        if type(repeat) is not int or not 0 <= repeat < count:
            return f"its repeat {repeat!r} is not one of the run's repeats 0 to {count - 1}"
        planned = self.seeds[repeat // self.repeats]
        if type(seed) is not int or seed != planned:
            return f"its seed is {seed!r}, but the run plans seed {planned} for repeat {repeat}"
        trial = record.get("trial")
        if (
            not isinstance(trial, Mapping)
            or trial.get("case") != identity
            or trial.get("repeat") != repeat
        ):
            return "its graded trial is the trial of another task or repeat"
        return None

    def lock_extra(self) -> dict[str, Any]:
        """What enters every report lock of this run besides checks, settings and cases:
        the environment and its config, the seeds, the step limit and the reset options,
        all of which change results (never the agent, which is what runs compare). Trials
        of tool worlds record none of the last three in their own settings."""
        return {
            "run": {
                "environment": self.environment.to_dict(),
                "seeds": list(self.seeds),
                "max_steps": self.max_steps,
                "options": None if self.options is None else dict(self.options),
            }
        }

    def to_dict(self) -> dict[str, Any]:
        """Portable form."""
        portable: dict[str, Any] = to_portable(
            {
                "environment": self.environment.to_dict(),
                "agent": self.agent,
                "checks": list(self.checks),
                "check_versions": dict(self.check_versions),
                "tasks": [dict(task) for task in self.tasks],
                "repeats": self.repeats,
                "seeds": list(self.seeds),
                "max_steps": self.max_steps,
                "options": None if self.options is None else dict(self.options),
                "policy": dict(self.policy),
            },
            "$.protocol",
        )
        return portable

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunProtocol:
        """Inverse of ``to_dict``; every field's type and every task's content digest
        are re-checked (SchemaError naming the field, ``protocol.check_versions``)."""
        data = checked_protocol(data)
        try:
            return cls(
                EnvironmentRef.from_dict(data["environment"]),
                data["agent"],
                tuple(data["checks"]),
                dict(data["check_versions"]),
                tuple(data["tasks"]),
                data["repeats"],
                tuple(data["seeds"]),
                data["max_steps"],
                data.get("options"),
                dict(data["policy"]),
            )
        except InputError as exc:  # a value __post_init__ refuses (repeats: 0)
            raise SchemaError(protocol_field(str(exc))) from exc

    def differences(self, other: RunProtocol) -> list[str]:
        """Fields in which ``other`` differs from this protocol."""
        return _differences("", self.to_dict(), other.to_dict())


def differences_in(name: str, mine: Any, theirs: Any) -> list[str]:
    """How the setting ``name`` differs, key by key (``name.key: the run has ...``)."""
    return _differences(name, mine, theirs) if mine != theirs else []


def settings_differ(path: Any, differences: Sequence[str]) -> InputError:
    """The refusal of a resume whose settings differ from its run's, each one named."""
    return InputError(
        f"the settings differ from the run in {path}:\n  "
        + "\n  ".join(differences)
        + "\nresume without them, or start a new run in another --out directory"
    )


_ABSENT = object()
_SHOWN = 10
"""Most per-task differences listed (every task of a big file may have changed)."""


def _differences(prefix: str, mine: Any, theirs: Any) -> list[str]:
    # Tables are compared key by key: a long value cut short to "{'name': ..." would
    # hide the one setting (e.g. environment.config.size) that differs.
    if isinstance(mine, dict) and isinstance(theirs, dict):
        found = []
        for key in [*mine, *(key for key in theirs if key not in mine)]:
            a, b = mine.get(key, _ABSENT), theirs.get(key, _ABSENT)
            if a != b:
                found += _differences(f"{prefix}.{key}" if prefix else key, a, b)
        return found
    if prefix == "tasks" and isinstance(mine, list) and isinstance(theirs, list):
        if _ids(mine) == _ids(theirs):
            # The same ids: both lists cut short to "[{'case_id': 't0', ..." read as
            # equal, hiding the one task of thousands whose input changed.
            found = [line for a, b in zip(mine, theirs, strict=True) for line in _task(a, b)]
            more = len(found) - _SHOWN
            return found[:_SHOWN] + ([f"tasks: {more} more differences"] if more > 0 else [])
        mine, theirs = _ids(mine), _ids(theirs)  # the ids say what differs
    return [f"{prefix}: the run has {_shown(mine)}, the new settings say {_shown(theirs)}"]


def _task(mine: Any, theirs: Any) -> list[str]:
    """How one task (same id) differs; its content digest only when nothing else says
    it (the digest follows from the fields that changed)."""
    prefix = f"tasks[{_short(_ids([mine])[0])}]"
    if not (isinstance(mine, dict) and isinstance(theirs, dict)):
        return _differences(prefix, mine, theirs) if mine != theirs else []
    digest = "content_digest"
    fields = _differences(prefix, _without(mine, digest), _without(theirs, digest))
    return fields or _differences(prefix, mine, theirs)


def _without(table: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != key}


def _ids(tasks: Any) -> tuple[Any, ...]:
    return tuple(task.get("case_id") if isinstance(task, dict) else task for task in tasks)


def _shown(value: Any) -> str:
    return "nothing" if value is _ABSENT else _short(value)


def _short(value: Any) -> str:
    return shortened(value, 80)


def tasks_from(cases: Sequence[EvalCase]) -> tuple[dict[str, Any], ...]:
    """Case dicts for a protocol."""
    return tuple(case.to_dict() for case in cases)
