"""``capture_episode``: one task lifecycle on a fresh environment, kept as evidence.

``capture_episode_async`` is the same episode for code running in an event loop: only
how ``interact`` is called differs (``_interact``); the phases are ``_lifecycle``'s."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from onrecord._canonical import to_portable
from onrecord._user_errors import raised_record
from onrecord.case import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.errors import InputError
from onrecord.integrations.gymnasium._arguments import require_callables
from onrecord.integrations.gymnasium._interact import (
    Interact,
    await_interact,
    call_interact,
    refuse_async_in_loop,
)
from onrecord.integrations.gymnasium._lifecycle import Episode, assemble
from onrecord.integrations.gymnasium._recorder import EpisodeRecorder, error_record
from onrecord.integrations.gymnasium._spaces import describe_space

__all__ = ["capture_episode", "capture_episode_async"]


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

    An async ``interact`` (``async def``, or returning an awaitable) is run to completion
    on an event loop of its own; while an event loop is running in this thread it is
    refused with ``InputError``: ``await capture_episode_async(...)`` there instead.
    """
    settings = _checked(
        factory, interact, observe, case, environment_id, observer_id, seed, max_steps, options
    )
    refuse_async_in_loop(interact)
    episode = _build(factory, case, settings, observe)
    if isinstance(episode, EpisodeEvidence):
        return episode
    with episode.running() as ready:
        if ready:
            call_interact(interact, episode.recorder, episode.record)
    return episode.finish()


async def capture_episode_async(
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
    """``capture_episode`` for code running in an event loop (Jupyter, an async
    application): an async ``interact`` is awaited in the caller's task, a plain one
    called. The factory, reset, steps, observer and close stay synchronous, as
    Gymnasium's are, and block the loop while they run."""
    settings = _checked(
        factory, interact, observe, case, environment_id, observer_id, seed, max_steps, options
    )
    episode = _build(factory, case, settings, observe)
    if isinstance(episode, EpisodeEvidence):
        return episode
    with episode.running() as ready:
        if ready:
            await await_interact(interact, episode.recorder, episode.record)
    return episode.finish()


def _checked(
    factory: Any,
    interact: Any,
    observe: Any,
    case: EvalCase,
    environment_id: str,
    observer_id: str,
    seed: int,
    max_steps: int,
    options: Mapping[str, Any] | None,
) -> dict[str, Any]:
    require_callables(factory=factory, interact=interact, observe=observe)
    return _settings(case, environment_id, observer_id, seed, max_steps, options)


def _build(
    factory: Callable[[], gym.Env[Any, Any]],
    case: EvalCase,
    settings: dict[str, Any],
    observe: Callable[[], Any],
) -> Episode | EpisodeEvidence:
    """The episode on the factory's environment, or the evidence of a factory that
    failed or built something that cannot be captured."""
    try:
        env = factory()
    except Exception as exc:  # the user's factory raised: kept with the line that raised it
        return _setup_failure(case, settings, "factory", raised_record(exc))
    if not isinstance(env, gym.Env):
        _close_quietly(env)
        return _setup_failure(case, settings, "factory", error_record(InputError(_not_an_env(env))))
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
            error_record(
                InputError(
                    f"the environment has no {' and no '.join(missing)}; a gymnasium.Env sets "
                    "self.action_space and self.observation_space (gymnasium.spaces.Space "
                    "instances) in __init__"
                )
            ),
        )
    return Episode(env, observe, case, settings)


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


def _close_quietly(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        # The factory's object is already being reported as wrong; a failing close()
        # would only hide that.
        with contextlib.suppress(Exception):
            close()


def _setup_failure(
    case: EvalCase, settings: dict[str, Any], phase: str, error: dict[str, str]
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
        "events": [{"phase": phase, "index": 0, **error}],
    }
    return assemble(case, settings, EpisodeRecorder.__new__(EpisodeRecorder), record)
