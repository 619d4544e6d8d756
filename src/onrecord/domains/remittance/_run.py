"""Running agents on remittance tasks: one environment per task (snapshot + tool world),
episodes saved with the kit, trials with coverage, reports and decisions per agent.

An agent is any callable from observation to tool call. The observation is
``{"task", "tools", "step", "last"}``: the brief, the tools' JSON schemas, the step
number and the previous call's ``{"tool", "status", "result", "error"}`` (``None`` at
first). A tool call is ``{"tool": name, "arguments": {...}}``; anything else is logged
as a rejected call. The episode ends at a successful ``finish``, at ``max_steps`` or when
the agent raises.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onrecord import EvalCase
from onrecord.domains.remittance._generator import insert_rows
from onrecord.domains.remittance._scenarios import build_scenario
from onrecord.domains.remittance._schema import SCHEMA
from onrecord.domains.remittance._tasks import RemittanceTask, check_size
from onrecord.domains.remittance._tools import HIDDEN_TABLES, TOOLS
from onrecord.envkit import Snapshot, ToolEpisode, ToolWorld, save_episode
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.report import Trial
from onrecord.runner._toolplay import play_tool_world, tool_world_trial

if TYPE_CHECKING:  # imported by gym_env: running remittance agents needs no Gymnasium
    import gymnasium as gym

__all__ = [
    "ENVIRONMENT_ID",
    "Agent",
    "EpisodeRun",
    "PlayedEpisode",
    "RemittanceEnvironment",
    "remittance_trial",
    "task_case",
]

Agent = Callable[[Mapping[str, Any]], Any]
"""Observation in, tool call out."""
MAX_STEPS = 60
ENVIRONMENT_ID = "onrecord.domains.remittance/v3"
"""The environment's version. Bump it whenever what a tool does changes without its
schema, data or the task changing (those are recorded by digest already): it is part of
every task's snapshot name, so it enters every episode and every trial's settings, and
``compare`` refuses to pair runs of two versions. v2: free text that shows no visible
character (zero-width or blank characters only) is refused. v3: ``set_claim_status`` to
the status a claim already has writes nothing; ``post_allocation`` refuses more than the
remittance line has left to apply (what it paid less what is applied from it) and
``post_adjustment`` an adjustment the line's 835 does not carry, or more of it than it
carries (one posted in full too: both refusals list the line's 835 adjustments); a
posting that leaves a claim line with a credit balance says so in its reply;
``request_approval`` asks for exactly the line's payment (another amount, or a line that
sends no money, is refused), once: a second request while one for the line is pending is
refused, naming it; ``reverse_allocation`` citing a line that pays undoes only an
allocation of that line's own money (a payer takes money back on a recoupment line), and
citing a recoupment line only an allocation on the claim line it names, up to what it has
left to take back; refusals name what to do next (an unknown allocation or case id points
to ``read_claim``, not to a search that does not exist)."""


@dataclass(frozen=True)
class PlayedEpisode:
    """How an episode just played ended; its end state, audit history and diff stay in
    ``RemittanceEnvironment.world`` until the next ``play`` or reset."""

    ending: str
    """``finished`` (a successful ``finish``), ``agent_error`` or ``step_limit``."""
    agent_error: str | None
    """``Type: message`` when the agent raised, else ``None``."""
    actions: list[dict[str, Any]]
    """The action log's events, in order (the world's own list: do not change it)."""


@dataclass(frozen=True)
class EpisodeRun:
    """A saved episode and how the agent stopped."""

    episode: ToolEpisode
    """The verified saved episode (what checks read)."""
    agent_error: str | None
    """``Type: message`` when the agent raised, else ``None``."""


class RemittanceEnvironment:
    """One task's start snapshot and tool world; reset for every episode."""

    def __init__(self, task: RemittanceTask, *, path: str | os.PathLike[str] | None = None) -> None:
        # Also here, not only in load_tasks: a task's size may be replaced in code (as
        # the runner's ``size`` setting does), and a huge one would build for hours.
        check_size(task.size, f"task {task.task_id!r}: size")
        generator, self.expectation = build_scenario(task)
        self.task = task
        self.snapshot = Snapshot.build(
            f"{ENVIRONMENT_ID}/{task.task_id}",
            SCHEMA,
            lambda conn, _rng: insert_rows(generator, conn),
            seed=task.seed,
        )
        self._path = path
        self._world: ToolWorld | None = None
        self._schemas = self.world.tool_schemas()
        self.brief = _brief(self.expectation)
        self.case = _case(task, self.brief, self.expectation)

    @property
    def world(self) -> ToolWorld:
        """The task's tool world, reset for every episode; after ``close``, a new one
        (from the same snapshot) is opened when next asked for."""
        if self._world is None:
            self._world = ToolWorld(self.snapshot, TOOLS, hidden=HIDDEN_TABLES, path=self._path)
        return self._world

    def play(
        self,
        agent: Agent,
        *,
        seed: int = 0,
        run_id: str | None = None,
        max_steps: int = MAX_STEPS,
    ) -> PlayedEpisode:
        """Reset, let ``agent`` act until it finishes, raises or runs out of steps, and
        keep the episode in memory (``run`` saves it; the runner records it). The ending
        is declared to the world (``end_episode``), as the runner's loop does."""
        # Refused as ToolWorldProvider(max_steps=...) refuses it: "5" failed deep in the
        # loop, 0 or -1 played no step, and 2.5 played three.
        if type(max_steps) is not int or max_steps < 1:
            raise InputError(
                f"play max_steps must be a positive int (the most tool calls the agent "
                f"may make), got {max_steps!r}"
            )
        ending, error = play_tool_world(
            self.world,
            self.case,
            agent,
            task=self.brief,
            tools=self._schemas,
            seed=seed,
            run_id=run_id,
            max_steps=max_steps,
        )
        return PlayedEpisode(ending, error, self.world.log.events)

    def run(
        self,
        agent: Agent,
        directory: str | os.PathLike[str],
        *,
        seed: int = 0,
        run_id: str | None = None,
        max_steps: int = MAX_STEPS,
    ) -> EpisodeRun:
        """``play``, then save the episode to ``directory`` (with the ending ``play``
        declared: the manifest's ``ending``/``ending_error`` are the runner's)."""
        played = self.play(agent, seed=seed, run_id=run_id, max_steps=max_steps)
        return EpisodeRun(save_episode(self.world, Path(directory)), played.agent_error)

    def gym_env(self) -> gym.Env[Any, Any]:
        """The Gymnasium face of this task: JSON text actions ``{"tool", "arguments"}`` and
        observations; a successful ``finish`` terminates. Save the episode afterwards with
        ``envkit.save_episode(env.world, directory)`` to grade it."""
        from onrecord.envkit.gym import ToolWorldEnv

        return ToolWorldEnv(self.world, case=self.case)

    def close(self) -> None:
        """Close the world (and its temporary database), if open."""
        world, self._world = self._world, None
        if world is not None:
            world.close()


