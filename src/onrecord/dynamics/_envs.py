"""Simulators the dynamics tools know how to drive: CartPole, Pendulum and Acrobot.

Each ``Simulator`` declares the mapping between Gymnasium's observation and the internal
state vector a world model forecasts, a state setter (so matched interventions and the
oracle start from *identical* internal states), the discrete action set planners search,
and the environment's own reward and termination rule written over predicted states.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._angles import wrap_angle
from onrecord.dynamics._protocol import FloatArray
from onrecord.errors import InputError

__all__ = ["SIMULATORS", "Coordinate", "Simulator", "StateResetWrapper", "get_simulator"]


@dataclass(frozen=True)
class Coordinate:
    """One component of a forecast state vector."""

    name: str
    """Name used in check names (``dynamics/<name>/h<horizon>``)."""
    unit: str
    """Physical unit; errors are reported in it and never pooled across units."""
    angular: bool = False
    """Errors wrap to (-pi, pi] when true (angles that the simulator does not bound)."""


@dataclass(frozen=True)
class Simulator:
    """How to forecast, control and reset one Gymnasium environment by internal state."""

    env_id: str
    """Gymnasium id passed to ``gymnasium.make``."""
    contract: str
    """Name of the state-vector contract forecasts are bound to."""
    coordinates: tuple[Coordinate, ...]
    """The internal state vector, in order."""
    actions: tuple[Any, ...]
    """Actions planners and interventions choose from, in the environment's own encoding."""
    observation_of: Callable[[FloatArray], NDArray[Any]]
    """Observation Gymnasium returns for an internal state (the declared mapping)."""
    reward_of: Callable[
        [FloatArray, NDArray[np.int64], FloatArray], tuple[FloatArray, NDArray[np.bool_]]
    ]
    """``(states, action indices, next states) -> (reward, terminated)``, vectorized."""
    shaping_of: Callable[[FloatArray], FloatArray]
    """A small planner-only tie-break over predicted states (higher is better)."""
    action_features: Callable[[NDArray[Any]], FloatArray]
    """Numeric model features of actions given in the environment's encoding."""
    make_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Extra keyword arguments for ``gymnasium.make``."""

    def __post_init__(self) -> None:
        # A built-in reward rule depends on settings of the simulator it belongs to
        # (Pendulum's torques, CartPole's reward variant). ``dataclasses.replace`` with
        # other ``actions`` or ``make_kwargs`` keeps the old rule object, which would
        # score plans with the defaults' rewards: rebind it to this simulator.
        bind = getattr(self.reward_of, "bind", None)
        if callable(bind):
            object.__setattr__(self, "reward_of", bind(self))

    @property
    def coordinate_units(self) -> dict[str, str]:
        """``{name: unit}`` as ``capture_forecast`` takes it."""
        return {coordinate.name: coordinate.unit for coordinate in self.coordinates}

    @property
    def angular(self) -> tuple[str, ...]:
        """Names of the coordinates whose errors wrap."""
        return tuple(c.name for c in self.coordinates if c.angular)

    @property
    def dimension(self) -> int:
        """Length of the state vector."""
        return len(self.coordinates)

    def make(self) -> gym.Env[Any, Any]:
        """A fresh environment, wrapped so ``reset(options={"state": [...]})`` works."""
        return StateResetWrapper(gym.make(self.env_id, **dict(self.make_kwargs)), self)

    def get_state(self, env: gym.Env[Any, Any]) -> list[float]:
        """The internal state vector of a live environment, as plain floats."""
        inner: Any = env.unwrapped
        return [float(value) for value in np.asarray(inner.state, dtype=np.float64)]

    def set_state(self, env: gym.Env[Any, Any], state: Any) -> NDArray[Any]:
        """Put ``state`` into a reset environment and return the matching observation."""
        vector = np.asarray(state, dtype=np.float64)
        if vector.shape != (self.dimension,) or not np.isfinite(vector).all():
            raise InputError(
                f"state for {self.env_id} must be {self.dimension} finite numbers, got {state!r}"
            )
        inner: Any = env.unwrapped
        inner.state = vector.copy()
        return self.observation_of(vector)

    def action_index(self, action: Any) -> int:
        """Position of an environment action in ``actions``."""
        for index, candidate in enumerate(self.actions):
            if np.array_equal(np.asarray(candidate), np.asarray(action)):
                return index
        raise InputError(
            f"action {action!r} is not one of {self.env_id}'s planning actions {list(self.actions)}"
        )

    def observer(self, holder: Mapping[str, Any]) -> Callable[[], dict[str, Any]]:
        """An ``observe`` callable for ``capture_episode`` reading ``holder["env"]``."""
        return lambda: {"state": self.get_state(holder["env"])}


class StateResetWrapper(gym.Wrapper[Any, Any, Any, Any]):
    """``reset(options={"state": [...]})`` starts from that internal state.

    The wrapped environment still resets normally first, so its random generator and
    step counter are set as usual; only the internal state is replaced afterwards.
    """

    def __init__(self, env: gym.Env[Any, Any], simulator: Simulator) -> None:
        super().__init__(env)
        self.simulator = simulator

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        options = dict(options or {})
        state = options.pop("state", None)
        observation, info = self.env.reset(seed=seed, options=options or None)
        if state is not None:
            observation = self.simulator.set_state(self.env, state)
        return observation, info


# --- CartPole -------------------------------------------------------------------------

_CARTPOLE_X, _CARTPOLE_THETA = 2.4, 12 * 2 * np.pi / 360


@dataclass(frozen=True)
class _CartPoleReward:
    """CartPole's reward: +1 every step, or with ``sutton_barto_reward=True`` (a
    ``gymnasium.make`` argument) 0 every step and -1 on the step the pole falls."""

    sutton_barto: bool = False

    def bind(self, simulator: Simulator) -> _CartPoleReward:
        return _CartPoleReward(bool(simulator.make_kwargs.get("sutton_barto_reward", False)))

    def __call__(
        self, states: FloatArray, actions: NDArray[np.int64], next_states: FloatArray
    ) -> tuple[FloatArray, NDArray[np.bool_]]:
        done = (np.abs(next_states[..., 0]) > _CARTPOLE_X) | (
            np.abs(next_states[..., 2]) > _CARTPOLE_THETA
        )
        if self.sutton_barto:
            return np.where(done, -1.0, 0.0), done
        return np.ones(done.shape), done


def _cartpole_shaping(states: FloatArray) -> FloatArray:
    # Keep the pole upright and the cart near the centre; only breaks ties between
    # plans that all survive the planning horizon.
    result: FloatArray = -(
        np.square(states[..., 2])
        + 0.05 * np.square(states[..., 3])
        + 0.01 * np.square(states[..., 0])
        + 0.01 * np.square(states[..., 1])
    )
    return result


def _discrete_features(count: int) -> Callable[[NDArray[Any]], FloatArray]:
    def encode(actions: NDArray[Any]) -> FloatArray:
        codes = np.asarray(actions, dtype=np.int64)
        # One column per action except the first: the intercept carries the first.
        encoded: FloatArray = (codes[..., None] == np.arange(1, count)).astype(np.float64)
        return encoded

    return encode


CARTPOLE = Simulator(
    env_id="CartPole-v1",
    contract="cartpole-state/v1",
    coordinates=(
        Coordinate("cart_position", "m"),
        Coordinate("cart_velocity", "m/s"),
        Coordinate("pole_angle", "rad"),
        Coordinate("pole_angular_velocity", "rad/s"),
    ),
    actions=(0, 1),
    observation_of=lambda state: np.asarray(state, dtype=np.float32),
    reward_of=_CartPoleReward(),
    shaping_of=_cartpole_shaping,
    action_features=_discrete_features(2),
)

# --- Pendulum -------------------------------------------------------------------------


@dataclass(frozen=True)
class _PendulumReward:
    """Pendulum's reward ``-(theta² + 0.1 theta_dot² + 0.001 torque²)`` over the state
    before each step, with the torques of the simulator's own ``actions``: a fixed
    ``±2`` gave a wrong predicted return for any other action set."""

    torques: tuple[float, ...] = (-2.0, 2.0)

    def bind(self, simulator: Simulator) -> _PendulumReward:
        torques = []
        for index, action in enumerate(simulator.actions):
            try:
                value = np.asarray(action, dtype=np.float64)
            except (TypeError, ValueError):
                value = np.empty(0)
            if value.shape != (1,) or not np.isfinite(value).all():
                raise InputError(
                    f"actions[{index}] of the {simulator.env_id} simulator is {action!r:.60}; "
                    "Pendulum's reward rule needs each action to be one finite torque, "
                    "e.g. [2.0]"
                )
            # Executed in the float32 Box, so the cost is that of the float32 torque.
            torques.append(float(np.float32(value[0])))
        return _PendulumReward(tuple(torques))

    def __call__(
        self, states: FloatArray, actions: NDArray[np.int64], next_states: FloatArray
    ) -> tuple[FloatArray, NDArray[np.bool_]]:
        torque = np.asarray(self.torques)[actions]
        theta = wrap_angle(states[..., 0])
        cost = np.square(theta) + 0.1 * np.square(states[..., 1]) + 0.001 * np.square(torque)
        return -cost, np.zeros(cost.shape, dtype=bool)


PENDULUM = Simulator(
    env_id="Pendulum-v1",
    contract="pendulum-state/v1",
    coordinates=(Coordinate("theta", "rad", angular=True), Coordinate("theta_dot", "rad/s")),
    actions=([-2.0], [2.0]),
    observation_of=lambda s: np.array([np.cos(s[0]), np.sin(s[0]), s[1]], dtype=np.float32),
    reward_of=_PendulumReward(),
    shaping_of=lambda states: np.zeros(states.shape[:-1]),
    # Box actions keep their trailing action axis: ``[..., 1]`` torques.
    action_features=lambda actions: np.asarray(actions, dtype=np.float64),
)

# --- Acrobot --------------------------------------------------------------------------


def _acrobot_reward(
    states: FloatArray, actions: NDArray[np.int64], next_states: FloatArray
) -> tuple[FloatArray, NDArray[np.bool_]]:
    height = -np.cos(next_states[..., 0]) - np.cos(next_states[..., 1] + next_states[..., 0])
    done = height > 1.0
    return np.where(done, 0.0, -1.0), done


ACROBOT = Simulator(
    env_id="Acrobot-v1",
    contract="acrobot-state/v1",
    coordinates=(
        Coordinate("theta1", "rad", angular=True),
        Coordinate("theta2", "rad", angular=True),
        Coordinate("theta1_dot", "rad/s"),
        Coordinate("theta2_dot", "rad/s"),
    ),
    actions=(0, 1, 2),
    observation_of=lambda s: np.array(
        [np.cos(s[0]), np.sin(s[0]), np.cos(s[1]), np.sin(s[1]), s[2], s[3]], dtype=np.float32
    ),
    reward_of=_acrobot_reward,
    shaping_of=lambda states: -np.cos(states[..., 0]) - np.cos(states[..., 1] + states[..., 0]),
    action_features=_discrete_features(3),
)

SIMULATORS: dict[str, Simulator] = {sim.env_id: sim for sim in (CARTPOLE, PENDULUM, ACROBOT)}


def get_simulator(env_id: str) -> Simulator:
    """The ``Simulator`` for a Gymnasium id (``CartPole-v1``, ``Pendulum-v1``, ``Acrobot-v1``)."""
    try:
        return SIMULATORS[env_id]
    except KeyError:
        raise InputError(
            f"env_id {env_id!r} is not supported; choose one of {sorted(SIMULATORS)}"
        ) from None
