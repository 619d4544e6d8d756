"""Bayesian ridge regression with its two precisions estimated from the data (evidence
maximization: MacKay 1992, "Bayesian interpolation"; Bishop, *Pattern Recognition and
Machine Learning*, section 3.5.2).

The model of each target is ``y = x @ w + b + noise``, with a Gaussian prior of precision
``lambda`` on the weights ``w`` and Gaussian noise of precision ``alpha``. Both precisions
get the uninformative Gamma(1e-6, 1e-6) prior and are re-estimated by MacKay's fixed-point
updates until the weights stop moving; the result is the posterior mean of ``w``, its
covariance and the noise variance ``1 / alpha``. These are the defaults and the update
order of scikit-learn's ``BayesianRidge`` (the tests check the two agree), computed here
for every target at once from one SVD of the shared inputs, without importing
scikit-learn: its import alone took ~2 s of every ``worldmodel run``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from onrecord.dynamics._protocol import FloatArray

__all__ = ["RidgeFit", "fit_bayes_ridge"]

GAMMA_PRIOR = 1e-6
"""Shape and rate of the Gamma priors on both precisions (nearly flat)."""
MAX_ITERATIONS = 300
TOLERANCE = 1e-3
"""The updates stop once the weights move by less than this (sum of absolute changes)."""
_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class RidgeFit:
    """One fitted regression per target column: ``targets ≈ inputs @ coef.T + intercept``."""

    coef: FloatArray  # [d, p] posterior mean of the weights
    intercept: FloatArray  # [d]
    offset: FloatArray  # [p] the inputs' means, where the covariance is centred
    sigma: FloatArray  # [d, p, p] posterior covariance of the weights
    noise: FloatArray  # [d] noise variance, 1 / alpha


@dataclass(frozen=True)
class _Decomposition:
    """The centred inputs' SVD, shared by every target: ``inputs = u @ diag(s) @ vh``."""

    inputs: FloatArray  # [n, p], centred
    u: FloatArray
    eigen: FloatArray  # [k] squared singular values
    vh: FloatArray  # [k, p]
    vh_full: FloatArray  # [p, p]

    @classmethod
    def of(cls, inputs: FloatArray) -> _Decomposition:
        count, width = inputs.shape
        # The full right basis is needed for the covariance when there are fewer rows
        # than features (the directions the data never saw keep the prior's variance).
        u, singular, vh_full = np.linalg.svd(inputs, full_matrices=count < width)
        return cls(inputs, u, singular**2, vh_full[: len(singular)], vh_full)

    def weights(self, target: FloatArray, ratio: float) -> tuple[FloatArray, float]:
        """The posterior mean ``(X'X + ratio I)^-1 X'y`` (ratio = lambda / alpha) and its
        sum of squared residuals."""
        count, width = self.inputs.shape
        shrink = self.eigen + ratio
        if count > width:
            weights = self.vh.T @ ((self.vh @ (self.inputs.T @ target)) / shrink)
        else:
            weights = self.inputs.T @ (self.u @ ((self.u.T @ target) / shrink))
        residual = target - self.inputs @ weights
        return weights, float(residual @ residual)

    def covariance(self, alpha: float, lam: float) -> FloatArray:
        """The weights' posterior covariance ``(alpha X'X + lambda I)^-1``."""
        eigen = np.zeros(self.vh_full.shape[0])
        eigen[: len(self.eigen)] = self.eigen
        covariance: FloatArray = self.vh_full.T @ (self.vh_full / (alpha * eigen + lam)[:, None])
        return covariance


def fit_bayes_ridge(inputs: FloatArray, targets: FloatArray) -> RidgeFit:
    """Fit ``targets`` ([n, d]) on ``inputs`` ([n, p]) with an intercept per target."""
    inputs = np.asarray(inputs, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    offset = inputs.mean(axis=0)
    target_means = targets.mean(axis=0)
    decomposition = _Decomposition.of(inputs - offset)
    fits = [_fit_one(decomposition, column) for column in (targets - target_means).T]
    width = inputs.shape[1]
    coef = np.array([weights for weights, _, _ in fits]).reshape(-1, width)
    return RidgeFit(
        coef=coef,
        intercept=target_means - coef @ offset,
        offset=offset,
        sigma=np.array([sigma for _, sigma, _ in fits]).reshape(-1, width, width),
        noise=np.array([noise for _, _, noise in fits]),
    )


def _fit_one(
    decomposition: _Decomposition, target: FloatArray
) -> tuple[FloatArray, FloatArray, float]:
    """The weights, their covariance and the noise variance of one centred target."""
    alpha, lam = _precisions(decomposition, target)
    weights, _ = decomposition.weights(target, lam / alpha)
    return weights, decomposition.covariance(alpha, lam), 1.0 / alpha


def _precisions(decomposition: _Decomposition, target: FloatArray) -> tuple[float, float]:
    """MacKay's fixed point: ``gamma`` (how many weights the data determine) sets the
    weight precision from the weights' size and the noise precision from the residuals."""
    count = target.shape[0]
    alpha = 1.0 / (float(np.var(target)) + _EPS)
    lam = 1.0
    previous: FloatArray | None = None
    for _ in range(MAX_ITERATIONS):
        weights, squared_error = decomposition.weights(target, lam / alpha)
        scaled = alpha * decomposition.eigen
        gamma = float(np.sum(scaled / (lam + scaled)))
        lam = (gamma + 2 * GAMMA_PRIOR) / (float(weights @ weights) + 2 * GAMMA_PRIOR)
        alpha = (count - gamma + 2 * GAMMA_PRIOR) / (squared_error + 2 * GAMMA_PRIOR)
        if previous is not None and float(np.sum(np.abs(previous - weights))) < TOLERANCE:
            break
        previous = weights
    return alpha, lam
