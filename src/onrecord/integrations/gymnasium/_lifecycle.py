"""The phases of a captured episode on a built environment: reset, the run around
``interact`` (closing the environment whatever happens), and the evidence assembled from
the record. ``capture_episode`` and ``capture_episode_async`` share all of it; only how
they call ``interact`` differs (``_interact``)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import TimeLimit

from onrecord._canonical import from_portable, to_portable
from onrecord._user_errors import raised_record
from onrecord.case import EvalCase
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.episode._blobs import BLOB_TAG, BLOB_THRESHOLD, blob_ref, is_blob
from onrecord.episode._coverage import coverage_issues, ending
from onrecord.episode._history import unbatch
from onrecord.errors import LifecycleError, MalformedStepError, PortabilityError
from onrecord.integrations.gymnasium._columns import encode_steps, no_steps, own_problem
from onrecord.integrations.gymnasium._envspec import describe_spec
from onrecord.integrations.gymnasium._recorder import (
    NOT_EXECUTED,
    EpisodeRecorder,
    Failure,
    error_record,
)
from onrecord.integrations.gymnasium._spaces import batch_layout, describe_space, encode_batch

__all__ = ["Episode", "assemble"]


class Episode:
    """One episode on an environment the factory built, between the factory and the
    evidence: ``with episode.running() as ready:`` resets it, and the caller calls
    ``interact`` (its own way) when ``ready``; ``finish()`` assembles the evidence."""

    def __init__(
        self,
        env: gym.Env[Any, Any],
        observe: Callable[[], Any],
        case: EvalCase,
        settings: dict[str, Any],
    ) -> None:
        self.env, self.case, self.settings = env, case, settings
        self.recorder = EpisodeRecorder(env, observe, settings["max_steps"])
        settings["spec"] = describe_spec(env)
        settings["observation_space"] = describe_space(getattr(env, "observation_space", None))
        settings["action_space"] = describe_space(getattr(env, "action_space", None))
        self.record: dict[str, Any] = {"interact": None, "events": self.recorder.events}
        self._start: int | None = None

    @contextlib.contextmanager
    def running(self) -> Iterator[bool]:
        """Reset once, then yield whether interact may run (the reset succeeded). On the
        way out the wrapper is sealed and the final state read; the environment is
        closed whatever happened, before a ``BaseException`` propagates."""
        recorder, record = self.recorder, self.record
        try:
            self._start = _reset(self.env, recorder, self.settings, record)
            yield record["initial"]["reset_error"] is None
            recorder.seal()  # a thread or a kept reference of interact's steps no more
            record["final_state"], record["final_observer_error"] = recorder.observe()
        finally:
            recorder.seal()
            record["cleanup"] = _close(self.env)

    def finish(self) -> EpisodeEvidence:
        if self.record["initial"]["reset_error"] is None:
            self.recorder.events += _unrecorded_steps(self.env, self.recorder, self._start)
        return assemble(self.case, self.settings, self.recorder, self.record)


def _counted_steps(env: gym.Env[Any, Any]) -> int | None:
    """The steps Gymnasium's ``TimeLimit`` counted since its last reset, when every
    wrapper above it steps it once per step: a frame-skipping one
    (``MaxAndSkipObservation``, ``RepeatAction``) steps it several times, and an honest
    episode must not read as bypassed. None when there is no such count."""
    wrapper: Any = env
    while isinstance(wrapper, gym.Wrapper) and not isinstance(wrapper, TimeLimit):
        if "step" in vars(wrapper) or type(wrapper).step not in _steps_once():
            return None
        wrapper = wrapper.env
    counted = getattr(wrapper, "_elapsed_steps", None) if isinstance(wrapper, TimeLimit) else None
    return counted if type(counted) is int else None


def _unrecorded_steps(
    env: gym.Env[Any, Any], recorder: EpisodeRecorder, start: int | None
) -> list[dict[str, Any]]:
    """Steps that bypassed capture, as far as Gymnasium's ``TimeLimit`` can tell.

    Since capture's reset returned (``start``: a wrapper's reset may itself step the
    environment, as Stable-Baselines3's ``NoopResetEnv`` does), ``TimeLimit`` counts each
    step that returned through it: at least every successful attempt, at most every
    attempt capture sent. More means something stepped the environment around the
    recorder (``env.env``, a kept reference); fewer means something reset it."""
    counted = _counted_steps(env)
    if counted is None or start is None:
        return []
    counted -= start
    records = recorder.records
    failed = [item for item in records if type(item) is Failure] if recorder.failed else []
    succeeded = len(records) - len(failed)
    sent = succeeded + sum(1 for item in failed if item.action is not NOT_EXECUTED)
    if succeeded <= counted <= sent:
        return []
    how = "stepped" if counted > sent else "reset"
    exc = LifecycleError(
        f"the environment's TimeLimit counted {counted} steps since the reset, but capture "
        f"sent {sent} ({succeeded} successful): something {how} the environment without "
        "capture_episode (env.env, env.unwrapped or a kept reference), so the recorded "
        "history is incomplete"
    )
    return [{"phase": "step", "index": len(records), **error_record(exc)}]


@functools.cache
def _steps_once() -> frozenset[Any]:
    """The ``step`` methods of Gymnasium's wrappers that step the environment below
    exactly once per call (what a wrapper's own override of ``step`` does is unknown)."""
    from gymnasium import wrappers

    names = (
        "Autoreset",  # resets instead only after the end, which capture refuses to step
        "FrameStackObservation",
        "HumanRendering",
        "NormalizeReward",
        "OrderEnforcing",
        "PassiveEnvChecker",
        "RecordEpisodeStatistics",
        "RecordVideo",
        "RenderCollection",
        "TimeAwareObservation",
    )
    found = {getattr(getattr(wrappers, name, None), "step", None) for name in names}
    found |= {gym.Wrapper.step, gym.ObservationWrapper.step, gym.ActionWrapper.step}
    found |= {gym.RewardWrapper.step, TimeLimit.step}
    found.discard(None)
    return frozenset(found)


def _reset(
    env: gym.Env[Any, Any],
    recorder: EpisodeRecorder,
    settings: dict[str, Any],
    record: dict[str, Any],
) -> int | None:
    """Reset once and record the outcome; returns the ``TimeLimit`` count once the reset
    returned, before the observer reads (see ``_unrecorded_steps``)."""
    seed = settings["seed"]
    start = None
    initial: dict[str, Any] = {"observation": None, "info": None, "reset_error": None}
    record["initial"] = initial
    try:
        env.action_space.seed(seed)
        env.observation_space.seed(seed)
        # The environment gets a native copy of what was recorded: NumPy arrays in the
        # options come back as arrays (with their dtype), not as their tagged JSON form.
        options = settings["options"]
        native = None if options is None else from_portable(options)
        observation, info = _reset_result(env.reset(seed=seed, options=native))
        start = _counted_steps(env)
        recorder.initial_observation = observation
        recorder.initial_info = {} if info is None else info
        initial["observation"] = _initial_observation(env.observation_space, observation, recorder)
        initial["info"] = to_portable(info, "$.initial.info")
    except PortabilityError:
        raise
    except Exception as exc:  # reset (or a space's seed) raised: kept with its line
        initial["reset_error"] = raised_record(exc)
    initial["state"], initial["observer_error"] = recorder.observe()
    return start


def _reset_result(result: Any) -> tuple[Any, Any]:
    if type(result) is tuple and len(result) == 2 and isinstance(result[1], dict | None):
        return result
    shape = f"a tuple of {len(result)}" if isinstance(result, tuple) else type(result).__name__
    raise MalformedStepError(
        f"reset() returned {shape}; a Gymnasium environment's reset returns "
        "(observation, info: dict) — an old Gym API environment returns the observation alone"
    )


def _initial_observation(space: Any, observation: Any, recorder: EpisodeRecorder) -> Any:
    """The reset observation in the same encoding as the step column (a blob for a
    large Box sample)."""
    if _plain_box_sample(observation, recorder.box):
        return observation.tolist()  # what the step column holds for the same sample
    blobs = recorder.blobs
    try:
        encoded = encode_batch(space, [observation], "initial.observation", blobs)
    except PortabilityError as batch_error:
        # Named within the observation ("$.initial.observation.a"), not within a batch
        # of one ("…a[0]"), as a step's observation is.
        raise own_problem(observation, "$.initial.observation") or batch_error from None
    layout = batch_layout(space)
    if is_blob(encoded, layout):  # a Dict observation with a "$blob" key is no blob
        meta = encoded[BLOB_TAG]
        del blobs[meta["sha256"]]
        return blob_ref(np.asarray(observation), blobs)
    return unbatch(encoded, 0, layout)  # a Dict or Tuple batch is nested


def _plain_box_sample(observation: Any, box: tuple[Any, Any] | None) -> bool:
    """A small, finite sample exactly of the declared Box: ``tolist()`` encodes it (not
    a longdouble's: its ``tolist()`` keeps NumPy scalars, which JSON has no form for)."""
    if box is None or type(observation) is not np.ndarray:
        return False
    if (observation.dtype, observation.shape) != box or observation.nbytes >= BLOB_THRESHOLD:
        return False
    kind = observation.dtype.kind
    return kind in "biu" or (
        kind == "f" and observation.dtype.itemsize <= 8 and bool(np.isfinite(observation).all())
    )


def _close(env: gym.Env[Any, Any]) -> dict[str, Any]:
    try:
        env.close()
    except Exception as exc:  # the environment's own close: kept with its line
        return {"ok": False, "error": raised_record(exc)}
    return {"ok": True, "error": None}


def assemble(
    case: EvalCase, settings: dict[str, Any], recorder: EpisodeRecorder, record: dict[str, Any]
) -> EpisodeEvidence:
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    steps, total = encode_steps(recorder) if hasattr(recorder, "records") else (no_steps(), 0.0)
    data = {
        "schema": EPISODE_SCHEMA,
        "library": {"name": "onrecord", "version": __version__},
        "case": case.to_dict(),
        "environment": settings,
        **record,
        "steps": steps,
    }
    data["ended"] = ending(data)
    data["coverage_issues"] = coverage_issues(data)
    data["measures"] = {"return": total, "steps": len(steps["transition_index"])}
    return EpisodeEvidence._from_trusted(data, getattr(recorder, "blobs", {}))
