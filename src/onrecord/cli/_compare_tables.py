"""The terminal table of a comparison's checks: the paired counts, the McNemar p-value
and, beside it, each side's pass rate with its interval clustered by case (A's line
over B's, as the report table heads them: "pass rate", "95% interval").

Too wide for the terminal (80 columns), it is printed as two tables, each with the check
names: the p-values and rates, then the counts. When no table fits (40 columns, a CI
log pane), each check's name is on a line of its own and its numbers below it. As one
table at 80 columns it folded the p-value in two
("0.000488" over "3", read as 0.000488) before any rate was added. The columns the
table always had keep their places; the rates follow the p-value.
"""

from __future__ import annotations

from rich.console import Console

from onrecord._compare_rates import PassRate
from onrecord._numbers import P_VALUE_MARKS, interval_percent, percent, significant
from onrecord._tables import FittedTable, fitted_table
from onrecord.cli._render import cell, literal, print_interval_note
from onrecord.cli._stacked import StackedTable
from onrecord.compare import CheckComparison, Comparison

__all__ = ["print_check_tables"]

_COUNTS = ("both pass", "A only", "B only", "both fail", "unmeasured")
_RATES = ("pass rate", "95% interval")


def print_check_tables(console: Console, comparison: Comparison) -> None:
    """Print the checks' table (or two, see the module's docstring)."""
    checks = comparison.checks
    # A comparison saved before the rates were recorded has none to show: no column of
    # dashes that would read as "nothing measured".
    rates = any(check.rate_a is not None for check in checks)
    layouts = [
        # (without rates, a table of them alone would hold only the check names)
        [_table(checks, part, rates) for part in layout if rates or part != ("rates",)]
        for layout in _LAYOUTS
    ]
    for table in _chosen(layouts, console.width) or _stacked(checks, rates, console.width):
        console.print(table)
    if rates:
        print_interval_note(console)


def _chosen(layouts: list[list[FittedTable]], width: int) -> list[FittedTable]:
    """The first layout whose tables fit framed, every count, p-value, rate and interval
    on its line: tested with ``fits`` alone, one table at 100 columns was picked that
    broke "A 100.0%" into "A" over "100.0%" and each interval over two lines, where two
    tables showed them whole. None when none does (the stacked form is tried next)."""
    for tables in layouts:
        if all(table.fits_framed(width) for table in tables):
            return tables
    return []


def _stacked(
    checks: tuple[CheckComparison, ...], rates: bool, width: int
) -> list[FittedTable | StackedTable]:
    """Each check's name on a line, its numbers below, in one table or, narrower, two
    or three (as ``_LAYOUTS``): at 40 columns the last of the tables cut
    names ("only_expected_t" over "ables_changed") and intervals ("A 99.2% –" over
    "100.0%"). When even that does not fit, three tables, fitted (what cannot fit folds)."""
    for layout in _LAYOUTS:
        tables = [_stacked_part(checks, part, rates) for part in layout]
        tables = [t for t in tables if t.headers] if rates else tables
        if all(table.fits(width) for table in tables):
            return list(tables)
    return [_table(checks, part, rates) for part in _LAYOUTS[-1] if rates or part != ("rates",)]


def _stacked_part(
    checks: tuple[CheckComparison, ...], part: tuple[str, ...], rates: bool
) -> StackedTable:
    counts, rated = "counts" in part, rates and "rates" in part
    headers = (*(_COUNTS if counts else ()), *(("McNemar p",) if "p" in part else ()))
    table = StackedTable("check", *headers, *(_RATES if rated else ()))
    for check in checks:
        numbers = (check.both_pass, check.only_a, check.only_b, check.both_fail, check.unmeasured)
        table.add_row(
            f"[bold]{cell(check.name)}[/]",
            *(map(str, numbers) if counts else ()),
            *((significant(check.p_value, 4, P_VALUE_MARKS),) if "p" in part else ()),
            *(_sides(check.rate_a, check.rate_b) if rated else ()),
        )
    return table


_LAYOUTS = (
    (("counts", "p", "rates"),),
    (("p", "rates"), ("counts",)),
    (("p",), ("rates",), ("counts",)),
)
"""The tables tried in turn, each a tuple of the column groups it holds after the check."""


def _table(checks: tuple[CheckComparison, ...], part: tuple[str, ...], rates: bool) -> FittedTable:
    counts, p_value, rates = "counts" in part, "p" in part, rates and "rates" in part
    numbers = (*(_COUNTS if counts else ()), *(("McNemar p",) if p_value else ()))
    numbers += _RATES if rates else ()
    # Every column but the check's holds numbers, each to be read whole on its line.
    table = fitted_table("check", *numbers, unbroken=numbers)
    for check in checks:
        numbers = (check.both_pass, check.only_a, check.only_b, check.both_fail, check.unmeasured)
        table.add_row(
            cell(check.name),
            *(map(str, numbers) if counts else ()),
            *((significant(check.p_value, 4, P_VALUE_MARKS),) if p_value else ()),
            *(_sides(check.rate_a, check.rate_b) if rates else ()),
        )
    return table


def _sides(rate_a: PassRate | None, rate_b: PassRate | None) -> tuple[str, str]:
    """The rate cell and the interval cell: ``A 100.0%`` over ``B 87.9%``, each whole on
    its line (two columns side by side wrapped an interval at 80 columns)."""
    shown = [_shown(rate) for rate in (rate_a, rate_b)]
    return (
        f"A {shown[0][0]}\nB {shown[1][0]}",
        literal(f"A {shown[0][1]}\nB {shown[1][1]}"),
    )


def _shown(rate: PassRate | None) -> tuple[str, str]:
    if rate is None:  # not recorded for this check (a record edited by hand)
        return "—", "—"
    value = rate.pass_rate
    # Nothing measured: "0.0% – 100.0%" read as an interval estimated from data.
    if value is None:
        return "n/a", "—"
    return percent(value), interval_percent(*rate.interval)
