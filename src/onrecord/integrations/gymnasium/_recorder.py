"""The wrapper handed to ``interact``: it records every attempted step and returns the
step tuple unchanged. Encoding is deferred to the end of the episode (batched), so the
per-step cost is a few list appends and one observer read."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from onrecord._canonical import to_portable
from onrecord.errors import InvalidActionError, LifecycleError, StepLimitReached
from onrecord.integrations.gymnasium._spaces import fast_contains

__all__ = ["EpisodeRecorder", "error_record"]

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


def error_record(exc: BaseException) -> dict[str, str]:
    """The portable description of an exception kept in evidence."""
    kind = type(exc)
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "message": str(exc)}


def _snapshot(value: Any) -> Any:
    """Detach a native observation so later in-place changes by the environment cannot
    rewrite history."""
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
        self._discrete = (int(space.start), int(space.start) + int(space.n)) \
            if type(space) is gym.spaces.Discrete else None
        # Per attempt (aligned): status, error, observed state, observer error, wall time.
        self.status: list[str] = []
        self.errors: list[dict[str, str] | None] = []
        self.states: list[Any] = []
        self.observer_errors: list[str | None] = []
        self.wall_ns: list[int] = []
        # Accepted actions and the attempt each belongs to.
        self.actions: list[Any] = []
        self.action_index: list[int] = []
        # Successful transitions and the attempt each belongs to.
        self.transition_index: list[int] = []
        self.observations: list[Any] = []
        self.rewards: list[float] = []
        self.terminated: list[bool] = []
        self.truncated: list[bool] = []
        self.infos: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.ended: str | None = None

    def observe(self) -> tuple[Any, str | None]:
        """Read the observer once; a failure is kept as an error string, never raised."""
        try:
            return to_portable(self._observe_fn(), "$.state"), None
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def step(self, action: Any) -> StepResult:
        refusal = self._refusal(action)
        if refusal is not None:
            self._record_refused(*refusal)
            raise refusal[1]
        index = len(self.status)
        self.actions.append(_snapshot(action))
        self.action_index.append(index)
        start = perf_counter_ns()
        try:
            result = self.env.step(action)
        except Exception as exc:
            self._record_attempt("env_error", error_record(exc), perf_counter_ns() - start)
            raise
        elapsed = perf_counter_ns() - start
        observation, reward, terminated, truncated, info = result
        self.transition_index.append(index)
        self.observations.append(_snapshot(observation))
        self.rewards.append(reward)  # type: ignore[arg-type]
        self.terminated.append(terminated)
        self.truncated.append(truncated)
        self.infos.append(to_portable(info, f"$.info[{index}]") if info else {})
        if terminated or truncated:
            self.ended = "terminated" if terminated else "truncated"
        self._record_attempt("ok", None, elapsed)
        return result

    def _refusal(self, action: Any) -> tuple[str, Exception] | None:
        if self.ended is not None:
            return "lifecycle", LifecycleError(
                f"step() was called after the episode {self.ended}; an episode ends at its "
                "first terminated or truncated step: return from interact instead")
        if len(self.status) >= self._max_steps:
            return "step_limit", StepLimitReached(
                f"max_steps={self._max_steps} reached; the action was not sent to the "
                "environment")
        valid = (type(action) is int and self._discrete[0] <= action < self._discrete[1]) \
            if self._discrete is not None and type(action) is int \
            else fast_contains(self.env.action_space, action)
        if not valid:
            return "invalid_action", InvalidActionError(
                f"action {action!r} is not in the action space {self.env.action_space}; it "
                "was refused before execution")
        return None

    def _record_refused(self, status: str, exc: Exception) -> None:
        self._record_attempt(status, error_record(exc), 0)

    def _record_attempt(self, status: str, error: dict[str, str] | None, elapsed: int) -> None:
        self.status.append(status)
        self.errors.append(error)
        self.wall_ns.append(elapsed)
        state, observer_error = self.observe()
        self.states.append(state)
        self.observer_errors.append(observer_error)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        exc = LifecycleError("reset() was called inside interact; capture_episode resets "
                             "once before interact, and each repeat needs a fresh episode")
        self.events.append({"phase": "reset", "index": len(self.status), **error_record(exc)})
        raise exc

    def close(self) -> None:
        """Closing is capture_episode's job, after the final observation."""
