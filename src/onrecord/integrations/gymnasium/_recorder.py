"""The wrapper handed to ``interact``: it records every attempted step and returns the
step tuple unchanged.

The per-step path is kept to a few list appends and one observer read serialized by a
single C call; decoding and batch encoding happen once, at the end of the episode.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
import orjson

from onrecord._canonical import (
    _STATE_OPTIONS,
    _numpy_fallback,
    canonical_bytes,
    state_bytes,
    to_portable,
)
from onrecord.errors import (
    CaptureError,
    InvalidActionError,
    LifecycleError,
    PortabilityError,
    StepLimitReached,
)
from onrecord.integrations.gymnasium._spaces import fast_contains

__all__ = ["EpisodeRecorder", "error_record"]

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
_EMPTY = b"{}"
_dumps = orjson.dumps


def error_record(exc: BaseException) -> dict[str, str]:
    """The portable description of an exception kept in evidence."""
    kind = type(exc)
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "message": str(exc)}


def _snapshot(value: Any) -> Any:
    """Detach a native value so later in-place changes by the environment or the agent
    cannot rewrite history."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {key: _snapshot(item) for key, item in value.items()}
    return value


class EpisodeRecorder(gym.Wrapper[Any, Any, Any, Any]):
    """Observes, records and passes through; refuses what the episode's rules forbid."""

    def __init__(self, env: gym.Env[Any, Any], observe: Callable[[], Any], max_steps: int):
        super().__init__(env)
        self._observe_fn = observe
        self._max_steps = max_steps
        space = env.action_space
        self._discrete = (
            (int(space.start), int(space.start) + int(space.n))
            if type(space) is gym.spaces.Discrete
            else None
        )
        self.initial_observation: Any = None
        # Per attempt: status, wall time, observer state as JSON bytes.
        self.status: list[str] = []
        self.wall_ns: list[int] = []
        self.states: list[bytes] = []
        # Sparse: attempt index -> error / observer error.
        self.errors: dict[int, dict[str, str]] = {}
        self.observer_errors: dict[int, str] = {}
        # Accepted actions (successful or raising steps) and successful transitions.
        self.actions: list[Any] = []
        self.observations: list[Any] = []
        # Per successful step: reward, terminated, truncated, info as JSON bytes.
        self.outcomes: list[tuple[SupportsFloat, bool, bool, bytes]] = []
        self.events: list[dict[str, Any]] = []
        self.ended: str | None = None
        # Large observation/action columns, by sha256 (see onrecord.episode._blobs).
        self.blobs: dict[str, bytes] = {}
        self._step = self._compile_step()
        # Shadow the method with the closure: interact's env.step(...) lands on it directly.
        self.step = self._step  # type: ignore[method-assign,assignment]

    def observe(self) -> tuple[Any, str | None]:
        """Read the observer once, decoded; a failure is returned as text, never raised."""
        try:
            return orjson.loads(state_bytes(self._observe_fn(), "$.state")), None
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def step(self, action: Any) -> StepResult:
        # Replaced per instance by the closure from _compile_step (see __init__); kept
        # so the class still reads as a gymnasium.Wrapper.
        return self._step(action)

    def _compile_step(self) -> Callable[[Any], StepResult]:
        """The per-step path as a closure over local names: attribute lookups on self
        are the largest part of its cost, and this runs once per environment step."""
        recorder, env_step, observe = self, self.env.step, self._observe_fn
        space, max_steps = self.env.action_space, self._max_steps
        low, high = self._discrete or (0, -1)
        status, wall, actions = self.status.append, self.wall_ns.append, self.actions.append
        observations, outcomes = self.observations.append, self.outcomes.append
        states, clock, dumps = self.states.append, perf_counter_ns, _dumps
        steps = self.status

        def step(action: Any) -> StepResult:
            index = len(steps)
            if (
                recorder.ended is not None
                or index >= max_steps
                or not (
                    (type(action) is int and low <= action < high) or fast_contains(space, action)
                )
            ):
                recorder._refuse(action, index)
            actions(action if type(action) is int else _snapshot(action))
            start = clock()
            try:
                result = env_step(action)
            except Exception as exc:
                recorder._record_failed(index, "env_error", error_record(exc), clock() - start)
                raise
            elapsed = clock() - start
            observation, reward, terminated, truncated, info = result
            info_bytes = recorder._info_bytes(info, index, elapsed) if info else _EMPTY
            wall(elapsed)
            observations(
                observation.copy() if type(observation) is np.ndarray else _snapshot(observation)
            )
            outcomes((reward, terminated, truncated, info_bytes))
            if terminated or truncated:
                recorder.ended = "terminated" if terminated else "truncated"
            status("ok")
            try:  # the observer read: one C call in the common case
                state = observe()
                try:
                    raw = dumps(state, option=_STATE_OPTIONS, default=_numpy_fallback)
                except TypeError:
                    raw = b""
                states(raw if raw and b"null" not in raw else state_bytes(state, "$.state"))
            except Exception as exc:
                recorder._observer_failed(index, exc)
            return result

        return step

    def _info_bytes(self, info: Any, index: int, elapsed: int) -> bytes:
        try:
            return canonical_bytes(to_portable(info, f"$.info[{index}]"))
        except PortabilityError as exc:  # recorded whole, never half a transition
            self._record_failed(index, "env_error", error_record(exc), elapsed)
            raise

    def _observer_failed(self, index: int, exc: Exception) -> None:
        self.states.append(b"null")
        self.observer_errors[index] = f"{type(exc).__name__}: {exc}"

    def _read_state(self, index: int) -> None:
        try:
            self.states.append(state_bytes(self._observe_fn(), "$.state"))
        except Exception as exc:
            self.states.append(b"null")
            self.observer_errors[index] = f"{type(exc).__name__}: {exc}"

    def _refuse(self, action: Any, index: int) -> None:
        exc: CaptureError
        if self.ended is not None:
            status, exc = (
                "lifecycle",
                LifecycleError(
                    f"step() was called after the episode {self.ended}; an episode ends at its "
                    "first terminated or truncated step: return from interact instead"
                ),
            )
        elif index >= self._max_steps:
            status, exc = (
                "step_limit",
                StepLimitReached(
                    f"max_steps={self._max_steps} reached; the action was not sent to the "
                    "environment"
                ),
            )
        else:
            status, exc = (
                "invalid_action",
                InvalidActionError(
                    f"action {action!r} is not in the action space {self.env.action_space}; it "
                    "was refused before execution"
                ),
            )
        self._record_failed(index, status, error_record(exc), 0)
        raise exc

    def _record_failed(self, index: int, status: str, error: dict[str, str], elapsed: int) -> None:
        self.status.append(status)
        self.errors[index] = error
        self.wall_ns.append(elapsed)
        self._read_state(index)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        exc = LifecycleError(
            "reset() was called inside interact; capture_episode resets "
            "once before interact, and each repeat needs a fresh episode"
        )
        self.events.append({"phase": "reset", "index": len(self.status), **error_record(exc)})
        raise exc

    def close(self) -> None:
        """Closing is capture_episode's job, after the final observation."""
