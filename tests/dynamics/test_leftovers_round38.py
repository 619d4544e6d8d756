"""Round 38 leftovers in world-model evaluation: an effect table counts the pairs it
left out for a failed forecast, and the oracle steps CartPole past its fall without
Gymnasium's "already returned terminated" warning reaching the user."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from onrecord.dynamics import (
    OracleModel,
    capture_forecast,
    capture_pairs,
    effect_table,
    get_simulator,
    request_predictor,
)


def test_effect_table_counts_the_pairs_it_skips_for_a_model_error() -> None:
    cartpole = get_simulator("CartPole-v1")
    starts = [[0.0, 0.0, 0.01 * n, 0.0] for n in range(3)]
    pairs = capture_pairs(cartpole, starts, kind="action", length=3, seed=1)
    exact = request_predictor(OracleModel(cartpole))
    calls = {"n": 0}

    def fails_once(request: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 2:  # the second pair's variant arm
            raise RuntimeError("model crashed")
        return exact(request)

    spec: dict[str, Any] = {
        "model_id": "flaky/v1",
        "contract": cartpole.contract,
        "coordinates": cartpole.coordinates,
        "horizons": [1, 2],
    }
    base, variant = [], []
    for pair in pairs:
        base.append(capture_forecast(pair.base, exact, planned_actions=pair.base_plan, **spec))
        variant.append(
            capture_forecast(pair.variant, fails_once, planned_actions=pair.variant_plan, **spec)
        )
    assert [v.status for v in variant] == ["ok", "model_error", "ok"]

    table = effect_table(base, variant)

    assert table.skipped_pairs == 1
    assert (table.pairs == 2).all()  # the two measured pairs, not three


def test_effect_table_of_only_failed_pairs_says_all_were_skipped() -> None:
    cartpole = get_simulator("CartPole-v1")
    [pair] = capture_pairs(cartpole, [[0.0, 0.0, 0.0, 0.0]], kind="action", length=2, seed=2)

    def broken(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model crashed")

    spec: dict[str, Any] = {
        "model_id": "broken/v1",
        "contract": cartpole.contract,
        "coordinates": cartpole.coordinates,
        "horizons": [1],
    }
    base = capture_forecast(pair.base, broken, planned_actions=pair.base_plan, **spec)
    variant = capture_forecast(pair.variant, broken, planned_actions=pair.variant_plan, **spec)

    table = effect_table([base], [variant])

    assert table.skipped_pairs == 1
    assert (table.pairs == 0).all()


def test_oracle_steps_cartpole_past_its_fall_without_a_gymnasium_warning() -> None:
    cartpole = get_simulator("CartPole-v1")
    oracle = OracleModel(cartpole)
    falling = np.array([[0.0, 0.0, 0.2, 0.0]])  # past the 12 degree limit at once
    pushes = np.ones((1, 20), dtype=np.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = oracle.predict(falling, pushes).mean
        again = oracle.predict(falling, pushes).mean  # a second rollout on the same env
    assert [str(w.message) for w in caught] == []
    # Still the equations' own continuation, as the vector path (several states) gives it.
    both = oracle.predict(np.repeat(falling, 2, axis=0), np.repeat(pushes, 2, axis=0)).mean
    assert np.array_equal(first, again)
    assert np.allclose(first[0], both[0])
