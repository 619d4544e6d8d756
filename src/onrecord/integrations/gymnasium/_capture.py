"""``capture_episode``: one task lifecycle on a fresh environment, kept as evidence."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import TimeLimit

from onrecord._canonical import from_portable, to_portable
from onrecord.case import EvalCase
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.episode._blobs import BLOB_TAG, BLOB_THRESHOLD, blob_ref, is_blob
from onrecord.episode._coverage import coverage_issues, ending
from onrecord.episode._history import unbatch
from onrecord.errors import InputError, LifecycleError, MalformedStepError, PortabilityError
from onrecord.integrations.gymnasium._columns import encode_steps, no_steps
from onrecord.integrations.gymnasium._envspec import describe_spec
from onrecord.integrations.gymnasium._recorder import (
    NOT_EXECUTED,
    EpisodeRecorder,
    Failure,
    error_record,
)
from onrecord.integrations.gymnasium._spaces import batch_layout, describe_space, encode_batch

__all__ = ["capture_episode"]

Interact = Callable[[Any, Any, dict[str, Any]], Any]


def capture_episode(
    factory: Callable[[], gym.Env[Any, Any]],
    interact: Interact,
    *,
    case: EvalCase,
    environment_id: str,
    observer_id: str,
    observe: Callable[[], Any],
    seed: int,
    max_steps: int,
    options: Mapping[str, Any] | None = None,
) -> EpisodeEvidence:
    """Create a fresh environment, reset it once with ``seed``, hand it to ``interact``
    and record everything that happened, then close it.

    Ordinary exceptions from the factory, reset, steps, the observer, ``interact`` and
    ``close`` are kept in the evidence; ``KeyboardInterrupt``, ``SystemExit`` and every
    other ``BaseException`` that is not an ``Exception`` propagate after cleanup.
    """
    _require_callables(factory=factory, interact=interact, observe=observe)
    settings = _settings(case, environment_id, observer_id, seed, max_steps, options)
    try:
        env = factory()
    except Exception as exc:
        return _setup_failure(case, settings, "factory", exc)
    if not isinstance(env, gym.Env):
        _close_quietly(env)
        return _setup_failure(
            case,
            settings,
            "factory",
            InputError(_not_an_env(env)),
        )
    missing = [
        name
        for name in ("action_space", "observation_space")
        if not isinstance(getattr(env, name, None), gym.spaces.Space)
    ]
    if missing:  # the recorder checks actions against one and encodes with both
        _close_quietly(env)
        return _setup_failure(
            case,
            settings,
            "factory",
            InputError(
                f"the environment has no {' and no '.join(missing)}; a gymnasium.Env sets "
                "self.action_space and self.observation_space (gymnasium.spaces.Space "
                "instances) in __init__"
            ),
        )
    return _run(env, interact, observe, case, settings)


def _not_an_env(env: Any) -> str:
    """Why the factory's object cannot be captured. A vector environment is a common
    mistake (``gym.make_vec``): its batched steps are not one episode's history."""
    if isinstance(env, gym.vector.VectorEnv):
        return (
            f"factory returned {type(env).__name__}, a gymnasium.vector.VectorEnv: "
            "capture_episode records one episode of one environment and does not support "
            "vector environments; return a single environment (gym.make, not gym.make_vec) "
            "and capture each sub-environment's episode on its own"
        )
    return f"factory returned {type(env).__name__}, not a gymnasium.Env"


_ROLES = {
    "factory": "a function that takes no arguments and returns a fresh gymnasium.Env",
    "interact": "your agent loop, called as interact(env, observation, info)",
    "observe": "a function that takes no arguments and returns the state as portable JSON",
}


def _require_callables(**given: Any) -> None:
    for name, value in given.items():
        if not callable(value):
            raise InputError(f"{name} must be {_ROLES[name]}, got {type(value).__name__}")


def _settings(
    case: EvalCase,
    environment_id: str,
    observer_id: str,
    seed: int,
    max_steps: int,
    options: Mapping[str, Any] | None,
) -> dict[str, Any]:
    if not isinstance(case, EvalCase):
        raise InputError(f"case must be an onrecord.EvalCase, got {type(case).__name__}")
    for name, value in (("environment_id", environment_id), ("observer_id", observer_id)):
        if not isinstance(value, str) or not value.strip():
            raise InputError(
                f"{name} must be a non-empty version label such as "
                f"'invoice-environment-v1', got {value!r}"
            )
    if type(seed) is not int or not 0 <= seed < 2**64:
        raise InputError(
            f"seed must be a non-negative int below 2**64 (stored exactly), got {seed!r}"
        )
    if type(max_steps) is not int or max_steps < 1:
        raise InputError(f"max_steps must be a positive int, got {max_steps!r}")
    if options is not None and not isinstance(options, Mapping):
        raise InputError(
            f"options must be a mapping passed to reset(options=...), or None; "
            f"got {type(options).__name__}"
        )
    return {
        "environment_id": environment_id,
        "observer_id": observer_id,
        "seed": seed,
        "max_steps": max_steps,
        "completion": case.completion,
        "options": to_portable(dict(options) if options is not None else None, "$.options"),
    }


