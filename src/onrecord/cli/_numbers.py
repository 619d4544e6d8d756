"""The numbers the terminal, Markdown and JUnit outputs show (``onrecord._numbers``,
which the HTML report shares: one wording of a rate or threshold everywhere)."""

from __future__ import annotations

from onrecord._numbers import (
    fixed,
    interval_percent,
    percent,
    rate_percent,
    requirement_threshold,
    shown_reason,
    threshold_percent,
)

__all__ = [
    "fixed",
    "interval_percent",
    "percent",
    "rate_percent",
    "requirement_threshold",
    "shown_reason",
    "threshold_percent",
]
