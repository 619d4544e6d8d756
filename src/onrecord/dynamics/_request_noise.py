"""The noise of a request's rows, each drawn from a generator seeded by that row alone.

``RandomModel`` and ``BootstrapEnsembleModel`` give every row of a request (a reference,
or one of a planner's candidate plans) its own generator, seeded by the model's seed and
the row's exact bytes, so a row's forecast never depends on what else was batched with
it. Built the plain way (``np.random.default_rng([seed, *sha256 words])``) that costs
~45 µs a row, and an exhaustive planner asks for 256 rows a decision: most of a random
walk's closed-loop time. Here the rows' seed sequences are mixed together in NumPy and
one PCG64 is set to each row's state: the same numbers, several times faster.

The mixing follows NumPy's ``SeedSequence`` and PCG64 seeding, whose streams NumPy
keeps stable across versions (NEP 19). Should a NumPy ever seed differently, the first
request of a process compares one row with the plain way and, when they differ, every
request is answered the plain way from then on: never different numbers.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["request_normals", "request_rng"]

_MASK32 = 0xFFFF_FFFF
_INIT_A, _MULT_A = 0x43B0_D7E5, 0x931E_8875
_INIT_B, _MULT_B = 0x8B51_F9DD, 0x58F3_8DED
_MIX_LEFT, _MIX_RIGHT = 0xCA01_F9DD, 0x4973_F715
_POOL_SIZE = 4
_PCG_MULTIPLIER = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645
_MASK128 = (1 << 128) - 1

_fast_path_agrees: bool | None = None
"""Whether this NumPy seeds as mixed here: unknown until the first request."""


def request_rng(seed: int, states: NDArray[Any], actions: NDArray[Any]) -> np.random.Generator:
    """A generator seeded by ``seed`` and the exact bytes of one request: the plain way,
    the reference ``request_normals`` agrees with."""
    digest = hashlib.sha256()
    for array in (states, np.asarray(actions, dtype=np.float64)):
        digest.update(repr(array.shape).encode())
        digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
    words = np.frombuffer(digest.digest(), dtype="<u4")
    return np.random.default_rng([seed, *(int(w) for w in words)])


def request_normals(
    seed: int, states: NDArray[Any], actions: NDArray[Any], shape: tuple[int, ...]
) -> NDArray[np.float64]:
    """``[N, *shape]`` standard normals: row ``n`` is exactly
    ``request_rng(seed, states[n:n+1], actions[n:n+1]).standard_normal(shape)``."""
    global _fast_path_agrees
    if len(states) == 0:
        return np.empty((0, *shape))
    if _fast_path_agrees is None:
        plain = request_rng(seed, states[:1], actions[:1]).standard_normal(shape)
        _fast_path_agrees = bool(
            np.array_equal(_mixed_normals(seed, states[:1], actions[:1], shape)[0], plain)
        )
    if _fast_path_agrees:
        return _mixed_normals(seed, states, actions, shape)
    out = np.empty((len(states), *shape))
    for n in range(len(states)):
        out[n] = request_rng(seed, states[n : n + 1], actions[n : n + 1]).standard_normal(shape)
    return out


def _mixed_normals(
    seed: int, states: NDArray[Any], actions: NDArray[Any], shape: tuple[int, ...]
) -> NDArray[np.float64]:
    seed_words = _int_words(seed)
    entropy = np.concatenate(
        [np.broadcast_to(seed_words, (len(states), len(seed_words))), _row_words(states, actions)],
        axis=1,
    )
    pool = _mix_entropy(entropy)
    bit_generator = np.random.PCG64(0)  # its state is set for each row below
    generator = np.random.Generator(bit_generator)
    out = np.empty((len(states), *shape))
    for n, (initstate, initseq) in enumerate(_pcg_seeds(pool)):
        state, increment = _pcg_state(initstate, initseq)
        bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": increment},
            "has_uint32": 0,
            "uinteger": 0,
        }
        out[n] = generator.standard_normal(shape)
    return out


def _row_words(states: NDArray[Any], actions: NDArray[Any]) -> NDArray[np.uint32]:
    """``[N, 8]`` words of each row's sha256, hashed as ``request_rng`` hashes a row."""
    state_rows = np.ascontiguousarray(states, dtype="<f8")
    action_rows = np.ascontiguousarray(np.asarray(actions, dtype=np.float64), dtype="<f8")
    state_shape = repr((1, *state_rows.shape[1:])).encode()
    action_shape = repr((1, *action_rows.shape[1:])).encode()
    digests = b"".join(
        hashlib.sha256(
            state_shape + state_rows[n].tobytes() + action_shape + action_rows[n].tobytes()
        ).digest()
        for n in range(len(state_rows))
    )
    return np.frombuffer(digests, dtype="<u4").reshape(len(state_rows), 8).astype(np.uint32)