def _run(
    env: gym.Env[Any, Any],
    interact: Interact,
    observe: Callable[[], Any],
    case: EvalCase,
    settings: dict[str, Any],
) -> EpisodeEvidence:
    recorder = EpisodeRecorder(env, observe, settings["max_steps"])
    settings["spec"] = describe_spec(env)
    settings["observation_space"] = describe_space(getattr(env, "observation_space", None))
    settings["action_space"] = describe_space(getattr(env, "action_space", None))
    record: dict[str, Any] = {"interact": None, "events": recorder.events}
    try:
        start = _reset(env, recorder, settings, record)
        if record["initial"]["reset_error"] is None:
            _interact(interact, recorder, record)
        recorder.seal()  # a thread or a kept reference of interact's steps no more
        record["final_state"], record["final_observer_error"] = recorder.observe()
    finally:
        recorder.seal()
        record["cleanup"] = _close(env)
    if record["initial"]["reset_error"] is None:
        recorder.events += _unrecorded_steps(env, recorder, start)
    return _assemble(case, settings, recorder, record)


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
    except Exception as exc:
        initial["reset_error"] = error_record(exc)
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
    encoded = encode_batch(space, [observation], "initial.observation", blobs)
    layout = batch_layout(space)
    if is_blob(encoded, layout):  # a Dict observation with a "$blob" key is no blob
        meta = encoded[BLOB_TAG]
        del blobs[meta["sha256"]]
        return blob_ref(np.asarray(observation), blobs)
    return unbatch(encoded, 0, layout)  # a Dict or Tuple batch is nested


def _plain_box_sample(observation: Any, box: tuple[Any, Any] | None) -> bool:
    """A small, finite sample exactly of the declared Box: ``tolist()`` encodes it."""
    if box is None or type(observation) is not np.ndarray:
        return False
    if (observation.dtype, observation.shape) != box or observation.nbytes >= BLOB_THRESHOLD:
        return False
    kind = observation.dtype.kind
    return kind in "biu" or (kind == "f" and bool(np.isfinite(observation).all()))


def _interact(interact: Interact, recorder: EpisodeRecorder, record: dict[str, Any]) -> None:
    # The agent gets reset's own info, as a bare loop would: the recorded copy has its
    # arrays tagged for JSON (Taxi's action_mask as {"$ndarray": ...}, not an array).
    try:
        returned = interact(recorder, recorder.initial_observation, recorder.initial_info)
    except Exception as exc:
        record["interact"] = {"error": error_record(exc), "returned": None}
    else:
        record["interact"] = {"error": None, "returned": _portable_or_note(returned)}


def _portable_or_note(value: Any) -> Any:
    """What interact returned, or a note saying why it cannot be kept (a cycle or a
    structure too deep is noted too: interact itself did not fail)."""
    try:
        return to_portable(value, "$.interact.returned")
    except Exception as exc:
        return {"unportable": type(value).__qualname__, "reason": error_record(exc)["message"]}


def _close(env: gym.Env[Any, Any]) -> dict[str, Any]:
    try:
        env.close()
    except Exception as exc:
        return {"ok": False, "error": error_record(exc)}
    return {"ok": True, "error": None}


def _close_quietly(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        # The factory's object is already being reported as wrong; a failing close()
        # would only hide that.
        with contextlib.suppress(Exception):
            close()


def _setup_failure(
    case: EvalCase, settings: dict[str, Any], phase: str, exc: Exception
) -> EpisodeEvidence:
    settings.update(
        spec=None, observation_space=describe_space(None), action_space=describe_space(None)
    )
    record = {
        "initial": {
            "observation": None,
            "info": None,
            "reset_error": None,
            "state": None,
            "observer_error": None,
        },
        "interact": None,
        "final_state": None,
        "final_observer_error": None,
        "cleanup": {"ok": None, "error": None},
        "events": [{"phase": phase, "index": 0, **error_record(exc)}],
    }
    return _assemble(case, settings, EpisodeRecorder.__new__(EpisodeRecorder), record)


def _assemble(
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
