"""Capturing reference episodes on a ``Simulator``: frozen open-loop plans, optionally
from a given internal state (``reset(options={"state": [...]})``)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from onrecord.case import EvalCase
from onrecord.dynamics._envs import Simulator
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord.episode import EpisodeEvidence

__all__ = [
    "capture_on",
    "capture_plan",
    "check_actions",
    "check_plan",
    "check_start_state",
    "fresh_action",
    "native_action",
    "random_plan",
]


def random_plan(simulator: Simulator, length: int, rng: np.random.Generator) -> list[Any]:
    """A plan of ``length`` actions drawn uniformly from the simulator's action set,
    frozen before anything is executed."""
    if isinstance(length, bool) or not isinstance(length, int | np.integer) or length < 0:
        raise InputError(f"length must be a whole number of actions >= 0, got {length!r}")
    picks = rng.integers(0, len(simulator.actions), length)
    return [fresh_action(simulator, int(i)) for i in picks]


def fresh_action(simulator: Simulator, index: int) -> Any:
    """``simulator.actions[index]``, as a copy when it is a (Box) list: handing out the
    simulator's own list let ``plan[0][0] *= 0.5`` change the action set of every later
    plan, planner and control of that simulator."""
    action = simulator.actions[index]
    return copy.deepcopy(action) if isinstance(action, list) else action


def capture_plan(
    simulator: Simulator,
    plan: Sequence[Any],
    *,
    case_id: str,
    seed: int,
    start_state: Sequence[float] | None = None,
    source_id: str | None = None,
) -> EpisodeEvidence:
    """Execute ``plan`` open loop in a fresh environment and return its evidence.

    The episode stops early only when the environment ends it; the plan itself is part
    of the case, so its length cannot depend on how the reference turned out.
    """
    actions = list(plan)
    check_start_state(simulator, start_state)
    check_plan(simulator, actions)

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(native_action(action, env.action_space))
            if terminated or truncated:
                return "ended"
        return "plan complete"

    options = None if start_state is None else {"state": [float(v) for v in start_state]}
    case = EvalCase(
        {"env_id": simulator.env_id, "plan": actions, "start": options},
        case_id=case_id,
        source_id=source_id or f"seed:{seed}",
        completion="either",
    )
    return capture_on(
        simulator, interact, case=case, seed=seed, max_steps=max(len(actions), 1), options=options
    )


def native_action(action: Any, space: Any) -> Any:
    """How a plan's action is sent to the environment: a Box action (a list or array of
    numbers) as an array of the space's dtype. A plain list makes Gymnasium warn on every
    step, and a float64 array is not in a float32 Box at all. Other actions are unchanged.
    """
    if isinstance(space, gym.spaces.Box) and _array_like(action):
        return np.asarray(action, dtype=space.dtype)
    return action


def check_plan(simulator: Simulator, actions: Sequence[Any]) -> None:
    """``InputError`` for a plan the environment would not execute as written: an action
    outside its action space (refused mid-episode, so the reference would end
    ``interact_error`` and its later horizons would pass for censored), or a Box action
    its dtype cannot hold exactly (0.1 in a float32 Box: executed and recorded rounded,
    the plan would no longer match the episode and ``capture_forecast`` would refuse it)."""
    from onrecord.integrations.gymnasium._spaces import fast_contains

    if not actions:
        return
    space = _action_space(simulator)
    if space is None:
        return
    for index, action in enumerate(actions):
        _check_exact(space, index, action)
        if not fast_contains(space, native_action(action, space)):
            raise InputError(
                f"action {index} of the plan, {action!r:.80}, is not in the "
                f"{simulator.env_id} action space {space}; plan only actions the "
                "environment accepts (e.g. from random_plan or the Simulator's actions)"
            )


def _check_exact(space: Any, index: int, action: Any) -> None:
    if not isinstance(space, gym.spaces.Box) or space.dtype is None or space.dtype.kind != "f":
        return
    if not _array_like(action):
        return
    try:
        values = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError):
        return  # not numbers: refused as outside the action space
    executed = values.astype(space.dtype).astype(np.float64)
    if not np.array_equal(executed, values, equal_nan=True):
        raise InputError(
            f"action {index} of the plan, {values.tolist()!r:.80}, is not exactly a "
            f"{space.dtype} number: it would be executed, and recorded, as "
            f"{executed.tolist()!r:.80}, which no longer matches the plan; round the "
            f"plan (or the Simulator's actions) first, e.g. "
            f"np.asarray(action, dtype=np.{space.dtype}), and forecast that plan"
        )


def check_actions(simulator: Simulator) -> None:
    """``InputError`` for a planning action outside the environment's action space: the
    environment refuses it, so every closed-loop run would end ``interact_error`` and be
    counted as the *model's* failure although the simulator's set-up is at fault."""
    space = _action_space(simulator)
    if space is None:
        return
    from onrecord.integrations.gymnasium._spaces import fast_contains

    for index, action in enumerate(simulator.actions):
        if not fast_contains(space, native_action(action, space)):
            raise InputError(
                f"actions[{index}] of the {simulator.env_id} simulator, {action!r:.60}, is "
                f"not in its action space {space}; give the Simulator actions the "
                "environment accepts (dataclasses.replace(simulator, actions=...))"
            )


def _action_space(simulator: Simulator) -> Any:
    """The environment's action space, or None when it cannot be made (the capture
    records a failing environment as its setup error)."""
    try:
        env = simulator.make()
        space = env.action_space
        env.close()
    except Exception:
        return None
    return space


def _array_like(action: Any) -> bool:
    return isinstance(action, list | tuple | np.ndarray) and np.ndim(action) > 0


def whole_number(value: Any, name: str) -> int:
    """``value`` as a plain int (a NumPy integer too: settings and seeds are recorded as
    JSON), or ``InputError`` naming ``name``; a bool is no count."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise InputError(f"{name} must be a whole number (an int), got {value!r}")
    return int(value)


