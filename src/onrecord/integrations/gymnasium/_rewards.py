"""The reward column of an episode record and its return, built once at the end.

A reward is recorded as a double (JSON's number), so a step whose reward a double
cannot hold exactly is kept as an environment error, as a NaN reward is: its value is
never rounded silently, and the rest of the episode is kept.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import orjson

from onrecord._exceptions import shown_repr
from onrecord._splice import Spliced
from onrecord.episode._verify import episode_return
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium._recorder import Failure, error_record

if TYPE_CHECKING:
    from fractions import Fraction

    from onrecord.integrations.gymnasium._recorder import EpisodeRecorder, Success

__all__ = ["refuse_invalid_rewards", "refuse_overflowing_rewards", "rewards"]

# A double holds every integer up to this magnitude exactly.
_EXACT_IN_DOUBLE = 2**53
# Types whose every value float() keeps exactly.
_DOUBLES = frozenset({float, bool, np.float64, np.float32, np.float16, np.bool_})
# Python's own numbers, which Python compares exactly with one another (NumPy compares a
# float32 or a float64 with an int or a float through its own dtype, which rounds).
_PYTHON = frozenset({int, float, bool})
_HALF = struct.Struct("e")


def rewards(raw: Sequence[Any]) -> tuple[Any, float] | None:
    """The reward column and the episode's return, or None when a reward is not a
    finite real number a double holds exactly, or their sum is beyond a double. A
    constant reward (CartPole's +1, MountainCar's -1 every step) is written once and
    repeated: equal to a nonzero float below 2**53, every reward converts to that
    float (zero is left out: -0.0 equals it; beyond 2**53 a NumPy int64 compares
    equal to the float that rounds it). Unless a half float holds it (CartPole's 1.0),
    the rewards must be Python numbers: NumPy compares ``np.float32(0.1) == 0.1`` in
    float32, and the float32 reward was recorded as 0.1."""
    first = raw[0] if raw else None
    if (
        type(first) is float
        and -_EXACT_IN_DOUBLE < first < _EXACT_IN_DOUBLE
        and first
        and raw.count(first) == len(raw)
        and (_in_half_precision(first) or set(map(type, raw)) <= _PYTHON)
    ):
        try:
            total = math.fsum(raw)
        except OverflowError:  # 1e308 twice: left to the path below, which names it
            return None
        text = orjson.dumps(first)
        return Spliced(b"[" + (text + b",") * (len(raw) - 1) + text + b"]"), total
    try:
        total = episode_return(raw)  # refuses None and strings, which float() would convert
        floats = list(map(float, raw))
    except Exception:  # an OverflowError, or a warning turned error (a complex reward)
        return None
    if not math.isfinite(total) or not _exact(raw, floats):
        return None
    return floats, total


def _in_half_precision(number: float) -> bool:
    """Whether a half float holds ``number`` exactly, and so a float32 too: a NumPy
    float16 or float32 that compares equal to it (in its own dtype) is then exactly it."""
    try:
        return bool(_HALF.unpack(_HALF.pack(number))[0] == number)
    except OverflowError:  # beyond a half float's range
        return False


def _exact(raw: Sequence[Any], floats: list[float]) -> bool:
    """Whether each reward equals its float exactly: one pass over the types in the
    common case (floats and NumPy floats), C-level comparisons when ints are among them
    (Taxi's), a closer look only at other types."""
    kinds = set(map(type, raw))
    if kinds <= _DOUBLES:
        return True
    if kinds <= _PYTHON:  # ints among them: exact up to 2**53, else compared exactly
        within = min(raw) >= -_EXACT_IN_DOUBLE and max(raw) <= _EXACT_IN_DOUBLE
        return within or all(map(operator.eq, raw, floats))
    return all(map(_same, raw, floats))


def _same(value: Any, number: float) -> bool:
    """Whether ``value`` is exactly ``number``. Python compares an int, a Fraction or a
    Decimal with a float exactly, and NumPy a longdouble; but NumPy compares an int64
    through a float64, which rounds it, so a NumPy integer is compared as an int."""
    if type(value) in _DOUBLES:
        return True
    if isinstance(value, complex | np.complexfloating):
        return False
    try:
        if isinstance(value, np.integer) or (
            isinstance(value, np.ndarray) and value.dtype.kind in "iub"
        ):
            value = int(value)
        return bool(value == number)
    except Exception:  # an object whose == raises or has no truth value
        return False


def reward_problem(value: Any) -> str | None:
    """Why a double cannot hold ``value`` as a reward, or None when it can."""
    if isinstance(value, complex | np.complexfloating):
        return "which is not a real number"
    try:
        finite = math.isfinite(value)  # a TypeError for None, strings and other objects
    except OverflowError:  # an int beyond the largest double
        return "which is beyond the largest number a double (JSON's number) holds"
    except Exception:
        finite = False
    if not finite:
        return "which is not a finite real number (JSON has no NaN or Infinity)"
    try:
        number = float(value)
    except Exception:
        return "which is not a real number"
    if not _same(value, number):
        return (
            f"which a double (JSON's number) cannot hold exactly: the nearest double, "
            f"{number!r}, differs from it (return float(reward) where rounding is meant)"
        )
    return None


def refuse_invalid_rewards(recorder: EpisodeRecorder) -> None:
    """Record each step whose reward is not a finite real number a double holds
    exactly as an environment error: JSON cannot hold it, rounding it would record a
    reward the environment never gave, and dropping the episode would lose everything
    else."""
    last = _last_success(recorder.records)
    for index, item in enumerate(recorder.records):
        if isinstance(item, Failure):
            continue
        problem = reward_problem(item[3])
        if problem is not None:
            what = f"the reward {shown_repr(item[3], 100)}"
            _keep_as_error(recorder, index, last, what, problem)


def refuse_overflowing_rewards(recorder: EpisodeRecorder) -> None:
    """Record as an environment error each step whose reward takes the sum of the
    rewards kept before it beyond the largest double: the episode's return, which the
    record holds beside the rewards, could not be written, and the episode was lost.
    Every reward is a finite double by now."""
    from fractions import Fraction  # rare: only here

    total: Fraction = Fraction(0)
    last = _last_success(recorder.records)
    for index, item in enumerate(recorder.records):
        if isinstance(item, Failure):
            continue
        number = float(item[3])
        candidate = total + Fraction(number)
        try:
            float(candidate)
        except OverflowError:
            _keep_as_error(
                recorder,
                index,
                last,
                f"the reward {number!r}",
                "which takes the episode's return (the sum of the rewards before it, "
                f"{float(total)!r}) beyond the largest number a double (JSON's number) holds",
            )
            continue
        total = candidate


def _last_success(records: list[Any]) -> int:
    return max((i for i, item in enumerate(records) if not isinstance(item, Failure)), default=-1)


def _keep_as_error(
    recorder: EpisodeRecorder, index: int, last: int, what: str, problem: str
) -> None:
    records = recorder.records
    # A Success: callers skip each Failure.
    sent, elapsed, _, _, state = cast("Success", records[index])
    exc = PortabilityError(
        f"the environment returned {what} at attempt {index}, {problem}; the step is kept "
        "as an environment error",
        f"$.steps.reward[{index}]",
    )
    records[index] = Failure("env_error", error_record(exc), elapsed, sent, state)
    if index == last:  # the last success: its end flags went with it
        recorder.final_flags = (False, False)
    recorder.failed = True
