"""Shipped world models: persistence, Bayesian linear regression on state deltas (with
or without the action), a bootstrap ensemble with particle propagation, and a random
walk that serves as the floor when closed-loop scores are normalized.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._angles import wrap_angles
from onrecord.dynamics._bayes_ridge import fit_bayes_ridge
from onrecord.dynamics._envs import Simulator
from onrecord.dynamics._protocol import FloatArray, Prediction, Transitions
from onrecord.dynamics._request_noise import request_normals
from onrecord.errors import InputError

__all__ = ["BayesianLinearModel", "BootstrapEnsembleModel", "PersistenceModel", "RandomModel"]


def _check_inputs(
    simulator: Simulator, initial: Any, actions: Any
) -> tuple[FloatArray, NDArray[Any]]:
    states = np.asarray(initial, dtype=np.float64)
    acts = np.asarray(actions)
    if states.ndim != 2 or states.shape[1] != simulator.dimension:
        raise InputError(f"initial_states must be [N, {simulator.dimension}], got {states.shape}")
    if acts.ndim < 2 or acts.shape[0] != states.shape[0]:
        raise InputError(
            f"actions must be [N, H] or [N, H, a] with N={states.shape[0]}, got {acts.shape}"
        )
    return states, acts


def _refuse_non_finite(transitions: Transitions, encoded: FloatArray) -> None:
    """A regression cannot fit NaN or infinite values (they would only make its
    decomposition fail): name the first transition holding one."""
    for field, values in (
        ("states", transitions.states),
        ("next_states", transitions.next_states),
        ("actions", encoded),
    ):
        finite = np.isfinite(np.asarray(values, dtype=np.float64))
        if not finite.all():
            row = int(np.flatnonzero(~finite.reshape(len(finite), -1).all(axis=1))[0])
            raise InputError(
                f"Transitions.{field}[{row}] holds NaN or an infinity, which a Bayesian "
                "linear model cannot fit: drop the transitions holding one before fit()"
            )


class PersistenceModel:
    """Predicts that nothing changes: every future state equals the initial state."""

    def __init__(self, simulator: Simulator, model_id: str = "persistence/v1") -> None:
        self.simulator = simulator
        self.model_id = model_id

    def fit(self, transitions: Transitions) -> None:
        """Persistence learns nothing."""

    def predict(
        self, initial_states: FloatArray, actions: NDArray[Any], *, uncertainty: bool = True
    ) -> Prediction:
        """The initial state repeated ``H`` times, without uncertainty."""
        states, acts = _check_inputs(self.simulator, initial_states, actions)
        horizon = acts.shape[1]
        return Prediction(np.repeat(states[:, None, :], horizon, axis=1))

    def describe(self) -> dict[str, Any]:
        """Persistence has no parameters."""
        return {"kind": "persistence", "model_id": self.model_id}


@dataclass(frozen=True)
class _LinearParams:
    coef: FloatArray  # [d, p]
    intercept: FloatArray  # [d]
    offset: FloatArray  # [d, p] feature means the posterior covariance is centred on
    sigma: FloatArray  # [d, p, p] posterior covariance of the coefficients
    noise: FloatArray  # [d] noise variance 1 / alpha


class BayesianLinearModel:
    """Bayesian ridge regression of the state change (``_bayes_ridge``: the precisions
    of the weights and the noise estimated from the data, as scikit-learn's
    ``BayesianRidge`` does).

    Features are the state, ``sin``/``cos`` of angular coordinates and, unless
    ``action_conditioned=False`` (the action-removal control), the action. Forecasts
    propagate the full state covariance through the linearized dynamics, adding the
    noise and coefficient uncertainty of every step.
    """

    def __init__(
        self, simulator: Simulator, *, action_conditioned: bool = True, model_id: str | None = None
    ) -> None:
        self.simulator = simulator
        self.action_conditioned = action_conditioned
        default = "bayes-linear/v1" if action_conditioned else "bayes-linear-blind/v1"
        self.model_id = model_id or default
        self._angular = np.array([c.angular for c in simulator.coordinates])
        self._params: _LinearParams | None = None
        self._action_width = 0

    def features(self, states: FloatArray, encoded_actions: FloatArray) -> FloatArray:
        """Regression inputs for ``[..., d]`` states and ``[..., k]`` encoded actions."""
        parts = [states]
        if self._angular.any():
            angles = states[..., self._angular]
            parts += [np.sin(angles), np.cos(angles)]
        if self.action_conditioned:
            parts.append(encoded_actions)
        return np.concatenate(parts, axis=-1)

    def fit(self, transitions: Transitions) -> None:
        """Fit one Bayesian ridge regression per coordinate of the state change."""
        encoded = self.simulator.action_features(transitions.actions)
        _refuse_non_finite(transitions, encoded)
        self._action_width = encoded.shape[-1]
        inputs = self.features(transitions.states, encoded)
        deltas = transitions.next_states - transitions.states
        wrap_angles(deltas, self._angular)
        fit = fit_bayes_ridge(inputs, deltas)
        self._params = _LinearParams(
            coef=fit.coef,
            intercept=fit.intercept,
            offset=np.tile(fit.offset, (fit.coef.shape[0], 1)),  # one row per coordinate
            sigma=fit.sigma,
            noise=fit.noise,
        )

    @property
    def params(self) -> _LinearParams:
        if self._params is None:
            raise InputError(f"{self.model_id} is not fitted: call fit(transitions) first")
        return self._params

    def predict(
        self, initial_states: FloatArray, actions: NDArray[Any], *, uncertainty: bool = True
    ) -> Prediction:
        """Mean trajectories and, unless ``uncertainty=False``, propagated std."""
        states, acts = _check_inputs(self.simulator, initial_states, actions)
        encoded = self.simulator.action_features(acts)
        params = self.params
        count, horizon, dim = states.shape[0], acts.shape[1], states.shape[1]
        means = np.empty((count, horizon, dim))
        variances = np.empty((count, horizon, dim)) if uncertainty else None
        cov = np.zeros((count, dim, dim))
        mean = states
        for step in range(horizon):
            inputs = self.features(mean, encoded[:, step])
            if variances is not None:
                cov = self._propagate(params, mean, inputs, cov)
                variances[:, step] = np.diagonal(cov, axis1=1, axis2=2)
            mean = mean + inputs @ params.coef.T + params.intercept
            means[:, step] = mean
        std = None if variances is None else np.sqrt(variances)
        return Prediction(means, std)

    def _jacobian(self, mean: FloatArray) -> FloatArray:
        """``[N, p, d]`` derivative of the features with respect to the state."""
        count, dim = mean.shape
        blocks = [np.broadcast_to(np.eye(dim), (count, dim, dim))]
        if self._angular.any():
            columns = np.flatnonzero(self._angular)
            sin_block = np.zeros((count, len(columns), dim))
            cos_block = np.zeros((count, len(columns), dim))
            rows = np.arange(len(columns))
            sin_block[:, rows, columns] = np.cos(mean[:, columns])
            cos_block[:, rows, columns] = -np.sin(mean[:, columns])
            blocks += [sin_block, cos_block]
        if self.action_conditioned:
            blocks.append(np.zeros((count, self._action_width, dim)))
        return np.concatenate(blocks, axis=1)

    def _propagate(
        self, params: _LinearParams, mean: FloatArray, inputs: FloatArray, cov: FloatArray
    ) -> FloatArray:
        jac = self._jacobian(mean)
        transition = np.eye(mean.shape[1]) + np.einsum("dp,npe->nde", params.coef, jac)
        centred = inputs[:, None, :] - params.offset[None]
        coef_var = np.einsum("ndp,dpq,ndq->nd", centred, params.sigma, centred)
        # Coefficient uncertainty also acts on the state uncertainty: E[x'Sx] adds tr(S cov).
        state_in_feature = np.einsum("npe,nef,nqf->npq", jac, cov, jac)
        coef_state = np.einsum("dpq,nqp->nd", params.sigma, state_in_feature)
        added = params.noise + coef_var + coef_state
        new_cov: FloatArray = transition @ cov @ transition.transpose(0, 2, 1)
        new_cov[:, np.arange(mean.shape[1]), np.arange(mean.shape[1])] += added
        return new_cov

    def describe(self) -> dict[str, Any]:
        """Every fitted parameter, so a saved model can be inspected without refitting."""
        params = self.params
        return {
            "kind": "bayes-linear",
            "model_id": self.model_id,
            "action_conditioned": self.action_conditioned,
            "coef": params.coef.tolist(),
            "intercept": params.intercept.tolist(),
            "offset": params.offset.tolist(),
            "sigma": params.sigma.tolist(),
            "noise_variance": params.noise.tolist(),
        }


class BootstrapEnsembleModel:
    """``members`` Bayesian linear models fitted on bootstrap resamples.

    With uncertainty, each member propagates ``particles`` trajectories with its own
    sampled process noise; the forecast is the particles' mean and spread. Without
    uncertainty (planning), it averages the members' noise-free trajectories.
    """

    def __init__(
        self,
        simulator: Simulator,
        *,
        members: int = 8,
        particles: int = 4,
        seed: int = 0,
        model_id: str = "bootstrap-ensemble/v1",
    ) -> None:
        if members < 2 or particles < 1:
            raise InputError(
                f"BootstrapEnsembleModel needs members >= 2 and particles >= 1,"
                f" got members={members}, particles={particles}"
            )
        self.simulator = simulator
        self.model_id = model_id
        self.members = members
        self.particles = particles
        self.seed = seed
        self._models: list[BayesianLinearModel] = []

    def fit(self, transitions: Transitions) -> None:
        """Fit every member on its own bootstrap resample."""
        rng = np.random.default_rng(self.seed)
        self._models = []
        for _ in range(self.members):
            member = BayesianLinearModel(self.simulator)
            member.fit(transitions.resample(rng))
            self._models.append(member)

    def predict(
        self, initial_states: FloatArray, actions: NDArray[Any], *, uncertainty: bool = True
    ) -> Prediction:
        """Particle mean and std, or the members' average trajectory."""
        states, acts = _check_inputs(self.simulator, initial_states, actions)
        if not self._models:
            raise InputError(f"{self.model_id} is not fitted: call fit(transitions) first")
        if not uncertainty:
            return Prediction(self._mean_of_members(states, acts))
        # Each reference's noise comes from the seed and that reference's own request
        # (as RandomModel's does): one shared generator would make a forecast depend on
        # which other references shared its batch, and on their order.
        horizon, dim = acts.shape[1], states.shape[1]
        noise = request_normals(
            self.seed, states, acts, (len(self._models), horizon, self.particles, dim)
        )
        samples = [
            self._particles(member, states, acts, noise[:, k])
            for k, member in enumerate(self._models)
        ]
        return Prediction.from_samples(np.concatenate(samples, axis=1))

    def _mean_of_members(self, states: FloatArray, acts: NDArray[Any]) -> FloatArray:
        """The members' noise-free trajectories averaged: every member stepped at once
        (one ``[members, N, p]`` product a step, not one call per member, as planners
        ask for it hundreds of times an episode), with the same arithmetic, in the same
        order, as each member's own ``predict(..., uncertainty=False)``."""
        first = self._models[0]
        coef = np.stack([m.params.coef for m in self._models]).transpose(0, 2, 1)  # [M, p, d]
        intercept = np.stack([m.params.intercept for m in self._models])[:, None, :]
        encoded = self.simulator.action_features(acts)
        count, horizon, dim = states.shape[0], acts.shape[1], states.shape[1]
        members = len(self._models)
        means = np.empty((members, count, horizon, dim))
        mean = np.broadcast_to(states, (members, count, dim))
        for step in range(horizon):
            step_actions = np.broadcast_to(encoded[:, step], (members, *encoded[:, step].shape))
            inputs = first.features(mean, step_actions)
            mean = mean + inputs @ coef + intercept
            means[:, :, step] = mean
        averaged: FloatArray = np.mean(means, axis=0)
        return averaged

    def _particles(
        self,
        member: BayesianLinearModel,
        states: FloatArray,
        acts: NDArray[Any],
        noise: FloatArray,
    ) -> FloatArray:
        """``[N, particles, H, d]`` trajectories of one member; ``noise`` is its
        ``[N, H, particles, d]`` standard normal process noise."""
        params = member.params
        count, horizon = acts.shape[:2]
        encoded = np.repeat(self.simulator.action_features(acts), self.particles, axis=0)
        current = np.repeat(states, self.particles, axis=0)
        out = np.empty((current.shape[0], horizon, states.shape[1]))
        noise_sd = np.sqrt(params.noise)
        for step in range(horizon):
            inputs = member.features(current, encoded[:, step])
            current = current + inputs @ params.coef.T + params.intercept
            current = current + noise[:, step].reshape(current.shape) * noise_sd
            out[:, step] = current
        return out.reshape(count, self.particles, horizon, states.shape[1])

    def describe(self) -> dict[str, Any]:
        """The members' descriptions and the ensemble settings."""
        return {
            "kind": "bootstrap-ensemble",
            "model_id": self.model_id,
            "members": [m.describe() for m in self._models],
            "particles": self.particles,
            "seed": self.seed,
        }


