"""Angle wrapping, written once: every angle change, error and cost angle in the dynamics
tools lands in (-pi, pi], the range docs/world-models.md documents for angular errors.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._protocol import FloatArray

__all__ = ["wrap_angle", "wrap_angles"]


def wrap_angle(values: FloatArray) -> FloatArray:
    """``values`` wrapped into (-pi, pi], as a new array. NaN stays NaN; an infinity has
    no angle and becomes NaN (numpy warns)."""
    wrapped = (values + np.pi) % (2 * np.pi) - np.pi
    # That lands in [-pi, pi); the documented range is (-pi, pi], so a half-turn keeps
    # its sign. Only the boundary moves: every other value is the textbook formula's.
    return np.where(wrapped == -np.pi, np.pi, wrapped)


def wrap_angles(errors: FloatArray, mask: NDArray[np.bool_]) -> FloatArray:
    """Wrap the ``mask`` columns of ``errors`` into (-pi, pi] in place and return them."""
    if mask.any():
        errors[..., mask] = wrap_angle(errors[..., mask])
    return errors
