"""NumPy when some code loaded it, without loading it.

Reading records (``onrecord verify``, ``show``, ``gate``, ``compare``) needs no NumPy,
and importing it was close to half of such a command's time. A value can only be a
NumPy value once NumPy is imported, so the codecs ask here instead of importing it:
capture, whose environments import NumPy, finds it loaded.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["loaded_numpy"]


def loaded_numpy() -> Any:
    """The ``numpy`` module if it is imported, else None (then no value is a NumPy one)."""
    return sys.modules.get("numpy")
