"""The Bayesian ridge regression behind ``BayesianLinearModel``: scikit-learn's
``BayesianRidge`` (installed with the test extras) is the reference it must agree with,
on random designs of every shape, and the world models must not import scikit-learn."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import BayesianRidge

from onrecord.dynamics import BayesianLinearModel, Transitions, get_simulator
from onrecord.dynamics._bayes_ridge import fit_bayes_ridge
from onrecord.errors import InputError


def _close(ours: np.ndarray, reference: np.ndarray, tolerance: float = 1e-7) -> bool:
    """Equal up to ``tolerance`` of the reference's largest magnitude."""
    scale = float(np.abs(reference).max())
    return float(np.abs(ours - reference).max()) <= tolerance * max(scale, 1e-300)


def _design(seed: int, rows: int, width: int, targets: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = rng.normal(size=(rows, width)) * rng.uniform(0.01, 100.0, size=width)
    weights = rng.normal(size=(width, targets))
    noise = rng.normal(size=(rows, targets)) * rng.uniform(1e-4, 3.0, size=targets)
    return inputs, inputs @ weights + noise + rng.normal(size=targets)


@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(2, 80),
    width=st.integers(1, 12),
    targets=st.integers(1, 5),
)
def test_every_target_agrees_with_scikit_learns_bayesian_ridge(
    seed: int, rows: int, width: int, targets: int
) -> None:
    # More, fewer or as many rows as features: the covariance then keeps the prior's
    # variance in the directions the data never saw.
    inputs, outputs = _design(seed, rows, width, targets)
    fit = fit_bayes_ridge(inputs, outputs)
    for column in range(targets):
        reference = BayesianRidge().fit(inputs, outputs[:, column])
        fitted = inputs @ fit.coef[column] + fit.intercept[column]
        assert _close(fitted, reference.predict(inputs)), column
        assert _close(fit.sigma[column], reference.sigma_), column
        assert _close(fit.noise[column], np.asarray(1.0 / reference.alpha_)), column
        assert np.array_equal(fit.offset, reference.X_offset_)
        if rows > width + 1:  # the weights themselves are determined by the data
            assert _close(fit.coef[column], reference.coef_, 1e-6), column


def test_constant_and_duplicated_columns_are_fitted_as_the_reference_fits_them() -> None:
    inputs, outputs = _design(7, 40, 4, 2)
    inputs[:, 3] = 2.0 * inputs[:, 0]  # a feature that is another one, scaled
    outputs[:, 1] = 1.5  # a coordinate that never changes
    fit = fit_bayes_ridge(inputs, outputs)
    for column in range(2):
        reference = BayesianRidge().fit(inputs, outputs[:, column])
        fitted = inputs @ fit.coef[column] + fit.intercept[column]
        assert _close(fitted, reference.predict(inputs))
        assert _close(fit.noise[column], np.asarray(1.0 / reference.alpha_))
    assert np.allclose(inputs @ fit.coef[1] + fit.intercept[1], 1.5)


def test_known_dynamics_and_their_noise_are_recovered() -> None:
    rng = np.random.default_rng(3)
    inputs = rng.normal(size=(5000, 3))
    truth = np.array([[0.5, -2.0, 0.0], [1.0, 0.25, 3.0]])
    outputs = inputs @ truth.T + np.array([0.1, -0.3]) + rng.normal(size=(5000, 2)) * [0.05, 0.2]
    fit = fit_bayes_ridge(inputs, outputs)
    assert np.allclose(fit.coef, truth, atol=0.02)
    assert np.allclose(fit.intercept, [0.1, -0.3], atol=0.02)
    assert np.allclose(np.sqrt(fit.noise), [0.05, 0.2], rtol=0.05)
    # More data, surer weights: the posterior variance shrinks roughly as 1 / n.
    fewer = fit_bayes_ridge(inputs[:500], outputs[:500])
    assert np.all(
        np.diagonal(fewer.sigma, axis1=1, axis2=2) > 5 * np.diagonal(fit.sigma, axis1=1, axis2=2)
    )


def test_fitting_the_world_models_does_not_import_scikit_learn() -> None:
    code = textwrap.dedent(
        """
        import sys
        import gymnasium as gym
        import numpy as np
        from onrecord.dynamics import BayesianLinearModel, BootstrapEnsembleModel
        from onrecord.dynamics import Transitions, get_simulator

        env = gym.make("CartPole-v1")
        env.reset(seed=0)
        env.action_space.seed(0)
        states, actions, after = [], [], []
        for _ in range(200):
            before = np.array(env.unwrapped.state, dtype=float)
            action = env.action_space.sample()
            *_, terminated, truncated, _ = env.step(action)
            states.append(before), actions.append(action)
            after.append(np.array(env.unwrapped.state, dtype=float))
            if terminated or truncated:
                env.reset()
        data = Transitions(np.array(states), np.array(actions), np.array(after))
        simulator = get_simulator("CartPole-v1")
        for model in (BayesianLinearModel(simulator), BootstrapEnsembleModel(simulator)):
            model.fit(data)
            assert np.isfinite(model.predict(data.states[:3], np.zeros((3, 5), int)).mean).all()
        print(sorted(name for name in sys.modules if name.split(".")[0] == "sklearn"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("field", "value"), [("states", np.nan), ("next_states", np.inf)])
def test_a_transition_holding_nan_or_infinity_is_named_not_fitted(field: str, value: float) -> None:
    # scikit-learn refused these with its own ValueError; a bare SVD would fail with
    # "SVD did not converge", naming nothing.
    states = np.random.default_rng(0).normal(size=(30, 4))
    arrays = {"states": states, "next_states": states + 0.01}
    arrays[field][7, 2] = value
    model = BayesianLinearModel(get_simulator("CartPole-v1"))
    with pytest.raises(InputError, match=rf"Transitions\.{field}\[7\] holds NaN or an infinity"):
        model.fit(Transitions(arrays["states"], np.zeros(30, int), arrays["next_states"]))
    with pytest.raises(InputError, match="is not fitted"):
        model.predict(states[:1], np.zeros((1, 3), int))
