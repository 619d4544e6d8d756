"""Failure reasons that name every problem a check found, not only the first.

``onrecord show`` and the HTML report put a check's reason first and its evidence behind
it: a reason naming one problem of several sends a developer to fix that one, re-run, and
only then meet the next. The reason lists the problems (the most important first, as the
caller orders them), each cut short, up to a few and "and N more"; the evidence keeps
every problem in full.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["listing"]

SHOWN = 4
"""Problems written out in a reason; the rest are counted."""
WIDTH = 160
"""Characters of one problem in a reason (row dumps and long lists are cut)."""


def _short(problem: str) -> str:
    return problem if len(problem) <= WIDTH else problem[: WIDTH - 1].rstrip() + "…"


def listing(problems: Sequence[str]) -> str:
    """``problems`` joined by "; ", each at most ``WIDTH`` characters, the first
    ``SHOWN`` of them and "and N more" when there are more."""
    shown = [_short(p) for p in problems[:SHOWN]]
    rest = len(problems) - len(shown)
    return "; ".join(shown) + (f"; and {rest} more (see the evidence)" if rest > 0 else "")
