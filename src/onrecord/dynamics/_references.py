"""Capturing reference episodes on a ``Simulator``: frozen open-loop plans, optionally
from a given internal state (``reset(options={"state": [...]})``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onrecord.case import EvalCase
from onrecord.dynamics._envs import Simulator
from onrecord.errors import InputError

__all__ = ["capture_on", "capture_plan", "check_start_state", "random_plan"]


def random_plan(simulator: Simulator, length: int, rng: np.random.Generator) -> list[Any]:
    """A plan of ``length`` actions drawn uniformly from the simulator's action set,
    frozen before anything is executed."""
    if isinstance(length, bool) or not isinstance(length, int | np.integer) or length < 0:
        raise InputError(f"length must be a whole number of actions >= 0, got {length!r}")
    picks = rng.integers(0, len(simulator.actions), length)
    return [simulator.actions[int(i)] for i in picks]


def capture_plan(
    simulator: Simulator,
    plan: Sequence[Any],
    *,
    case_id: str,
    seed: int,
    start_state: Sequence[float] | None = None,
    source_id: str | None = None,
) -> Any:
    """Execute ``plan`` open loop in a fresh environment and return its evidence.

    The episode stops early only when the environment ends it; the plan itself is part
    of the case, so its length cannot depend on how the reference turned out.
    """
    actions = list(plan)
    check_start_state(simulator, start_state)

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in actions:
            native = np.asarray(action, dtype=np.float32) if isinstance(action, list) else action
            _, _, terminated, truncated, _ = env.step(native)
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
) -> Any:
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
