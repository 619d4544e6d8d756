"""Closed loop: does the model help a planner act in fresh real environments?

Every model runs with the same planner and budget in fresh environments with paired
seeds (the environment seed and the planner's tie-break generator are the same for
every model). Each run is captured as ordinary episode evidence; a small decision record
keeps what the planner predicted at each step and references the episode by digest, so
the summary can be recomputed offline from saved files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from onrecord._canonical import (
    atomic_write_bytes,
    canonical_bytes,
    content_digest,
    load_record_bytes,
)
from onrecord._user_errors import raised_record
from onrecord.case import EvalCase
from onrecord.dynamics._closed_loop_schema import verify_run_record
from onrecord.dynamics._evidence_schema import CLOSED_LOOP_SCHEMA
from onrecord.episode._verify_files import read_regular
from onrecord.errors import ConsistencyError, DigestMismatch, InputError, SchemaError

# Running a closed loop needs gymnasium (``_envs``, ``_references``); reading its records
# (``load_runs``, ``CLOSED_LOOP_SCHEMA`` for ``onrecord verify`` and ``show``) does not.
if TYPE_CHECKING:
    from onrecord.dynamics._envs import Simulator
    from onrecord.dynamics._planners import Planner
    from onrecord.dynamics._protocol import WorldModel

__all__ = ["CLOSED_LOOP_SCHEMA", "ClosedLoopRun", "load_runs", "run_closed_loop", "save_runs"]


@dataclass(frozen=True)
class ClosedLoopRun:
    """One model, planner and seed: the decisions record and its episode."""

    record: dict[str, Any]
    """Portable: schema, model_id, budget, seed, episode digest, predicted returns and
    ``model_error`` (``{"step", "type", "message"}`` when planning raised, else None)."""
    episode: Any
    """The EpisodeEvidence of the run (may be None after loading only the records)."""

    @property
    def digest(self) -> str:
        """Digest of the decision record."""
        return str(self.record["digest"])

    @property
    def failed(self) -> bool:
        """True when the run did not end on its own terms: the model or planner raised,
        or the episode's setup or interaction failed. Its return is not a score."""
        if self.record.get("model_error") is not None:
            return True
        return self.episode is not None and self.episode.ended in ("setup_error", "interact_error")


def run_closed_loop(
    simulator: Simulator,
    model: WorldModel,
    planner: Planner,
    *,
    seeds: Sequence[int],
    max_steps: int,
) -> list[ClosedLoopRun]:
    """Run ``model`` with ``planner`` once per seed, each in a fresh environment.

    A model that raises (or predicts only non-finite states) ends that run; the error is
    kept in the record's ``model_error`` and the remaining seeds still run. Actions
    outside the environment's action space are an ``InputError`` before any run."""
    from onrecord.dynamics._protocol import refuse_async, refuse_class
    from onrecord.dynamics._references import check_actions, check_seed

    refuse_class(model, "model")
    refuse_async(model, "model")
    refuse_class(planner, "planner", role="planner")
    check_actions(simulator)
    if isinstance(seeds, str | bytes):
        raise InputError(f"seeds must be a sequence of ints, got {type(seeds).__name__}")
    checked = [check_seed(seed, f"seeds[{n}]") for n, seed in enumerate(seeds)]  # before any run
    return [_run_once(simulator, model, planner, seed, max_steps) for seed in checked]


def _run_once(
    simulator: Simulator, model: WorldModel, planner: Planner, seed: int, max_steps: int
) -> ClosedLoopRun:
    from onrecord.dynamics._references import capture_on, native_action

    predicted: list[float] = []
    failure: dict[str, Any] = {}
    rng = np.random.default_rng(seed)

    def interact(env: Any, observation: Any, info: Any) -> str:
        for step in range(max_steps):
            state = np.asarray(simulator.get_state(env))
            try:
                choice = planner.plan(model, simulator, state, rng)
            except Exception as exc:  # the model's (or planner's) failure, not the env's
                # A bug in the user's predict or planner is kept with the line that raised.
                failure.update(step=step, **raised_record(exc))
                return "model error"
            predicted.append(choice.predicted_return)
            action = native_action(choice.action, env.action_space)
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                return "ended"
        return "step budget used"

    case = EvalCase(
        {"task": f"control {simulator.env_id}", "seed": seed},
        case_id=f"control-{simulator.env_id}-{seed}",
        source_id=f"seed:{seed}",
        completion="truncated",
    )
    episode = capture_on(simulator, interact, case=case, seed=seed, max_steps=max_steps)
    record = {
        "schema": CLOSED_LOOP_SCHEMA,
        "model_id": model.model_id,
        "env_id": simulator.env_id,
        "budget": planner.budget,
        "seed": seed,
        "max_steps": max_steps,
        "episode": episode.digest,
        "predicted_returns": predicted,
        "model_error": failure or None,
    }
    record["digest"] = content_digest(record)
    return ClosedLoopRun(record, episode)


