"""``onrecord show``'s table of a report's measures: one row per measure, over the run.

The HTML episode view gave a measure one episode at a time; a reviewer of a run could
not see that ``rows_put_back`` was above 0 in 4 of 33 episodes without opening each.
"""

from __future__ import annotations

from rich.console import Console

from onrecord._numbers import measure_number
from onrecord._tables import SplitTable
from onrecord.cli._render import literal, render_report
from onrecord.report import EvaluationReport, MeasureSummary, summarize_measures

__all__ = ["MEASURE_HEADERS", "measure_row", "render_measures", "render_report_measures"]

MEASURE_HEADERS = ("measure", "trials", "mean", "min", "median", "max", "above 0")
"""The columns (the HTML report's table has the same)."""


def measure_row(measure: MeasureSummary, total: int) -> tuple[str, ...]:
    """The cells of one measure (its name as written, not yet made literal): ``trials``
    says ``12 of 33`` when some trials lack it, so its mean is not read as the run's."""
    bounds = (measure.minimum, measure.maximum)
    return (
        measure.name,
        str(measure.trials) if measure.trials == total else f"{measure.trials} of {total}",
        # Beside the min and max: a mean or median between them never reads as one.
        measure_number(measure.mean, bounds),
        measure_number(measure.minimum),
        measure_number(measure.median, bounds),
        measure_number(measure.maximum),
        str(measure.above_zero),
    )


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
    table = SplitTable(*MEASURE_HEADERS, keys=1, title=f"measures over the {total} trials")
    for measure in measures:
        name, *numbers = measure_row(measure, total)
        table.add_row(literal(name), *numbers)
    console.print(table)