def check_seed(seed: Any, name: str = "seed", *, below: int = 2**64) -> int:
    """``seed`` as a plain int in ``[0, below)``, or ``InputError`` naming ``name``:
    seeds are handed to ``reset``, which needs a whole number."""
    value = whole_number(seed, name)
    if not 0 <= value < below:
        raise InputError(f"{name} must be between 0 and {below - 1}, got {value}")
    return value


def check_start_state(simulator: Simulator, start_state: Any, name: str = "start_state") -> None:
    """``InputError`` for a start state that is not ``dimension`` finite numbers: caught
    here it is the caller's mistake, not a reset failure recorded as the simulator's."""
    if start_state is None:
        return
    try:
        vector = np.asarray(start_state, dtype=np.float64)
    except (TypeError, ValueError):
        vector = np.empty(0)
    if vector.shape != (simulator.dimension,) or not np.isfinite(vector).all():
        raise InputError(
            f"{name} for {simulator.env_id} must be {simulator.dimension} finite numbers "
            f"({', '.join(simulator.coordinate_units)}), got {start_state!r:.80}"
        )


def capture_on(
    simulator: Simulator,
    interact: Callable[[Any, Any, Any], str],
    *,
    case: EvalCase,
    seed: int,
    max_steps: int,
    options: dict[str, Any] | None = None,
) -> EpisodeEvidence:
    """Capture one episode of ``interact`` in a fresh ``simulator`` environment, observed
    through its internal state (what forecasts and the closed loop are compared on)."""
    from onrecord.integrations.gymnasium import capture_episode

    # capture_episode builds the environment itself; the observer needs that same one.
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = simulator.make()
        return holder["env"]

    return capture_episode(
        factory,
        interact,
        case=case,
        environment_id=simulator.env_id,
        observer_id=f"{simulator.contract}/internal-state",
        observe=simulator.observer(holder),
        seed=seed,
        max_steps=max_steps,
        options=options,
    )