def save_runs(
    path: str | os.PathLike[str], runs: Iterable[ClosedLoopRun], *, episodes: bool = False
) -> Path:
    """Decision records as JSON Lines; with ``episodes=True`` their episodes too (each
    once) in ``NAME.episodes.jsonl`` beside ``NAME.jsonl``, where ``onrecord verify`` and
    ``show`` look for them and ``load_runs(path)`` reads them."""
    runs = list(runs)
    if episodes:
        # The episodes first: a records file never points at episodes not yet written.
        from onrecord.dynamics.experiment._store import save_episodes

        unique = {run.episode.digest: run.episode for run in runs}
        save_episodes(episodes_beside(Path(path)), unique.values())
    return atomic_write_bytes(path, b"".join(canonical_bytes(r.record) + b"\n" for r in runs))


def episodes_beside(path: Path) -> Path:
    """``NAME.episodes.jsonl`` for the decision records ``NAME.jsonl``."""
    return path.with_name(f"{path.name.removesuffix('.jsonl')}.episodes.jsonl")


def load_runs(
    path: str | os.PathLike[str], episodes: Mapping[str, Any] | None = None
) -> list[ClosedLoopRun]:
    """Read and verify decision records and attach their episodes by digest: from
    ``episodes`` (digest -> ``EpisodeEvidence``) or, when None, from the
    ``NAME.episodes.jsonl`` that ``save_runs(..., episodes=True)`` wrote beside them.

    Every field of every line is checked (``SchemaError`` naming the line and the field),
    and each run's episode must be the one run with its seed (``ConsistencyError``)."""
    if episodes is None:
        beside = episodes_beside(Path(path))
        # ``exists``, not ``is_file``: a FIFO there is refused by name when read, rather
        # than reported missing.
        if not beside.exists():
            raise InputError(
                f"episodes: none given and no {beside.name} beside {Path(path).name}; "
                "save the runs with save_runs(path, runs, episodes=True), or pass "
                "episodes={episode.digest: episode}"
            )
        from onrecord.dynamics.experiment._store import load_episodes

        episodes = {e.digest: e for e in load_episodes(beside)}
    runs = []
    # Never a FIFO or a device (it would block, or never end); a link the user named is
    # followed, as every command reads the file it is given.
    raw = read_regular(Path(path), follow=True)
    for number, line in enumerate(raw.splitlines(), start=1):
        record = load_record_bytes(line, f"{path}:{number}")
        if record.get("schema") != CLOSED_LOOP_SCHEMA:
            raise SchemaError(f"{path}:{number} is not a closed-loop record")
        if record.get("digest") != content_digest(record):
            raise DigestMismatch(f"{path}:{number} does not match its digest")
        # Field by field: a re-sealed line without its episode (or with a dict among its
        # returns) was a KeyError here, or a TypeError in closed_loop_summary.
        where = f"{path}: line {number}"
        verify_run_record(record, where)
        episode = episodes.get(record["episode"])
        if episode is None:
            raise ConsistencyError(
                f"{path}:{number} references episode "
                f"{record['episode'][:12]}, which is not in the run"
            )
        _check_seed(record, episode, where)
        runs.append(ClosedLoopRun(record, episode))
    return runs


def _check_seed(record: dict[str, Any], episode: Any, where: str) -> None:
    """The run's seed is its episode's: the summaries pair the models' runs by it."""
    environment = getattr(episode, "environment", None)
    seed = environment.get("seed") if isinstance(environment, Mapping) else None
    if seed is not None and seed != record["seed"]:
        raise ConsistencyError(
            f"{where} (seed {record['seed']}) references an episode run with seed {seed}"
        )
