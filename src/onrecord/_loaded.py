"""A module when some code loaded it, without loading it.

Reading records (``onrecord verify``, ``show``, ``gate``, ``compare``) needs no NumPy,
and running a tool world needs no Gymnasium; importing either was close to half of such
a command's start-up. A value can only be a NumPy value (or a Gymnasium environment)
once its module is imported, so the code that tells values apart asks here instead of
importing it: capture, whose environments import both, finds them loaded.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["loaded"]


def loaded(module: str) -> Any:
    """``module`` if it is imported, else None (then none of its values exist)."""
    return sys.modules.get(module)
