"""The run report's table of measures: each over the run's trials, as ``onrecord show``
prints it. Before, the page gave a measure only in one episode's detail view."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord._numbers import measure_number
from onrecord.html._page import NAME_CHARS, attr, cell, table

__all__ = ["measures_section"]

_HEADERS = ("measure", "trials", "mean", "min", "median", "max", "above 0")


def measures_section(data: Mapping[str, Any]) -> str:
    """The section, or nothing when no trial has a measure (or the data predates them)."""
    measures = data["summary"].get("measures") or []
    if not measures:
        return ""
    total = data["summary"]["trials"]
    rows = [_row(m, total) for m in measures]
    return (
        '<section id="measure-summary-section"><h2>Measures</h2><p class="meta">each measure '
        "over the trials that have it; above 0 counts the trials where it is</p>"
        + table(_HEADERS, rows, element_id="measure-summary")
        + "</section>"
    )


def _row(m: Mapping[str, Any], total: int) -> str:
    bounds = (m["min"], m["max"])
    # The text for people; each data-value the JSON number, for tests and scripts.
    shown = {
        "mean": measure_number(m["mean"], bounds),
        "min": measure_number(m["min"]),
        "median": measure_number(m["median"], bounds),
        "max": measure_number(m["max"]),
    }
    trials = str(m["trials"]) if m["trials"] == total else f"{m['trials']} of {total}"
    return (
        f'<tr data-measure="{attr(m["name"])}">'
        + cell(m["name"], limit=NAME_CHARS)
        + cell(trials, css="num", data={"field": "trials", "value": m["trials"]})
        + "".join(
            cell(text, css="num", data={"field": key, "value": m[key]})
            for key, text in shown.items()
        )
        + cell(m["above_zero"], css="num", data={"field": "above_zero", "value": m["above_zero"]})
        + "</tr>"
    )
