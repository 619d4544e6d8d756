"""The wrapper handed to ``interact``: it records every attempted step and returns the
step tuple unchanged.

The per-step path builds one tuple per attempt around one observer read serialized by
a single C call; columns, encoding and sealing happen once, at the end of the episode
(see ``_columns``).
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any, NamedTuple, NoReturn, SupportsFloat

import gymnasium as gym
import numpy as np
import orjson

from onrecord._canonical import (
    _STATE_OPTIONS,
    _numpy_fallback,
    canonical_bytes,
    only_dtype_string,
    reraise_interrupt,
    state_bytes,
    to_portable,
)
from onrecord._exceptions import describe, error_record, shown_repr
from onrecord._user_errors import described, raised_record
from onrecord.errors import (
    CaptureError,
    InvalidActionError,
    LifecycleError,
    MalformedStepError,
    PortabilityError,
    StepLimitReached,
)
from onrecord.integrations.gymnasium._actions import fast_contains, invalid_action_message
from onrecord.integrations.gymnasium._step_values import is_flag, result_problem, snapshot

__all__ = ["EpisodeRecorder", "describe", "error_record"]  # the last two re-exported

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
Success = tuple[Any, int, Any, SupportsFloat, bytes]
"""action, wall time (ns), observation, reward, and the observer state as canonical JSON
bytes followed by a comma. A non-empty ``info`` is kept apart (``EpisodeRecorder.infos``),
and only the last success can end the episode (``EpisodeRecorder.final_flags``)."""


class Failure(NamedTuple):
    """An attempt that was refused or raised."""

    status: str
    error: dict[str, str]
    wall_time_ns: int
    action: Any  # the executed action, or NOT_EXECUTED
    state: bytes


NOT_EXECUTED = object()
_dumps = orjson.dumps
# The step limit (see _compile_step) while no attempt may start: one is in flight, or
# interact has returned.
BUSY, SEALED = -1, -2
_BUSY = (
    "{}() was called while a step or an observer read was in progress (by the observer, "
    "or from another thread); it was refused before reaching the environment: call "
    "step() from interact, one call at a time, and keep the observer read-only"
)


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
        box = env.observation_space
        # An observation matching the declared Box is kept as its raw bytes.
        self.box = (
            (box.dtype, box.shape)
            if type(box) is gym.spaces.Box and box.dtype is not None
            else None
        )
        self.initial_observation: Any = None
        self.initial_info: dict[str, Any] = {}  # reset's own info, handed to interact
        # One record per attempt, a Success or a Failure; the column shortcuts in
        # _columns apply while no attempt failed and no action or observation needed
        # the general snapshot.
        self.records: list[Success | Failure] = []
        self.failed = self.odd_actions = self.odd_observations = False
        self.infos: dict[int, bytes] = {}  # attempt index -> canonical info, when not empty
        self.final_flags = (False, False)  # terminated, truncated of the last success
        self.observer_errors: dict[int, str] = {}  # attempt index -> message
        self.events: list[dict[str, Any]] = []
        self.ended: str | None = None
        # Large observation/action columns, by sha256 (see onrecord.episode._blobs).
        self.blobs: dict[str, bytes] = {}
        self._step = self._compile_step()
        # Shadow the method with the closure: interact's env.step(...) lands on it directly.
        self.step = self._step  # type: ignore[method-assign,assignment]

    def observe(self) -> tuple[Any, str | None]:
        """Read the observer once, decoded, while no step may start; a failure is
        returned as text, never raised."""
        try:
            return orjson.loads(state_bytes(self._guarded_observe(), "$.state")), None
        except Exception as exc:
            return None, described(exc)

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
        records = self.records
        record, clock, dumps, ndarray = records.append, perf_counter_ns, _dumps, np.ndarray
        box_dtype, box_shape = self.box or (None, None)
        options, fallback = _STATE_OPTIONS, _numpy_fallback  # cell lookups, not globals

        # 0 once the episode ended: one test for both rules. BUSY (-1) while a step is in
        # flight, so a step by the observer or another thread is refused: swapped in
        # with no call before it, so atomic under the GIL. SEALED after interact.
        limit = max_steps
        sealed = False  # set once by seal(): a step or read in flight cannot undo it

        def step(action: Any) -> StepResult:
            nonlocal limit
            bound, limit = limit, -1  # BUSY, as a constant
            try:
                index = len(records)
                if type(action) is int:  # the common case: a plain int in a Discrete space
                    if index >= bound or not (low <= action < high or fast_contains(space, action)):
                        recorder._refuse(action, index, bound)
                    sent = action
                else:
                    if index >= bound or not fast_contains(space, action):
                        recorder._refuse(action, index, bound)
                    sent = recorder._odd_action(action)
                start = clock()
                try:
                    result = env_step(action)
                except BaseException as exc:  # an interrupt too: it ran, the agent may go on
                    # The environment's own code raised: kept with the line that raised it.
                    elapsed = clock() - start
                    recorder._record_failed(index, "env_error", exc, elapsed, sent, raised=True)
                    raise
                elapsed = clock() - start
                try:  # gymnasium's (observation, reward, terminated, truncated, info)
                    observation, reward, terminated, truncated, info = result
                    if info or type(info) is not dict:  # {} is the common case: one test
                        recorder._keep_info(info, index, elapsed, sent)
                    kept = (
                        observation.tobytes()
                        if type(observation) is ndarray
                        and observation.dtype is box_dtype
                        and observation.shape == box_shape
                        else recorder._odd_observation(observation)
                    )
                    # Identity, not truth: a falsy non-bool (None, "") is malformed too.
                    if (terminated is not False or truncated is not False) and recorder._end(
                        terminated, truncated, index, elapsed, sent
                    ):
                        bound = 0
                except Exception as exc:  # not a 5-tuple, parts without a truth, a cycle
                    if recorder._ended_anyway(result):
                        bound = 0  # no step may follow the end, kept or not
                    if isinstance(exc, CaptureError):  # already recorded, and meant for interact
                        raise
                    recorder._malformed(index, elapsed, sent, result_problem(result, exc))
                try:  # the observer read: one C call in the common case
                    state = observe()
                    try:
                        raw = dumps(state, option=options, default=fallback)
                    except TypeError as exc:
                        reraise_interrupt(exc)  # a Ctrl-C that landed in the hook
                        raw = b""
                    # A null may be a NaN in disguise, and a string value a UUID or a
                    # datetime64 orjson wrote as text: state_bytes decides and explains.
                    # (find, not "in": bytes.__contains__ first tries the needle as an int.)
                    # No quote at all, or the two of a lone key of an object ({"state":
                    # [...]}, the usual numeric state), means no string value: one count
                    # decides the common cases, no_string_values (inlined) the rest.
                    quotes = raw.count(b'"')
                    strings = (
                        quotes
                        and (quotes != 2 or raw[0] != 123)  # 123: "{"
                        and (quotes != 2 * raw.count(b'":') or raw.find(b"\\") >= 0)
                    )
                    if (
                        not raw
                        or raw.find(b"null") >= 0
                        or (strings and not only_dtype_string(state, raw))
                    ):
                        raw = state_bytes(state, "$.state")
                    # The comma is added by copying: the copy is a small pymalloc block,
                    # while orjson's own result sits in an oversized malloc block, and
                    # holding 500 of those costs more than serializing them did.
                    raw += b","
                except Exception as exc:
                    raw = recorder._observer_failed(index, exc)
                except BaseException as exc:  # interrupted: the step ran, so keep it
                    record((sent, elapsed, kept, reward, recorder._observer_failed(index, exc)))
                    raise
                record((sent, elapsed, kept, reward, raw))
                return result
            finally:
                limit = SEALED if sealed else bound

        def guarded_observe() -> Any:
            """The observer, read outside a step while no step may start."""
            nonlocal limit
            bound, limit = limit, BUSY
            try:
                return observe()
            finally:
                limit = SEALED if sealed else bound

        def seal() -> None:
            """No step after capture_episode has returned: its evidence is sealed."""
            nonlocal limit, sealed
            sealed = True
            limit = SEALED

        def now() -> int:
            return limit

        self._guarded_observe, self.seal, self._limit = guarded_observe, seal, now
        return step

    def _odd_action(self, action: Any) -> Any:
        self.odd_actions = True
        return snapshot(action)

    def _odd_observation(self, observation: Any) -> Any:
        self.odd_observations = True
        return snapshot(observation)

    def _keep_info(self, info: Any, index: int, elapsed: int, sent: Any) -> None:
        """Keep a non-empty ``info``; ``None`` reads as ``{}``, and anything but a dict
        (an empty list or string too) makes the step malformed."""
        if info is None:
            return
        if not isinstance(info, dict):
            self._malformed(index, elapsed, sent, f"an info of type {type(info).__name__}")
        try:
            if info:
                self.infos[index] = canonical_bytes(to_portable(info, f"$.info[{index}]"))
        except PortabilityError as exc:  # recorded whole, never half a transition
            self._record_failed(index, "env_error", exc, elapsed, sent)
            raise
        except Exception as exc:  # e.g. a RecursionError: an info that contains itself
            self._malformed(
                index, elapsed, sent, f"an info that cannot be stored ({describe(exc)})"
            )

    def _end(self, terminated: Any, truncated: Any, index: int, elapsed: int, sent: Any) -> bool:
        """Whether the flags end the episode; non-bools make the step malformed."""
        for name, flag in (("terminated", terminated), ("truncated", truncated)):
            if not is_flag(flag):
                self._malformed(index, elapsed, sent, f"{name}={shown_repr(flag, 80)}, not a bool")
        if not (terminated or truncated):  # NumPy False, or 0
            return False
        self.ended = "terminated" if terminated else "truncated"
        self.final_flags = (bool(terminated), bool(truncated))
        return True

    def _ended_anyway(self, result: Any) -> bool:
        """Whether a step kept as an environment error (an unstorable ``info``, a bad
        flag beside a true one) still ended the episode, so no step reaches the
        environment past its end. The end flags stay with successful steps."""
        try:
            _, _, terminated, truncated, _ = result
            ended = bool(terminated) or bool(truncated)
        except Exception:  # not a 5-tuple, or a flag without a truth value
            return False
        if ended and self.ended is None:
            self.ended = "terminated" if terminated else "truncated"
        return ended

    def _malformed(self, index: int, elapsed: int, sent: Any, problem: str) -> NoReturn:
        exc = MalformedStepError(
            f"step() returned {problem}; a Gymnasium environment's step returns "
            "(observation, reward, terminated: bool, truncated: bool, info: dict). The step "
            "ran, so it is recorded as an environment error"
        )
        self._record_failed(index, "env_error", exc, elapsed, sent)
        raise exc

    def _observer_failed(self, index: int, exc: BaseException) -> bytes:
        # The user's observer raised (kept with its line), or onrecord refused its state.
        self.observer_errors[index] = described(exc)
        return b"null,"

    def _read_state(self, index: int) -> bytes:
        try:
            return state_bytes(self._observe_fn(), "$.state") + b","
        except Exception as exc:
            return self._observer_failed(index, exc)

    def _refuse(self, action: Any, index: int, bound: int) -> None:
        exc: CaptureError
        if bound == SEALED:  # nothing is recorded: the evidence is already built
            raise LifecycleError(
                "step() was called after interact returned (from a kept reference or "
                "another thread); it was refused before reaching the environment: the "
                "episode is over and its evidence sealed"
            )
        if bound == BUSY:
            raise self._event("step", index, LifecycleError(_BUSY.format("step")))
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
            message = invalid_action_message(self.env.action_space, action)
            status, exc = "invalid_action", InvalidActionError(message)
        self._record_failed(index, status, exc, 0, NOT_EXECUTED)
        raise exc

    def _record_failed(
        self,
        index: int,
        status: str,
        exc: BaseException,
        elapsed: int,
        sent: Any,
        *,
        raised: bool = False,  # raised by the environment, not a refusal of onrecord's
    ) -> None:
        self.failed = True
        error = raised_record(exc) if raised else error_record(exc)
        try:
            state = self._read_state(index)
        except BaseException as interrupt:  # the observer was interrupted: keep the attempt
            state = self._observer_failed(index, interrupt)
            self.records.append(Failure(status, error, elapsed, sent, state))
            raise
        self.records.append(Failure(status, error, elapsed, sent, state))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        now = self._limit()
        if now == SEALED:  # nothing is recorded: the evidence is already built
            raise LifecycleError("reset() was called after interact returned; it was refused")
        if now == BUSY:
            raise self._event("reset", len(self.records), LifecycleError(_BUSY.format("reset")))
        raise self._event(
            "reset",
            len(self.records),
            LifecycleError(
                "reset() was called inside interact; capture_episode resets "
                "once before interact, and each repeat needs a fresh episode"
            ),
        )

    def _event(self, phase: str, index: int, exc: CaptureError) -> CaptureError:
        """Record a refused call that never reached the environment; returned to raise."""
        self.events.append({"phase": phase, "index": index, **error_record(exc)})
        return exc

    def close(self) -> None:
        """Closing is capture_episode's job, after the final observation."""
