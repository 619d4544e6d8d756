"""``onrecord show --steps SPEC``: which steps to print, and the refusal of a SPEC that
names none of the episode's steps (``--steps 999`` of a 6-step episode printed an empty
table and exited 0, as if the step had been shown)."""

from __future__ import annotations

import sys
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from onrecord.errors import InputError

__all__ = ["StepSpec", "call_numbers", "parse_steps", "refuse_absent_steps"]


@dataclass(frozen=True)
class StepSpec:
    """``--steps``: every step (``all``), or the steps numbered ``low`` to ``high``."""

    text: str
    """SPEC as given."""
    low: int
    high: int | None
    """None for ``all``."""

    def __contains__(self, number: object) -> bool:
        if not isinstance(number, int):
            return False
        return self.low <= number and (self.high is None or number <= self.high)


def parse_steps(spec: str | None) -> StepSpec | None:
    """SPEC read: ``all``, one step ``42`` or a range ``100-160``; None when not given."""
    if spec is None:
        return None
    if spec == "all":
        return StepSpec(spec, 0, None)
    first, dash, last = spec.partition("-")
    try:
        low = int(first)
        high = int(last) if dash else low
    except ValueError:
        low, high = -1, -1
    if low < 0 or high < low or high > sys.maxsize:
        raise InputError(f"--steps {spec!r}: write 'all', a step like 42 or a range like 100-160")
    return StepSpec(spec, low, high)


def refuse_absent_steps(steps: Container[int] | None, numbers: Iterable[int]) -> None:
    """Refuse ``--steps`` naming none of the steps numbered ``numbers`` (an episode's
    attempts from 0, or a tool world's calls as its table numbers them), saying which
    there are. A range reaching past the last step still shows the steps it holds."""
    if not isinstance(steps, StepSpec) or steps.high is None:
        return
    held = [number for number in numbers if isinstance(number, int)]
    if any(number in steps for number in held):
        return
    if not held:
        raise InputError(f"--steps {steps.text}: the episode has no steps; leave --steps out")
    first, last = min(held), max(held)
    which = f"step {first}" if first == last else f"steps {first}-{last}"
    asked = "step" if steps.low == steps.high else "step in"
    raise InputError(
        f"--steps {steps.text}: the episode has no {asked} {steps.text}; it has {which} "
        f"({len(held)} in all): give a step or range within them, or 'all'"
    )


def call_numbers(events: Iterable[Any]) -> list[Any]:
    """The step number of each call of a tool world's action log, as its table shows
    it (the world's own, from 1; the position where a call has none)."""
    return [
        event.get("step", index) if isinstance(event, Mapping) else index
        for index, event in enumerate(events)
    ]
