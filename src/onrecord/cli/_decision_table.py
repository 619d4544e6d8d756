"""A decision's requirements in a terminal: wide, narrow or stacked, whichever shows
every rate, count and interval whole at the console's width."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onrecord._tables import FittedTable
from onrecord.cli._render import _table
from onrecord.cli._stacked import StackedTable

__all__ = ["decision_table", "table_headers"]


def decision_table(
    rows: Sequence[Mapping[str, str]], width: int, *, reason_column: bool
) -> FittedTable | StackedTable:
    """The requirements' table at ``width``: wide (with ``reason_column``) when it fits
    framed, each cell but a reason on one line; else narrow when that fits framed; else
    stacked when that fits (28-character names left the narrow one's intervals and
    "(60 of 66)" wrapped at 80 columns); else narrow, fitted. Wide or narrow, a threshold
    is on one line, else its parts one a line: wrapped between words at 100 columns, it
    read "≥ 95.0%, ≥" over "5 cases"."""
    tables = [
        _decision_table(
            rows, reason_column=reason_column and not narrow, narrow=narrow, split=split
        )
        for narrow in (False, True)
        for split in (False, True)
    ]
    for table in tables:
        if table.fits_framed(width):
            return table
    stacked = _stacked(rows)
    return stacked if stacked.fits(width) else tables[-1]


def table_headers(table: FittedTable | StackedTable) -> list[str]:
    """The headers of a table ``decision_table`` chose."""
    if isinstance(table, StackedTable):
        return table.headers
    return [str(column.header) for column in table.columns]


def _stacked(rows: Sequence[Mapping[str, str]]) -> StackedTable:
    """Each requirement's name on a line, its status and numbers below: its unmeasured
    results under its pass rate and a threshold's parts one a line (wrapped between
    words only when even one does not fit), which leaves each a line whole at 80."""
    table = StackedTable(*_NARROW, wrap=("threshold",))
    for row in rows:
        advisory = " [dim](advisory)[/]" if row["critical"] == "no" else ""
        table.add_row(f"[bold]{row['check']}[/]{advisory}", *_narrow_cells(row, split=True))
    return table


_NARROW = ("requirement", "status", "pass rate", "95% interval", "threshold", "cases")
"""The narrow and the stacked table's columns: the same cells, the name apart."""


def _narrow_cells(row: Mapping[str, str], *, split: bool) -> list[str]:
    """A requirement's cells after its name, narrow or stacked: its unmeasured results
    under its pass rate, on a line of their own ("(12" over "of 31), 9" read as two
    counts)."""
    unmeasured = row["unmeasured"] not in ("", "0")
    return [
        row["status"],
        row["rate"] + (f"\n{row['unmeasured']} unmeasured" if unmeasured else ""),
        row["interval"],
        _threshold(row, split=split),
        row["cases"],
    ]


def _threshold(row: Mapping[str, str], *, split: bool) -> str:
    """A threshold's parts ("≥ 95.0%, ≥ 5 cases") on one line, or ``split`` one a line."""
    return row["threshold"].replace(", ", "\n") if split else row["threshold"]


def _decision_table(
    rows: Sequence[Mapping[str, str]], *, reason_column: bool, narrow: bool, split: bool
) -> FittedTable:
    """One row per requirement. ``narrow`` (80 columns): an advisory requirement is
    marked beside its name and its unmeasured results under its pass rate, which
    leaves room for every word whole. A threshold never wraps: whole, or ``split``."""
    # The interval beside the rate, as the Markdown and JUnit outputs give it: 19 of 20
    # "meets" 95 % while its interval reaches down to 76 %. Headed short, as a terminal
    # is narrow; the line under the table says what it is.
    if narrow:
        table = _table(*_NARROW, unbroken=_NARROW[1:])
        for row in rows:
            advisory = " (advisory)" if row["critical"] == "no" else ""
            table.add_row(row["check"] + advisory, *_narrow_cells(row, split=split))
        return table
    keys = ["critical", "status", "rate", "interval", "threshold", "cases", "unmeasured"]
    columns = ["requirement", "critical", "status", "pass rate", "95% interval", "threshold"]
    table = _table(
        *columns, "cases", "unmeasured", *(["reason"] if reason_column else []),
        unbroken=(*columns, "cases", "unmeasured"),
    )  # fmt: skip
    for row in rows:
        cells = [_threshold(row, split=split) if key == "threshold" else row[key] for key in keys]
        table.add_row(row["check"], *cells, *([row["reason"]] if reason_column else []))
    return table
