"""The episode protocol: what the runner asks of an environment.

An :class:`EnvironmentProvider` turns one :class:`EpisodeSpec` (a case, a repeat, a seed)
and an agent into one :class:`EpisodeOutput` on a fresh environment. It also names its
default tasks, checks, policy and reference agents, and says how to grade saved
evidence, so that a run can be re-graded later without the agent or the environment.
Gymnasium ids, ``module:factory`` callables and the tool-world domains all plug in here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from onrecord.case import EvalCase
from onrecord.episode import OutcomeCheck
from onrecord.policy import AcceptancePolicy, CheckRequirement
from onrecord.report import Trial

__all__ = [
    "AgentContext",
    "AgentFactory",
    "AgentSetupError",
    "EnvironmentProvider",
    "EpisodeOutput",
    "EpisodeSpec",
    "SavedEpisode",
    "agent_factory",
]

AGENT_FACTORY_MARK = "__onrecord_agent_factory__"


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to run: which case, which repeat, which seed, within which limits."""

    case: EvalCase
    """The task."""
    repeat: int
    """Repeat number of the case (0-based); pairs trials across runs."""
    seed: int
    """Environment seed."""
    max_steps: int
    """Most actions the agent may attempt."""
    options: Mapping[str, Any] | None = None
    """Reset options, if the environment takes any."""
    run_id: str = "run"
    """The run this episode belongs to (written into action logs)."""


@dataclass(frozen=True)
class AgentContext:
    """What an agent factory learns about the episode it is built for."""

    case: EvalCase
    """The task."""
    repeat: int
    """Repeat number: stochastic agents derive their randomness from it and the seed."""
    seed: int
    """Environment seed."""


AgentFactory = Callable[[AgentContext], Any]
_Factory = TypeVar("_Factory", bound=AgentFactory)


def agent_factory(function: _Factory) -> _Factory:
    """Mark ``function(context) -> agent`` as a factory the runner calls once per episode,
    instead of using the object itself as the agent."""
    setattr(function, AGENT_FACTORY_MARK, True)
    return function


class AgentSetupError(Exception):
    """Building the agent for an episode failed (its factory raised, or built no agent)."""


def failing_agent(message: str, cause: BaseException | None = None) -> Callable[..., NoReturn]:
    """An agent that raises ``AgentSetupError(message)`` when first called. A factory
    that fails is the agent's own failure: handing the episode this agent records it
    like an agent that raises while acting (a rejected episode), rather than as a
    harness error that every resume would retry and that keeps the run indeterminate."""

    def failed(*args: Any) -> NoReturn:
        raise AgentSetupError(message) from cause

    return failed


@dataclass(frozen=True)
class EpisodeOutput:
    """Everything one episode left behind."""

    evidence: Mapping[str, Any]
    """The portable evidence record (with ``schema`` and ``digest``) that is saved."""
    subject: Any
    """What checks evaluate (e.g. the ``EpisodeEvidence`` itself)."""
    action_log: Sequence[Mapping[str, Any]] = ()
    """Tool calls, one event each, for tool worlds; empty otherwise."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """Side files (audit history, row diff, end-state database), by name."""


@dataclass(frozen=True)
class SavedEpisode:
    """A saved episode as the run store returns it, for re-grading and reports."""

    evidence: Mapping[str, Any]
    """The evidence record."""
    action_log: Sequence[Mapping[str, Any]]
    """Tool-call events."""
    files: Mapping[str, bytes]
    """Side files by name (verified against their digests)."""


class EnvironmentProvider:
    """Base class of environments the runner can drive. Subclasses implement
    :meth:`run_episode`, :meth:`load_subject` and :meth:`trial`; the rest have defaults.

    A provider is built in every worker process from its import path and config, so
    it must hold no state shared between episodes: each episode gets a fresh environment.
    """

    environment_id: str = "environment"
    """Version label of the environment, recorded in every episode."""

    def tasks(self) -> Sequence[EvalCase]:
        """The tasks run when the user names none."""
        return ()

    def default_checks(self) -> Sequence[OutcomeCheck]:
        """The checks run when the user names none."""
        return ()

    def default_policy(self, checks: Sequence[OutcomeCheck]) -> AcceptancePolicy:
        """The policy applied when the user gives none: every check, critical, always."""
        names = [check.name for check in checks] or ["*"]
        return AcceptancePolicy(tuple(CheckRequirement(name) for name in names))

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        """Built-in agents by name."""
        return {}

    def check_task(self, case: EvalCase) -> None:
        """Raise ``InputError`` for a task this environment cannot run (e.g. one from a
        ``--tasks-file`` without what its checks need); called for every task when a run
        is planned. Accepts every task by default."""

    def run_episode(self, spec: EpisodeSpec, agent: Any) -> EpisodeOutput:
        """Run one episode of ``agent`` on a fresh environment."""
        raise NotImplementedError

    def load_subject(self, saved: SavedEpisode) -> Any:
        """Rebuild, from saved evidence only, what checks evaluate."""
        raise NotImplementedError

    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        """Grade one episode's subject with ``checks``."""
        raise NotImplementedError

    def release(self) -> None:
        """Close what the provider holds open between episodes (files, connections),
        keeping what is costly to rebuild: called when this process moves on to another
        run, so that a process running many keeps few files open. The next episode must
        work as before. Does nothing by default."""

    def close(self) -> None:
        """Release anything the provider holds (temporary files); called once per worker."""
