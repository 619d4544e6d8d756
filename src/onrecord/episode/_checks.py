"""Outcome checks: small named, versioned functions over saved evidence.

``OutcomeVerdict.passed`` is ``True`` (measured pass), ``False`` (measured failure) or
``None`` (not measured). ``None`` never counts as a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onrecord.errors import InputError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NOT_MEASURED", "OutcomeCheck", "OutcomeVerdict", "outcome_check"]

NOT_MEASURED = None
"""The value of ``OutcomeVerdict.passed`` when the evidence cannot decide."""


@dataclass(frozen=True)
class OutcomeVerdict:
    """What one check concluded about one episode."""

    passed: bool | np.bool_ | None
    """True (or a NumPy True): measured pass; False: measured failure; None: not measured."""
    reason: str
    """One sentence a reviewer can read."""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """The observed facts behind the verdict (portable JSON)."""


@dataclass(frozen=True)
class OutcomeCheck:
    """A named, versioned check. The version enters the report lock, so changing a check's
    logic without bumping it is visible to nobody: bump it."""

    name: str
    """Stable name, e.g. ``posted_once`` or ``dynamics/x/h4``."""
    version: str
    """Version label of the check's logic."""
    evaluate: Callable[[Any], OutcomeVerdict]
    """Reads saved evidence, returns a verdict; never calls the agent or environment."""

    def __post_init__(self) -> None:
        for label in ("name", "version"):
            value = getattr(self, label)
            if not isinstance(value, str) or not value.strip() or value != value.strip():
                raise InputError(
                    f"OutcomeCheck.{label} must be a non-empty string without "
                    f"surrounding spaces, got {value!r}"
                )
        if not callable(self.evaluate):
            raise InputError(f"OutcomeCheck.evaluate of {self.name!r} must be callable")


def outcome_check(
    name: str, version: str
) -> Callable[[Callable[[Any], OutcomeVerdict]], OutcomeCheck]:
    """Decorator form: ``@outcome_check("posted_once", "v1")`` over a function."""

    def wrap(function: Callable[[Any], OutcomeVerdict]) -> OutcomeCheck:
        return OutcomeCheck(name, version, function)

    return wrap
