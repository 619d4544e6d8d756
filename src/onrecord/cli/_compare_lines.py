"""A comparison in a terminal: its header, the checks' tables, the discordant pairs and
the measures' bootstrap intervals, each kept readable down to 40 columns (a CI log pane).

At 40 columns the header ended a line with "vs  B:" and put B's label on the next, a
discordant pair wrapped to the left margin ("  balances_reconcile: duplicate-01#0:"
over "fail→pass"), and the measures' table folded every number ("[-0.4" over "343]").
"""

from __future__ import annotations

from rich.console import Console

from onrecord._tables import FittedTable
from onrecord.cli._compare_tables import print_check_tables
from onrecord.cli._lines import counted, print_phrases
from onrecord.cli._render import _table, cell, literal
from onrecord.cli._stacked import StackedTable
from onrecord.compare import (
    CheckComparison,
    Comparison,
    MeasureComparison,
    discordant_cases,
    few_bootstrap_pairs_note,
    too_few_pairs_note,
)

__all__ = ["print_comparison", "print_comparison_header"]

_PAIRS = 10
"""Discordant pairs listed per check (the Markdown summary lists as many)."""

_MEASURES = ("pairs", "mean A", "mean B", "B − A", "95% bootstrap interval")
"""Not "95% interval": beside the clustered Wilson intervals of ``run`` and ``show``
that read as the same kind; Markdown and HTML name it bootstrap too."""


def print_comparison(
    console: Console, comparison: Comparison, *, header: bool, labels: tuple[str, str] | None
) -> None:
    """See ``onrecord.cli._render.render_comparison``."""
    if header:
        print_comparison_header(console, comparison, labels)
    print_check_tables(console, comparison)
    note = too_few_pairs_note(
        [(c.name, len(c.discordant), discordant_cases(c.discordant)) for c in comparison.checks]
    )
    if note:
        print_phrases(console, [f"[yellow]note:[/] {cell(note)}"], sep=" ")
    _print_discordant(console, comparison.checks)
    if comparison.measures:
        for table in _measure_tables(comparison.measures, console.width):
            console.print(table)
        few = few_bootstrap_pairs_note(comparison.measures)
        if few:
            print_phrases(console, [f"[yellow]note:[/] {cell(few)}"], sep=" ")


def print_comparison_header(
    console: Console, comparison: Comparison, labels: tuple[str, str] | None
) -> None:
    """What is compared: the pairs, A and B on one line when it fits; else A's and B's
    each on lines of their own, "A:" and "vs  B:" kept with the label's first word and
    what does not fit indented under it (broken as a sentence, "vs  B:" ended a line)."""
    label_a, label_b = labels or ("", "")
    trials = f"[bold]comparison[/] {counted(comparison.pairs, 'paired trial')}"
    sides = [
        _side("A:", label_a, comparison.report_a),
        _side("vs  B:", label_b, comparison.report_b),
    ]
    whole = "  ".join([trials, *(" ".join(side) for side in sides)])
    if console.render_str(whole, emoji=False).cell_len <= console.width:
        print_phrases(console, [trials, *sides])  # one line
        return
    console.print(trials, highlight=False)
    for side in sides:
        print_phrases(console, [side], indent=2, hanging=4, sep=" ")


def _side(lead: str, label: str, digest: str) -> tuple[str, ...]:
    """One side's phrase, its words parts of their own (a line breaks between them when
    the phrase does not fit), ``lead`` joined to the first: the label's, or the digest."""
    words = [*literal(label).split(), f"sha256:{digest[:16]}"]
    return (f"{lead} {words[0]}", *words[1:])


def _print_discordant(console: Console, checks: tuple[CheckComparison, ...]) -> None:
    """Each check's discordant pairs, a line each; too narrow, the pair goes under its
    check's name, indented, whole ("duplicate-01#0: fail→pass")."""
    if not any(check.discordant for check in checks):
        return
    console.print("discordant pairs (episode: A→B):")  # "fail→pass" alone: which side?
    for check in checks:
        # As in a table's cell, a newline in a check name or case id shows as "\n": on
        # a hanging line of its own, "posted" over "    once: c1#0" read as two checks.
        name = f"{cell(check.name)}:"
        lines = [cell(pair) for pair in check.discordant[:_PAIRS]]
        if len(check.discordant) > _PAIRS:
            lines.append(f"… {len(check.discordant) - _PAIRS} more discordant pairs")
        for line in lines:
            print_phrases(console, [(name, line)], indent=2, hanging=4, sep=" ")


def _measure_tables(
    measures: tuple[MeasureComparison, ...], width: int
) -> list[FittedTable | StackedTable]:
    """The measures' table when it fits framed, every number whole; else stacked, each
    measure's name on a line and its numbers below, in one table or two (the means,
    then the difference and its interval); else the table, fitted."""
    table = _table("measure", *_MEASURES, unbroken=_MEASURES)
    rows = [_cells(m) for m in measures]
    for measure, cells in zip(measures, rows, strict=True):
        table.add_row(cell(measure.name), *cells)
    if table.fits_framed(width):
        return [table]
    for parts in ((slice(0, 5),), (slice(0, 3), slice(3, 5))):
        stacked = [_stacked(measures, rows, part) for part in parts]
        if all(part.fits(width) for part in stacked):
            return list(stacked)
    return [table]


def _stacked(
    measures: tuple[MeasureComparison, ...], rows: list[tuple[str, ...]], part: slice
) -> StackedTable:
    table = StackedTable("measure", *_MEASURES[part])
    for measure, cells in zip(measures, rows, strict=True):
        table.add_row(f"[bold]{cell(measure.name)}[/]", *cells[part])
    return table


def _cells(measure: MeasureComparison) -> tuple[str, ...]:
    return (
        str(measure.pairs),
        f"{measure.mean_a:.4g}",
        f"{measure.mean_b:.4g}",
        f"{measure.mean_difference:+.4g}",
        # as B − A: with .2f a difference of 1.5e-06 showed as [0.00, 0.00]
        literal(f"[{measure.interval[0]:+.4g}, {measure.interval[1]:+.4g}]"),
    )
