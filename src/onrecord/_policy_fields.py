"""Field checks of ``onrecord.policy`` that ``onrecord._policy_rules`` does not hold:
NumPy scalars taken as the plain values they are, the bound of ``min_cases``, and what a
directory given as a policy is told."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from onrecord.errors import PolicyError

__all__ = ["MAX_MIN_CASES", "check_min_cases", "directory_given", "plain_scalar"]

MAX_MIN_CASES = 2**63 - 1
"""The largest ``min_cases``: a saved policy is canonical JSON, whose integers are 64-bit
(a larger one was accepted, then refused by ``save_json`` with an internal hint)."""


def plain_scalar(value: Any) -> Any:
    """A NumPy scalar (``np.int64(3)``, ``np.bool_(True)``, ``np.float32(0.9)``) as the
    Python value it holds, anything else as it is: a threshold computed with NumPy was
    accepted as a float and refused as an int or a bool, and a policy of NumPy values
    has the digest of the same policy written with plain ones."""
    numpy = sys.modules.get("numpy")  # a NumPy scalar exists only once NumPy is imported
    if numpy is not None and isinstance(value, numpy.generic):
        return value.item()
    return value


def check_min_cases(cases: Any) -> None:
    """Refuse a ``min_cases`` that is not a whole number from 1 to ``MAX_MIN_CASES``."""
    if isinstance(cases, bool) or not isinstance(cases, int) or not 1 <= cases <= MAX_MIN_CASES:
        raise PolicyError(
            "CheckRequirement.min_cases must be a positive integer such as 20 (at most "
            f"2**63 - 1, as a saved policy holds it), got {cases!r:.60}"
        )


_POLICY_FILES = ("policy.toml", "policy.json")


def directory_given(folder: Path) -> str:
    """Why a directory is no policy, naming the policy file in it when there is one (it
    was told "put a regular file there", which asked to replace the directory)."""
    found = next((folder / name for name in _POLICY_FILES if (folder / name).is_file()), None)
    instead = f"; it holds {found}: give that" if found else "; give the policy file itself"
    return f"{folder}: a policy is a .json or .toml file, got a directory{instead}"
