"""How an episode records its environment's ``gymnasium`` spec: the id, the keyword
arguments, the time limit and the wrappers put on after ``gymnasium.make``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from onrecord._canonical import to_portable
from onrecord._portable import key_path
from onrecord.errors import PortabilityError

__all__ = ["describe_spec"]


def describe_spec(env: gym.Env[Any, Any]) -> dict[str, Any] | None:
    """``env.spec`` as the episode records it (None for an environment made without one)."""
    spec = env.spec
    if spec is None:
        return None
    kwargs, unportable = {}, []
    for key, value in sorted(spec.kwargs.items()):
        try:
            kwargs[key] = to_portable(value, key_path("$.spec.kwargs", key))
        except PortabilityError:
            unportable.append(key)
    described: dict[str, Any] = {
        "id": spec.id,
        "kwargs": kwargs,
        "unportable_kwargs": unportable,
        "max_episode_steps": spec.max_episode_steps,
    }
    wrappers = _wrappers(spec)
    if wrappers:  # kept out when none, so a plain environment's spec reads as before
        described["additional_wrappers"] = wrappers
    return described


def _wrappers(spec: Any) -> list[dict[str, Any]]:
    """The wrappers put on after ``gymnasium.make`` (``NormalizeObservation``, your own),
    in order, with their settings: two runs of one id under different wrapper stacks are
    different environments, and must not be paired as equal by ``compare``."""
    described = []
    for wrapper in getattr(spec, "additional_wrappers", None) or ():
        kwargs, unportable = {}, []
        for key, value in sorted((getattr(wrapper, "kwargs", None) or {}).items()):
            try:
                kwargs[key] = to_portable(value, key_path("$.spec.additional_wrappers", key))
            except PortabilityError:
                unportable.append(key)
        described.append(
            {
                "name": str(getattr(wrapper, "name", "")),
                "entry_point": str(getattr(wrapper, "entry_point", "")),
                "kwargs": kwargs,
                "unportable_kwargs": unportable,
            }
        )
    return described
