"""What every tool-world provider shares: worlds per task, the episode, its record, its
re-grading and its trial. ``ToolWorldProvider`` (a snapshot, tools and tasks of your own)
and the remittance domain's provider are both built on it, so their episodes are
recorded the same way (``onrecord.run.tool-episode/v1``, see ``_toolworld``)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onrecord._scratch import ScratchDirectory
from onrecord.case import EvalCase
from onrecord.envkit import ToolEpisode, ToolWorld
from onrecord.episode import OutcomeCheck
from onrecord.report import Trial
from onrecord.runner._provider import EnvironmentProvider, EpisodeOutput, EpisodeSpec, SavedEpisode
from onrecord.runner._toolplay import build_act, play_tool_world, tool_world_trial
from onrecord.runner._toolworld import (
    close_reader,
    episode_from_evidence,
    rebuild_episode,
    table_layouts,
    tool_evidence,
)

__all__ = ["MAX_OPEN_WORLDS", "TaskWorld", "ToolWorldRunner"]

MAX_OPEN_WORLDS = 40
"""Task worlds a provider keeps open, the most recently used: each holds a database,
its journal, a reader and a scratch directory (about six descriptors), so a run over
hundreds of tasks kept them all open until ``ulimit -n`` ran out. A run goes task by
task (``RunProtocol.jobs``), so a world is rarely built twice."""


@dataclass(frozen=True)
class TaskWorld:
    """A world episodes of some tasks run on (reset for each), and what is fixed for it."""

    world: ToolWorld
    """The world."""
    schemas: list[dict[str, Any]]
    """Its tool schemas, as recorded (their digest is in every record)."""
    observed: list[dict[str, Any]]
    """Its tool schemas as agents are shown them (a copy an agent may not spoil)."""
    layouts: dict[str, dict[str, list[str]]]
    """Columns and key of every audited table."""

    @classmethod
    def of(cls, world: ToolWorld) -> TaskWorld:
        """The entry of ``world``."""
        return cls(world, world.tool_schemas(), world.tool_schemas(), table_layouts(world))


class ToolWorldRunner(EnvironmentProvider):
    """Episodes on tool worlds, one world per key (``_world_key``), each built once per
    process (``_build_world``) and reset to its snapshot for every episode."""

    finish_tool: str = "finish"
    """The tool whose successful call ends an episode."""

    def __init__(self) -> None:
        self._worlds: OrderedDict[str, TaskWorld] = OrderedDict()
        self._workdir: ScratchDirectory | None = None

    # -- what a subclass decides --------------------------------------------------------
    def _world_key(self, case: EvalCase) -> str:
        """Tasks with equal keys share one world."""
        raise NotImplementedError

    def _build_world(self, case: EvalCase) -> ToolWorld:
        """A new world for ``case``'s key."""
        raise NotImplementedError

    def _episode_case(self, case: EvalCase) -> EvalCase:
        """The case the world is reset with for an episode of ``case`` (raise
        ``InputError`` for a task this environment cannot run)."""
        return case

    def _close_world(self, key: str, world: ToolWorld) -> None:
        """Close the world of ``key`` (no longer kept; built again if needed)."""
        world.close()

    def _drop_oldest_world(self) -> None:
        key, entry = self._worlds.popitem(last=False)
        close_reader(entry.world.path)
        self._close_world(key, entry.world)

    # -- the provider ---------------------------------------------------------------------
    def _task_world(self, case: EvalCase) -> TaskWorld:
        key = self._world_key(case)
        if key in self._worlds:
            self._worlds.move_to_end(key)
            return self._worlds[key]
        while len(self._worlds) >= MAX_OPEN_WORLDS:
            self._drop_oldest_world()
        self._worlds[key] = entry = TaskWorld.of(self._build_world(case))
        return entry

    def run_episode(self, spec: EpisodeSpec, agent: Any) -> EpisodeOutput:
        case = self._episode_case(spec.case)
        entry = self._task_world(case)
        act = build_act(agent, spec)
        ending, error = play_tool_world(
            entry.world,
            case,
            act,
            task=case.input,
            tools=entry.observed,
            seed=spec.seed,
            run_id=spec.run_id,
            max_steps=spec.max_steps,
            finish_tool=self.finish_tool,
        )
        evidence = tool_evidence(
            entry.world,
            ending=ending,
            agent_error=error,
            tools=entry.schemas,
            layouts=entry.layouts,
        )
        events = list(entry.world.log.events)
        subject = episode_from_evidence(evidence, events, entry.world.path, entry.schemas)
        return EpisodeOutput(evidence, subject, events)

    def load_subject(self, saved: SavedEpisode) -> ToolEpisode:
        entry = self._task_world(EvalCase.from_dict(saved.evidence["task"]))
        if self._workdir is None:
            self._workdir = ScratchDirectory("toolworld")
        return rebuild_episode(
            saved.evidence,
            saved.action_log,
            entry.world.snapshot,
            entry.schemas,
            Path(self._workdir.name),
        )

    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        return tool_world_trial(subject, checks, repeat, finish_tool=self.finish_tool)

    def release(self) -> None:
        """Close every task world (built again, from its snapshot, when next needed)."""
        while self._worlds:
            self._drop_oldest_world()

    def close(self) -> None:
        self.release()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None
