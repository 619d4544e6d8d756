"""``EnvironmentRef``: how a run names its environment, as saved in its protocol.

Apart from ``onrecord.runner._registry`` (which resolves and builds environments, and
imports gymnasium for it): reading a run directory (``RunStore``, ``onrecord verify``,
``gate``, ``show``) loads a protocol's ``EnvironmentRef`` without building anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["EnvironmentRef"]


@dataclass(frozen=True)
class EnvironmentRef:
    """How to build the environment in a worker."""

    name: str
    """What the user wrote: a registered name, a Gymnasium id or ``module:factory``."""
    kind: Literal["provider", "env", "gym"]
    """provider: factory returns an EnvironmentProvider; env: factory returns a gym.Env;
    gym: a Gymnasium id."""
    target: str
    """Import path of the factory, or the Gymnasium id."""
    config: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments for the factory (portable JSON)."""

    def to_dict(self) -> dict[str, Any]:
        """Portable form."""
        return {
            "name": self.name,
            "kind": self.kind,
            "target": self.target,
            "config": dict(self.config),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvironmentRef:
        """Inverse of ``to_dict``."""
        return cls(data["name"], data["kind"], data["target"], data.get("config") or {})
