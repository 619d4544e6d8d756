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

    def observe(self) -> tuple[Any, str | None]:
        """Read the observer once, decoded; a failure is returned as text, never raised."""
        try:
            return orjson.loads(state_bytes(self._observe_fn(), "$.state")), None
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def step(self, action: Any) -> StepResult:
        index = len(self.status)
        bounds = self._discrete
        if (
            self.ended is not None
            or index >= self._max_steps
            or not (
                (type(action) is int and bounds is not None and bounds[0] <= action < bounds[1])
                or fast_contains(self.env.action_space, action)
            )
        ):
            self._refuse(action, index)
        self.actions.append(action if type(action) is int else _snapshot(action))
        start = perf_counter_ns()
        try:
            result = self.env.step(action)
        except Exception as exc:
            self._record_failed(index, "env_error", error_record(exc), perf_counter_ns() - start)
            raise
        elapsed = perf_counter_ns() - start
        observation, reward, terminated, truncated, info = result
        try:
            info_bytes = canonical_bytes(to_portable(info, f"$.info[{index}]")) if info else _EMPTY
        except PortabilityError as exc:  # recorded whole, never half a transition
            self._record_failed(index, "env_error", error_record(exc), elapsed)
            raise
        self.wall_ns.append(elapsed)
        self.observations.append(
            observation.copy() if type(observation) is np.ndarray else _snapshot(observation)
        )
        self.outcomes.append((reward, terminated, truncated, info_bytes))
        if terminated or truncated:
            self.ended = "terminated" if terminated else "truncated"
        self.status.append("ok")
        # The observer read, inlined on the hot path: one C call in the common case.
        try:
            state = self._observe_fn()
            try:
                raw = _dumps(state, option=_STATE_OPTIONS, default=_numpy_fallback)
            except TypeError:
                raw = b""
            self.states.append(raw if raw and b"null" not in raw else state_bytes(state, "$.state"))
        except Exception as exc:
            self.states.append(b"null")
            self.observer_errors[index] = f"{type(exc).__name__}: {exc}"
        return result

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
