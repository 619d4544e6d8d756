"""The batched noise of random-walk and ensemble forecasts and plans gives exactly the
numbers of one plainly seeded generator per row, and the ensemble's batched mean exactly
the mean of its members' own forecasts: faster, never different."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from onrecord.dynamics import (
    BootstrapEnsembleModel,
    RandomModel,
    Transitions,
    _request_noise,
    get_simulator,
)
from onrecord.dynamics._references import capture_plan, random_plan
from onrecord.dynamics._request_noise import request_normals, request_rng

_FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _plain(seed: int, states: Any, actions: Any, shape: tuple[int, ...]) -> np.ndarray:
    return np.stack(
        [
            request_rng(seed, states[n : n + 1], actions[n : n + 1]).standard_normal(shape)
            for n in range(len(states))
        ]
    )


@st.composite
def _requests(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray, tuple[int, ...]]:
    rows = draw(st.integers(1, 6))
    seed = draw(st.one_of(st.integers(0, 2**32 + 5), st.integers(0, 2**80)))
    states = draw(hnp.arrays(np.float64, (rows, draw(st.integers(1, 5))), elements=_FLOATS))
    action_shape = (rows, draw(st.integers(1, 9)), *draw(st.sampled_from([(), (1,), (2,)])))
    dtype = draw(st.sampled_from([np.int64, np.float32, np.float64]))
    elements = st.integers(0, 3) if dtype is np.int64 else st.floats(-2, 2, width=32)
    actions = draw(hnp.arrays(dtype, action_shape, elements=elements))
    shape = draw(st.sampled_from([(3,), (2, 4), (1, 3, 2, 2)]))
    return seed, states, actions, shape


@given(_requests())
def test_every_row_gets_the_numbers_of_its_own_plainly_seeded_generator(
    request_: tuple[int, np.ndarray, np.ndarray, tuple[int, ...]],
) -> None:
    seed, states, actions, shape = request_
    assert np.array_equal(
        _request_noise._mixed_normals(seed, states, actions, shape), _plain(*request_)
    )
    assert np.array_equal(request_normals(seed, states, actions, shape), _plain(*request_))


def test_a_row_answers_the_same_in_any_batch() -> None:
    rng = np.random.default_rng(3)
    states, actions = rng.normal(size=(8, 4)), rng.integers(0, 2, (8, 6))
    whole = request_normals(11, states, actions, (6, 4))
    alone = request_normals(11, states[5:6], actions[5:6], (6, 4))
    assert np.array_equal(whole[5], alone[0])
    assert not np.array_equal(whole[4], whole[5])  # rows differ: each is seeded by its bytes


def test_a_numpy_seeding_otherwise_falls_back_to_the_plain_generators(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Should a NumPy seed its generators another way, the first request finds out and
    every request is answered the plain way: never numbers of another generator."""
    monkeypatch.setattr(_request_noise, "_fast_path_agrees", None)
    monkeypatch.setattr(
        _request_noise, "_mixed_normals", lambda seed, s, a, shape: np.zeros((len(s), *shape))
    )
    rng = np.random.default_rng(4)
    states, actions = rng.normal(size=(3, 4)), rng.integers(0, 2, (3, 5))
    got = request_normals(2, states, actions, (5, 4))
    assert _request_noise._fast_path_agrees is False
    assert np.array_equal(got, _plain(2, states, actions, (5, 4)))


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"])
def test_the_ensembles_plans_and_forecasts_are_its_members_own(env_id: str) -> None:
    simulator = get_simulator(env_id)
    seeds = range(40, 46)
    plans = [random_plan(simulator, 30, np.random.default_rng(s)) for s in seeds]
    episodes = [
        capture_plan(simulator, plan, case_id=f"t-{s}", seed=s)
        for s, plan in zip(seeds, plans, strict=True)
    ]
    transitions = Transitions.from_episodes(episodes)
    ensemble = BootstrapEnsembleModel(simulator, members=5, particles=3, seed=9)
    ensemble.fit(transitions)
    count = len(simulator.actions)
    indices = np.array(list(itertools.product(range(count), repeat=4)))[:64]
    actions = np.asarray([simulator.actions[i] for i in range(count)])[indices]
    states = np.repeat(transitions.states[7:8], len(indices), axis=0)
    members = [m.predict(states, actions, uncertainty=False).mean for m in ensemble._models]
    planned = ensemble.predict(states, actions, uncertainty=False)
    assert np.array_equal(planned.mean, np.mean(members, axis=0))
    # And a forecast with uncertainty draws the same noise whichever rows share its
    # batch (to rounding: BLAS may sum a product of 3 rows and of 6 in other orders).
    both = ensemble.predict(transitions.states[:2], actions[:2])
    second = ensemble.predict(transitions.states[1:2], actions[1:2])
    assert np.allclose(both.mean[1], second.mean[0], rtol=1e-12, atol=1e-12)
    assert np.allclose(both.std[1], second.std[0], rtol=1e-9, atol=1e-12)
    assert not np.allclose(both.mean[0], both.mean[1])


def test_the_random_walk_is_the_plain_generators_walk() -> None:
    simulator = get_simulator("CartPole-v1")
    model = RandomModel(simulator, seed=5)
    rng = np.random.default_rng(8)
    states, actions = rng.normal(size=(4, 4)), rng.integers(0, 2, (4, 7))
    walk = model.predict(states, actions).mean
    steps = _plain(5, states, actions, (7, 4))
    assert np.array_equal(walk, states[:, None, :] + np.cumsum(steps * 1.0, axis=1))