def task_case(task: RemittanceTask) -> EvalCase:
    """``RemittanceEnvironment(task).case`` without building the snapshot and world:
    what planning a run needs. The expectation is kept per task for the process, since
    planning every reference agent (``onrecord demo``) asks for the same tasks once per
    agent; each call returns a new case, a detached copy of it."""
    key = repr(task)  # a task holds dicts (unhashable); equal reprs, equal scenarios
    if key not in _EXPECTATIONS:
        if len(_EXPECTATIONS) >= _KEPT_EXPECTATIONS:
            del _EXPECTATIONS[next(iter(_EXPECTATIONS))]  # the oldest
        _EXPECTATIONS[key] = build_scenario(task)[1]
    expectation = _EXPECTATIONS[key]
    return _case(task, _brief(expectation), expectation)


_KEPT_EXPECTATIONS = 1024  # a few KB each; far more than any task file holds
_EXPECTATIONS: dict[str, Mapping[str, Any]] = {}


def _brief(expectation: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "instruction": (
            f"Post remittance {expectation['remittance_id']} from "
            f"{expectation['payer_id']} (payment "
            f"{expectation['payment_number']}) against the clinic's "
            "claims. Postings above "
            f"{expectation['threshold_cents'] / 100:,.2f} need a "
            "supervisor's approval first. Finish with a short message."
        ),
        "remittance_id": expectation["remittance_id"],
        "today": expectation["today"],
        "threshold_cents": expectation["threshold_cents"],
    }


def _case(task: RemittanceTask, brief: Any, expectation: Mapping[str, Any]) -> EvalCase:
    return EvalCase(
        brief,
        expectation,
        case_id=task.task_id,
        source_id=f"onrecord.domains.remittance/tasks.toml#{task.task_id}",
        metadata={"kind": task.kind, "title": task.title, "size": task.size, "seed": task.seed},
    )


def remittance_trial(
    episode: ToolEpisode, checks: Sequence[OutcomeCheck], repeat: int = 0
) -> Trial:
    """The kit's trial plus a coverage issue when the log does not end with a successful
    ``finish`` (the agent gave up or hit the step limit; a crash is the kit's issue, which
    names the exception), or when the agent tried a write after it."""
    return tool_world_trial(episode, checks, repeat)
