"""The report's check table in a terminal: wide, narrow or stacked, whichever shows
every number and interval whole at the console's width."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord._numbers import fixed, percent
from onrecord._tables import FittedTable
from onrecord.cli._render import _interval, _table, cell, literal
from onrecord.cli._stacked import StackedTable
from onrecord.report import CheckSummary, ReportSummary

__all__ = ["check_table"]

# "errors" beside "unmeasured" read as a second, separate count (20 and 20 of 40
# forecasts): the errors are among the unmeasured, as reports-and-policies.md has it
# and as the HTML report heads its column.
_COUNTS = ("passed", "failed", "unmeasured", "of which errors")
_RATES = ("pass rate", "95% interval", "coverage")


def check_table(
    summary: ReportSummary, versions: Mapping[str, Any], width: int
) -> FittedTable | StackedTable:
    """The report's check table for a console ``width`` columns wide. Wide only when it
    fits framed with every cell on one line: between 99 and 118 columns it was chosen
    borderless, its headers on three lines and its intervals split in two, while the
    narrow one showed the same facts whole. Narrow when it fits framed, else stacked
    (a world model's 34-character names, or a remittance run's at 80 columns) when that
    fits; else narrow, fitted."""
    for narrow in (False, True):
        table = _report_table(summary, versions, narrow=narrow)
        if table.fits_framed(width):
            return table
    stacked = stacked_checks(summary, versions)
    return stacked if stacked.fits(width) else table


def _report_table(
    summary: ReportSummary, versions: Mapping[str, Any], *, narrow: bool
) -> FittedTable:
    """One row per check; ``narrow``: the version under the name and the counts in one
    column, which a terminal of 80 columns can show without folding a word."""
    wide = ("check", "version", *_COUNTS)
    # Narrow, the results stay on one line too: wrapped between words at 80 columns they
    # took up to four ("11 passed," / "0 failed," / "29" / "unmeasured"), where the
    # stacked table shows every count whole.
    table = _table(
        *(("check", "results") if narrow else wide), *_RATES,
        unbroken=("results", *_RATES) if narrow else (*wide, *_RATES),
    )  # fmt: skip
    for check in summary.checks:
        version = cell(versions[check.name])
        numbers = _numbers(check)
        table.add_row(
            f"{cell(check.name)} [dim]({version})[/]" if narrow else cell(check.name),
            *((_results(*numbers),) if narrow else (version, *map(str, numbers))),
            *_rates(check),
        )
    return table


def _numbers(check: CheckSummary) -> tuple[int, int, int, int]:
    """A check's counts, in the order of ``_COUNTS``."""
    return (check.passed, check.failed, check.unmeasured, check.errors)


def _results(passed: int, failed: int, unmeasured: int, errors: int) -> str:
    """``15 passed, 2 failed, 3 unmeasured (1 error)``."""
    text = f"{passed} passed, {failed} failed"
    if unmeasured:
        text += f", {unmeasured} unmeasured"
        text += f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
    return text


def stacked_checks(summary: ReportSummary, versions: Mapping[str, Any]) -> StackedTable:
    """Each check's name and version on a line, its counts and rates below (the wide
    table's cells, each whole on one line): for names too long to sit beside them."""
    table = StackedTable("check (version)", *_COUNTS, *_RATES)
    for check in summary.checks:
        table.add_row(
            f"[bold]{cell(check.name)}[/] [dim]({cell(versions[check.name])})[/]",
            *map(str, _numbers(check)),
            *_rates(check),
        )
    return table


def _rates(check: CheckSummary) -> list[str]:
    """A check's pass rate, interval and coverage as printed (``_RATES``)."""
    rate = check.pass_rate
    return [
        "n/a" if rate is None else percent(rate),
        # No measured result: "0.0% – 100.0%" read as an interval estimated from data.
        "—" if rate is None else literal(_interval(check.interval)),
        fixed(check.coverage, 0, scale=100.0, suffix="%"),
    ]
