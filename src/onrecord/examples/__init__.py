"""Small, real evaluation tasks over Gymnasium's own environments, used by the demo, the
docs and the tests: FrozenLake (discrete observations, terminal failure) and CartPole
(array observations, truncation as the declared success)."""

from onrecord.examples._gym_tasks import (
    CARTPOLE_AGENTS,
    FROZENLAKE_AGENTS,
    GymTask,
    cartpole_task,
    frozenlake_task,
    run_gym_task,
)

__all__ = [
    "CARTPOLE_AGENTS",
    "FROZENLAKE_AGENTS",
    "GymTask",
    "cartpole_task",
    "frozenlake_task",
    "run_gym_task",
]
