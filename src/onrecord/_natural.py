"""Natural order of names: the numbers in a name compare as numbers.

``dynamics/pole_angle/h8`` comes before ``dynamics/pole_angle/h16`` (text order put h16,
h32 and h4 before it), and ``task-2`` before ``task-10``.
"""

from __future__ import annotations

import re

__all__ = ["natural_key"]

_NUMBER = re.compile(r"([0-9]+)")


def natural_key(text: str) -> tuple[tuple[str | int, ...], tuple[int, ...], str]:
    """Sort key: text runs compare as text and digit runs by value; then, between names
    equal so (``h08``, ``h8``), the shorter digit runs first, then the text itself, so
    the order is total."""
    parts = _NUMBER.split(text)  # text at even positions, digits at odd ones
    values = tuple(int(part) if index % 2 else part for index, part in enumerate(parts))
    return values, tuple(len(part) for part in parts[1::2]), text