def _int_words(value: int) -> NDArray[np.uint32]:
    """An entropy integer as ``SeedSequence`` splits it: 32-bit words, least first."""
    if value < 0:
        raise ValueError(f"a seed must be a non-negative integer, got {value}")
    words = [value & _MASK32] if value == 0 else []
    while value > 0:
        words.append(value & _MASK32)
        value >>= 32
    return np.array(words, dtype=np.uint32)


class _HashConstant:
    """The running constant of ``SeedSequence``'s hash: the same for every row, as it
    depends only on how many words were hashed before."""

    def __init__(self, initial: int, multiplier: int) -> None:
        self.value = initial
        self.multiplier = multiplier

    def hash(self, words: NDArray[np.uint32]) -> NDArray[np.uint32]:
        mixed = words ^ np.uint32(self.value)
        self.value = (self.value * self.multiplier) & _MASK32
        mixed = mixed * np.uint32(self.value)
        return mixed ^ (mixed >> np.uint32(16))


def _mix(left: NDArray[np.uint32], right: NDArray[np.uint32]) -> NDArray[np.uint32]:
    result: NDArray[np.uint32] = np.uint32(_MIX_LEFT) * left - np.uint32(_MIX_RIGHT) * right
    mixed: NDArray[np.uint32] = result ^ (result >> np.uint32(16))
    return mixed


def _mix_entropy(entropy: NDArray[np.uint32]) -> list[NDArray[np.uint32]]:
    """Each row's ``SeedSequence`` pool, as ``_POOL_SIZE`` columns of ``[N]`` words."""
    constant = _HashConstant(_INIT_A, _MULT_A)
    zeros = np.zeros(len(entropy), dtype=np.uint32)
    pool = [
        constant.hash(entropy[:, i] if i < entropy.shape[1] else zeros) for i in range(_POOL_SIZE)
    ]
    for source in range(_POOL_SIZE):
        for target in range(_POOL_SIZE):
            if source != target:
                pool[target] = _mix(pool[target], constant.hash(pool[source]))
    for source in range(_POOL_SIZE, entropy.shape[1]):
        for target in range(_POOL_SIZE):
            pool[target] = _mix(pool[target], constant.hash(entropy[:, source]))
    return pool


def _pcg_seeds(pool: list[NDArray[np.uint32]]) -> list[tuple[int, int]]:
    """Each row's PCG64 ``(initstate, initseq)``: ``generate_state(4, uint64)`` of its
    pool, two 64-bit words each, the first the high half."""
    constant = _HashConstant(_INIT_B, _MULT_B)
    words = [constant.hash(pool[i % _POOL_SIZE]).astype(np.uint64) for i in range(8)]
    halves = [words[2 * k] | (words[2 * k + 1] << np.uint64(32)) for k in range(4)]
    return [
        ((int(a) << 64) | int(b), (int(c) << 64) | int(d))
        for a, b, c, d in zip(*(h.tolist() for h in halves), strict=True)
    ]


def _pcg_state(initstate: int, initseq: int) -> tuple[int, int]:
    """PCG64's state and increment after seeding: one step from zero, ``initstate``
    added, one step."""
    increment = (initseq << 1 | 1) & _MASK128
    state = (increment + initstate) & _MASK128  # 0 * multiplier + increment, then added
    return (state * _PCG_MULTIPLIER + increment) & _MASK128, increment
