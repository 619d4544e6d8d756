"""A saved comparison (``onrecord compare --json``, ``onrecord.comparison/v1``): its
digest, then its fields and the figures that follow from one another, before ``show``
reads it. The field checks are ``Comparison.from_dict``'s own
(``onrecord._comparison_fields``), so a comparison ``verify`` passes loads in Python and
one it refuses is refused there too, with the same words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onrecord._comparison_dict import comparison_from_dict
from onrecord._comparison_fields import difference_of
from onrecord.cli._bundle import Bundle, digested

__all__ = ["difference_of", "verify_comparison"]


def verify_comparison(path: Path, data: dict[str, Any]) -> Bundle:
    """``onrecord compare --json``: digest, fields, and counts, p-values, rates and means
    that follow from one another."""
    digested(path, data)
    comparison = comparison_from_dict(data, str(path))  # what `show` reads, field by field
    checks, measures = comparison.checks, comparison.measures
    # In compare's words and order ("2 paired trials  A: … vs  B: …"), its sides by the
    # reports' digests: the file holds no other name for them.
    summary = (
        f"{comparison.pairs} paired trials, A: sha256:{comparison.report_a[:16]} vs B: "
        f"sha256:{comparison.report_b[:16]}; {len(checks)} checks, {len(measures)} measures"
    )
    return Bundle("comparison", data["digest"], summary, record=data)
