"""``onrecord show``'s table of a report's measures: one row per measure, over the run.

The HTML episode view gave a measure one episode at a time; a reviewer of a run could
not see that ``rows_put_back`` was above 0 in 4 of 33 episodes without opening each.
"""

from __future__ import annotations

from rich.console import Console

from onrecord._tables import SplitTable
from onrecord.cli._lines import counted
from onrecord.cli._render import cell, literal, render_report
from onrecord.report import EvaluationReport, MeasureSummary, summarize_measures
from onrecord.report._measures import MEASURE_COLUMNS, MEASURE_ROWS, measure_cells

__all__ = ["ALL_MEASURES", "render_measures", "render_report_measures"]

ALL_MEASURES = "--all-measures"
"""``show``'s flag that lists every measure."""


def render_report_measures(
    console: Console, report: EvaluationReport, *, every: bool = True, command: str = ""
) -> None:
    """``show``'s view of a report: ``render_report`` (checks, pass^k, coverage), then
    the table of its measures (the first ``MEASURE_ROWS`` unless ``every``; ``command``
    is what ``--all-measures`` is added to, in the line that counts the rest)."""
    render_report(console, report)
    # Not report.summary() again: its per-check intervals cost a second pass over every
    # check of every trial, for a table that needs only the measures.
    measures = summarize_measures(report.trials)
    render_measures(console, measures, len(report.trials), every=every, command=command)


def render_measures(
    console: Console,
    measures: tuple[MeasureSummary, ...],
    total: int,
    *,
    every: bool = True,
    command: str = "",
) -> None:
    """The table, titled, when the report has measures (``total``: its trials)."""
    if not measures:
        return
    shown = measures if every else measures[:MEASURE_ROWS]
    # Split, not fitted: at 80 columns a fitted table folded a world model's
    # "dynamics/angular_velocity/mean_abs_error" mid-word; each part repeats the name.
    title = f"measures over the {counted(total, 'trial')}"
    if len(shown) < len(measures):
        title = f"first {len(shown)} of {len(measures)} {title}"
    table = SplitTable(*MEASURE_COLUMNS, keys=1, title=title)
    for measure in shown:
        name, *numbers = measure_cells(measure, total)
        table.add_row(cell(name), *numbers)
    console.print(table)
    if len(shown) < len(measures):
        command = f"{command} {ALL_MEASURES}".strip()
        console.print(
            f"… {len(measures) - len(shown)} more measures; {literal(command)} lists every one",
            soft_wrap=True,  # the command is copied from here: one line
        )
