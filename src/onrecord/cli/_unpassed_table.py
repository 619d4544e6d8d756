"""The gate's "results not passed" in a terminal: wide when its reasons have room beside
the other columns, else stacked, each reason a paragraph under its check and episode.

At 80 columns a world model's 34-character check names (``dynamics/…/h32``), its
episodes and ``not_measured`` left the reason column 10 characters: every reason was
printed a word a line ("censored:" / "the" / "reference" / …), six lines a result.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from onrecord._tables import FittedTable
from onrecord.cli._ci_facts import Unpassed
from onrecord.cli._render import _styled, _table, cell, literal
from onrecord.cli._stacked import StackedTable

__all__ = ["print_unpassed", "unpassed_table"]

_REASON_ROOM = 32
"""The narrowest reason column of the wide table (a reason shorter than this: its own
length): narrower, a sentence of six words took three lines or more."""

_HEADERS = ("check", "episode", "status")


def print_unpassed(console: Console, rows: Sequence[Unpassed], *, title: str) -> None:
    """Print ``unpassed_table`` at the console's width, a stacked one under ``title``."""
    table = unpassed_table(rows, console.width, title=title)
    if isinstance(table, StackedTable):
        console.print(title, style="table.title", highlight=False)
    console.print(table)


def unpassed_table(
    rows: Sequence[Unpassed], width: int, *, title: str
) -> FittedTable | StackedTable:
    """The results ``rows`` at ``width``: wide when the check, episode and status fit
    framed, each whole, beside a reason column of ``_REASON_ROOM``; else stacked when
    that fits; else wide, fitted."""
    reasons = [len(literal(row.reason)) for row in rows]
    room = min(_REASON_ROOM, max(reasons, default=1))
    beside = _table(*_HEADERS, unbroken=_HEADERS)
    for row in rows:
        beside.add_row(*_cells(row))
    # The reason column adds one border and its padding of two to the framed table.
    if beside.fits_framed(width - room - 3):
        return _wide(rows, title=title)
    stacked = StackedTable("check", "episode", "status", paragraph="reason")
    for row in rows:
        stacked.add_row(
            f"[bold]{cell(row.check)}[/]", *_cells(row)[1:], paragraph=literal(row.reason)
        )
    return stacked if stacked.fits(width) else _wide(rows, title=title)


def _wide(rows: Sequence[Unpassed], *, title: str) -> FittedTable:
    """One row per result, the reason beside it."""
    # No requirement column beside the check: it is the check's name or a pattern
    # matching it, and four columns fold no header at 80 columns where five did.
    table = _table(*_HEADERS, "reason", title=title, unbroken=_HEADERS)
    for row in rows:
        table.add_row(*_cells(row), literal(row.reason))
    return table


def _cells(row: Unpassed) -> tuple[str, str, str]:
    return cell(row.check), cell(row.episode), _styled(row.status)
