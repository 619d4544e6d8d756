"""The oracle: the true simulator behind the ``WorldModel`` interface.

It answers a forecast by setting the real environment to the initial state and stepping
it through the actions, so a perfect model's error and closed-loop return are measured
with the same code as any learned model's. CartPole uses Gymnasium's own vectorized
CartPole (same equations, one NumPy call per step); other environments step one
unwrapped instance per trajectory.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._envs import Simulator
from onrecord.dynamics._models import _check_inputs
from onrecord.dynamics._protocol import FloatArray, Prediction, Transitions
from onrecord.dynamics._references import native_action

__all__ = ["OracleModel"]


class OracleModel:
    """Forecasts by running the real simulator from the given internal states."""

    def __init__(self, simulator: Simulator, model_id: str | None = None) -> None:
        self.simulator = simulator
        self.model_id = model_id or f"oracle/{simulator.env_id}"
        self._single: Any = None
        self._vector: Any = None

    def fit(self, transitions: Transitions) -> None:
        """The oracle already knows the dynamics."""

    def predict(
        self, initial_states: FloatArray, actions: NDArray[Any], *, uncertainty: bool = True
    ) -> Prediction:
        """Exact trajectories; states after a terminal step are the simulator's own
        continuation of the equations (never a reset)."""
        states, acts = _check_inputs(self.simulator, initial_states, actions)
        # The vector env knows nothing of ``make_kwargs``: only the default CartPole.
        vector = self.simulator.env_id == "CartPole-v1" and not self.simulator.make_kwargs
        if vector and len(states) > 1:
            return Prediction(self._cartpole_vector(states, acts))
        return Prediction(
            np.stack([self._rollout(s, a) for s, a in zip(states, acts, strict=True)])
        )

    def _rollout(self, state: FloatArray, actions: NDArray[Any]) -> FloatArray:
        if self._single is None:
            # The same construction as the references (``Simulator.make``), so settings
            # such as Pendulum's ``g`` are the simulator's, not Gymnasium's defaults.
            self._single = gym.make(
                self.simulator.env_id, **dict(self.simulator.make_kwargs)
            ).unwrapped
            self._single.reset(seed=0)
        env = self._single
        self.simulator.set_state(env, state)
        out = np.empty((len(actions), len(state)))
        for step, action in enumerate(actions):
            # Past a terminal step the oracle keeps integrating the equations (the vector
            # path does too; those predictions are censored). CartPole would warn on the
            # first step after termination, once per process, telling the user to reset,
            # which they never could: its counter is cleared so it never sees "beyond".
            if getattr(env, "steps_beyond_terminated", None) is not None:
                env.steps_beyond_terminated = None
            # In the space's own dtype, as the reference executed it: Pendulum computes in
            # the torque's dtype, so a float64 torque gave other numbers (~1e-9 rad).
            env.step(native_action(action, env.action_space) if np.ndim(action) else int(action))
            out[step] = np.asarray(env.state, dtype=np.float64)
        return out

    def _cartpole_vector(self, states: FloatArray, actions: NDArray[Any]) -> FloatArray:
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

        count = len(states)
        if self._vector is None or self._vector.num_envs != count:
            self._vector = CartPoleVectorEnv(num_envs=count)
            self._vector.reset(seed=0)
        vec = self._vector
        vec.state = states.T.copy()
        out = np.empty((count, actions.shape[1], states.shape[1]))
        for step in range(actions.shape[1]):
            # Keep the vector env from auto-resetting or truncating mid-forecast.
            vec.prev_done[:] = False
            vec.steps[:] = 0
            vec.step(actions[:, step].astype(np.int64))
            out[:, step] = vec.state.T
        return out

    def describe(self) -> dict[str, Any]:
        """The simulator it runs."""
        return {"kind": "oracle", "model_id": self.model_id, "env_id": self.simulator.env_id}