class RandomModel:
    """A random walk with the training deltas' spread: the floor of normalized scores.

    Its noise is a function of ``seed`` and each row of the request alone (never of
    earlier calls or of the other rows), so one request always gets the same answer: a
    closed-loop run of one seed does not depend on which seeds ran before it, and a
    forecast not on what was forecast first or batched with it.
    """

    def __init__(
        self, simulator: Simulator, *, seed: int = 0, model_id: str = "random-walk/v1"
    ) -> None:
        self.simulator = simulator
        self.model_id = model_id
        self.seed = seed
        self._scale: FloatArray | None = None

    def fit(self, transitions: Transitions) -> None:
        """Record the spread of one-step state changes (angles' changes wrapped)."""
        deltas = transitions.next_states - transitions.states
        # Acrobot wraps its angles every step: a swing through ±pi is a change of ~0.1 rad,
        # not ~2*pi, and unwrapped it would inflate the walk's spread (as the Bayesian
        # model wraps its targets).
        angular = np.array([c.angular for c in self.simulator.coordinates])
        wrap_angles(deltas, angular)
        self._scale = np.std(deltas, axis=0)

    def predict(
        self, initial_states: FloatArray, actions: NDArray[Any], *, uncertainty: bool = True
    ) -> Prediction:
        """Independent random walks; the actions are ignored."""
        states, acts = _check_inputs(self.simulator, initial_states, actions)
        scale = self._scale if self._scale is not None else np.ones(states.shape[1])
        # One generator per row (per reference, or per plan): seeded by the whole batch,
        # a reference's forecast would change with the other references batched with it.
        steps = request_normals(self.seed, states, acts, (acts.shape[1], states.shape[1]))
        return Prediction(states[:, None, :] + np.cumsum(steps * scale, axis=1))

    def describe(self) -> dict[str, Any]:
        """The step spread and seed."""
        scale = None if self._scale is None else self._scale.tolist()
        return {"kind": "random-walk", "model_id": self.model_id, "scale": scale, "seed": self.seed}
