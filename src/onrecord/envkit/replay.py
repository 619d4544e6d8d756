"""Replay and review: re-execute an episode's write calls, and diff any single step."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from onrecord._canonical import canonical_bytes
from onrecord.envkit.audit import AuditEvent
from onrecord.envkit.diff import StateDiff, diff_from_events
from onrecord.envkit.episode import ToolEpisode
from onrecord.envkit.world import ToolWorld
from onrecord.errors import InputError

__all__ = ["Divergence", "ReplayResult", "diff_through_step", "replay", "step_diff"]


def step_diff(episode: ToolEpisode, step: int) -> StateDiff:
    """The rows changed by one step alone."""
    step = _step_of(episode, step, "step_diff")
    return diff_from_events((e for e in episode.audit if e["step"] == step), episode.tables)


def diff_through_step(episode: ToolEpisode, step: int) -> StateDiff:
    """The state diff after ``step`` (every change up to and including it)."""
    step = _step_of(episode, step, "diff_through_step")
    return diff_from_events((e for e in episode.audit if e["step"] <= step), episode.tables)


def _step_of(episode: Any, step: Any, function: str) -> int:
    """``step`` as a step of ``episode``: a text ``"1"``, a step past the last call or a
    negative one matched no audit event, and so passed for a step that changed nothing."""
    _check_episode(episode, f"{function} episode")
    steps = episode.manifest["steps"]
    if type(step) is int and 1 <= step <= steps:
        return step
    valid = f"an int from 1 to {steps}" if steps else "none: the episode made no call"
    raise InputError(
        f"{function} step must be a step of the episode (its calls are numbered from 1; "
        f"valid steps: {valid}), got {type(step).__name__} {step!r:.80}"
    )


def _check_episode(episode: Any, where: str) -> None:
    if not isinstance(episode, ToolEpisode):
        raise InputError(
            f"{where} must be a ToolEpisode (ToolEpisode.load(directory) or the one "
            f"save_episode returns), got {type(episode).__name__} {episode!r:.80}"
        )


@dataclass(frozen=True)
class Divergence:
    """The first step at which the replay differs from the recording."""

    step: int
    """Step number."""
    reason: str
    """What differs, as a sentence."""
    recorded: StateDiff = field(default_factory=dict)
    """What that step changed in the recording."""
    replayed: StateDiff = field(default_factory=dict)
    """What it changed in the replay."""


@dataclass(frozen=True)
class ReplayResult:
    """Outcome of :func:`replay`."""

    matches: bool
    """True when every replayed step and the end-state digest agree."""
    recorded_digest: str
    """End-state digest in the episode manifest."""
    replayed_digest: str
    """End-state digest after the replay."""
    replayed_calls: int
    """How many write calls were re-executed."""
    divergence: Divergence | None
    """The first differing step, if any."""


def replay(world: ToolWorld, episode: ToolEpisode) -> ReplayResult:
    """Reset ``world`` with the episode's seed, re-execute its write calls at their
    original steps, and compare step by step, then by end-state digest."""
    if not isinstance(world, ToolWorld):
        raise InputError(
            "replay world must be a ToolWorld built from the episode's snapshot, got "
            f"{type(world).__name__} {world!r:.80}"
        )
    _check_episode(episode, "replay episode")
    recorded_snapshot = episode.manifest["snapshot"]["digest"]
    if world.snapshot.digest != recorded_snapshot:
        raise InputError(
            f"the world starts from snapshot {world.snapshot.digest[:12]}…, but "
            f"the episode started from {recorded_snapshot[:12]}…; replay it in "
            "a world built from the same snapshot"
        )
    world.reset(seed=episode.manifest["seed"], run_id=episode.manifest["run_id"])
    writes = set(episode.manifest["writes"])
    statuses: dict[int, tuple[str, str]] = {}
    calls = 0
    for event in episode.actions:
        if _outcome(event) == "rejected/episode_ended" and not world.ended:
            world.end_episode()  # the calls made after the end are refused again
        if event["tool"] not in writes:
            continue
        world.step = event["step"] - 1
        again = world.call(event["tool"], event["arguments"])
        statuses[event["step"]] = (_outcome(event), _outcome(again))
        calls += 1
    digest = world.state_digest()
    divergence = _first_divergence(episode, world.audit_history(), statuses)
    if divergence is None and digest != episode.manifest["end_state_digest"]:
        divergence = Divergence(
            world.step,
            "every step matched, but the end-state digest "
            "differs (a change outside the audited tables?)",
        )
    return ReplayResult(
        divergence is None, episode.manifest["end_state_digest"], digest, calls, divergence
    )


def _outcome(event: Mapping[str, Any]) -> str:
    """``status`` or ``status/error type``: a call rejected for another reason than when
    it was recorded is a divergence too."""
    error = event.get("error")
    kind = error.get("type") if isinstance(error, Mapping) else None
    return event["status"] if kind is None else f"{event['status']}/{kind}"


def _by_step(events: Iterable[AuditEvent]) -> dict[int, list[AuditEvent]]:
    grouped: dict[int, list[AuditEvent]] = defaultdict(list)
    for event in events:
        grouped[event["step"]].append(event)
    return grouped


def _signature(events: list[AuditEvent]) -> bytes:
    return canonical_bytes([[e["table"], e["op"], e["key"], e["old"], e["new"]] for e in events])


def _first_divergence(
    episode: ToolEpisode, replayed: list[AuditEvent], statuses: dict[int, tuple[str, str]]
) -> Divergence | None:
    recorded_steps, replayed_steps = _by_step(episode.audit), _by_step(replayed)
    for step in sorted(set(recorded_steps) | set(replayed_steps) | set(statuses)):
        before, after = recorded_steps.get(step, []), replayed_steps.get(step, [])
        if _signature(before) != _signature(after):
            return Divergence(
                step,
                f"step {step} changed different rows in the replay",
                _diff(episode, before),
                _diff(episode, after),
            )
        was, now = statuses.get(step, ("ok", "ok"))
        if was != now:
            return Divergence(
                step,
                f"step {step} was {was} when recorded but {now} in the replay",
                _diff(episode, before),
                _diff(episode, after),
            )
    return None


def _diff(episode: ToolEpisode, events: list[AuditEvent]) -> StateDiff:
    return diff_from_events(events, episode.tables)
