"""Every error onrecord raises on purpose.

The hierarchy::

    OnrecordError                 base class: catch this to catch everything below
    ├── InputError                a public function got an argument it cannot use
    │   └── PortabilityError      a value cannot be stored losslessly as canonical JSON
    │                             (also a CaptureError when it stops a capture)
    ├── CaptureError              recording an episode or forecast could not continue
    │   ├── LifecycleError        the environment was used out of order (second reset,
    │   │                         step after the end)
    │   ├── StepLimitReached      ``max_steps`` blocked an action before the environment saw it
    │   └── InvalidActionError    an action outside the action space was refused
    ├── EvidenceError             a saved record failed verification
    │   ├── SchemaError           unknown or missing ``schema``, or a field of the wrong shape
    │   ├── DigestMismatch        the content does not match its ``digest``
    │   └── ConsistencyError      the record contradicts itself (step indices, data after the end)
    ├── PolicyError               an acceptance policy is malformed
    └── ComparisonRefused         two reports cannot be compared; ``reasons`` says why

Messages name the field at fault and say what to do about it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CaptureError",
    "ComparisonRefused",
    "ConsistencyError",
    "DigestMismatch",
    "EvidenceError",
    "InputError",
    "InvalidActionError",
    "LifecycleError",
    "MalformedStepError",
    "OnrecordError",
    "PolicyError",
    "PortabilityError",
    "SchemaError",
    "StepLimitReached",
]


class OnrecordError(Exception):
    """Base class of every error onrecord raises on purpose."""


class InputError(OnrecordError, ValueError):
    """A public function received an argument it cannot use."""


class CaptureError(OnrecordError):
    """Recording an episode or a forecast could not continue."""


class PortabilityError(InputError, CaptureError):
    """A value cannot be stored losslessly as canonical JSON.

    ``path`` is the JSON path of the offending value, e.g. ``$.info.mask[3]``.
    """

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


class LifecycleError(CaptureError):
    """The environment was used out of order: a second reset, or a step after the end."""


class MalformedStepError(CaptureError):
    """The environment's ``step()`` returned something other than Gymnasium's
    ``(observation, reward, terminated, truncated, info)``; the attempt is recorded as an
    environment error."""


class StepLimitReached(CaptureError):
    """``max_steps`` blocked a further action before the environment was called."""


class InvalidActionError(CaptureError, ValueError):
    """An action outside the declared action space was refused before execution."""


class EvidenceError(OnrecordError):
    """A saved record failed verification."""


class SchemaError(EvidenceError):
    """A record has an unknown schema, or a field is missing or of the wrong shape."""


class DigestMismatch(EvidenceError):
    """A record's content does not match its ``digest``: it was changed after saving."""


class ConsistencyError(EvidenceError):
    """A record contradicts itself, e.g. step indices out of order or data after the end."""


class PolicyError(OnrecordError, ValueError):
    """An acceptance policy is malformed."""


class ComparisonRefused(OnrecordError):
    """Two reports cannot be compared honestly; ``reasons`` lists every difference."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        lines = "\n".join(f"  - {reason}" for reason in self.reasons)
        super().__init__(f"the two reports cannot be compared:\n{lines}")
