"""``onrecord show``'s table of a report's measures: one row per measure, over the run.

The HTML episode view gave a measure one episode at a time; a reviewer of a run could
not see that ``rows_put_back`` was above 0 in 4 of 33 episodes without opening each.
"""

from __future__ import annotations

from rich.console import Console

from onrecord._tables import SplitTable
from onrecord.cli._render import literal, render_report
from onrecord.report import EvaluationReport, MeasureSummary, summarize_measures
from onrecord.report._measures import MEASURE_COLUMNS, measure_cells

__all__ = ["render_measures", "render_report_measures"]


def render_report_measures(console: Console, report: EvaluationReport) -> None:
    """``show``'s view of a report: ``render_report`` (checks, pass^k, coverage), then
    the table of its measures."""
    render_report(console, report)
    # Not report.summary() again: its per-check intervals cost a second pass over every
    # check of every trial, for a table that needs only the measures.
    render_measures(console, summarize_measures(report.trials), len(report.trials))


def render_measures(console: Console, measures: tuple[MeasureSummary, ...], total: int) -> None:
    """The table, titled, when the report has measures (``total``: its trials)."""
    if not measures:
        return
    # Split, not fitted: at 80 columns a fitted table folded a world model's
    # "dynamics/angular_velocity/mean_abs_error" mid-word; each part repeats the name.
    table = SplitTable(*MEASURE_COLUMNS, keys=1, title=f"measures over the {total} trials")
    for measure in measures:
        name, *numbers = measure_cells(measure, total)
        table.add_row(literal(name), *numbers)
    console.print(table)
