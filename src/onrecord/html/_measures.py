"""The run report's table of measures: each over the run's trials, as ``onrecord show``
prints it. Before, the page gave a measure only in one episode's detail view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.html._page import NAME_CHARS, attr, cell, name_text, table
from onrecord.report._measures import (
    MEASURE_COLUMNS,
    MEASURE_ROWS,
    MeasureSummary,
    measure_cells,
)

__all__ = ["measure_rows", "measures_section"]

_FIELDS = ("trials", "mean", "min", "median", "max", "above_zero")
"""The data keys of the number columns, in ``MEASURE_COLUMNS`` order."""


def measures_section(data: Mapping[str, Any]) -> str:
    """The section, or nothing when no trial has a measure (or the data predates them)."""
    measures = data["summary"].get("measures") or []
    if not measures:
        return ""
    rows = measure_rows(measures, data["summary"]["trials"])
    # Past the first rows, the rest folded away: a world model's report of dozens of
    # measures gave each a row, and the page's later sections sat screens below.
    rest = rows[MEASURE_ROWS:]
    more = (
        f'<details id="measure-more"><summary>{len(rest)} more measure'
        f"{'s' if len(rest) != 1 else ''}</summary>"
        + table(MEASURE_COLUMNS, rest, element_id="measure-summary-more")
        + "</details>"
        if rest
        else ""
    )
    return (
        '<section id="measure-summary-section"><h2>Measures</h2><p class="meta">each measure '
        "over the trials that have it; above 0 counts the trials where it is</p>"
        + table(MEASURE_COLUMNS, rows[:MEASURE_ROWS], element_id="measure-summary")
        + more
        + "</section>"
    )


def measure_rows(measures: Sequence[Mapping[str, Any]], total: int) -> list[str]:
    """One table row per measure summary (``MeasureSummary.to_dict()``), over ``total``
    trials: the page's table, and a notebook's (``EvaluationReport._repr_html_``)."""
    return [_row(m, total) for m in measures]


def _row(m: Mapping[str, Any], total: int) -> str:
    name, *shown = measure_cells(MeasureSummary.from_dict(m), total)
    # The text for people; each data-value the JSON number, for tests and scripts.
    return (
        f'<tr data-measure="{attr(name)}">'
        + cell(name_text(name), limit=NAME_CHARS)
        + "".join(
            cell(text, css="num", data={"field": key, "value": m[key]})
            for key, text in zip(_FIELDS, shown, strict=True)
        )
        + "</tr>"
    )
