"""A stacked table: each row's name on a line of its own, its numbers on the line below.

At 80 columns a world model's report names checks such as
``dynamics/pole_angular_velocity/h16`` (34 characters): beside them the narrow table
cut the name onto two lines ("…/h" over "16 (dynamics-abs-error/v1)"), split each
interval over two lines and its results over four ("11 passed," / "0 failed," / "29" /
"unmeasured"). With the name above, the numbers have the whole row: every count and
interval whole on one line, aligned under one header from row to row.
"""

from __future__ import annotations

from collections.abc import Collection

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from onrecord._tables import header_width
from onrecord.cli._lines import phrase_lines

__all__ = ["StackedTable"]

_INDENT = 2
"""Spaces before each line of numbers: they read as belonging to the name above."""

_GAP = 2
"""Spaces between two columns of numbers (rich's padding of one on either side)."""


class StackedTable:
    """Rows of a title (markup, a line of its own, under the header ``title``), cells
    under ``headers`` and, if a row has one, a paragraph under ``paragraph``. A cell
    never wraps, except in a ``wrap`` column (a threshold's parts), which takes the
    room the others leave, down to its longest word."""

    def __init__(
        self, title: str, *headers: str, wrap: Collection[str] = (), paragraph: str = ""
    ) -> None:
        unknown = set(wrap) - set(headers)
        if unknown:
            raise ValueError(f"wrap={sorted(unknown)} names no header of {list(headers)}")
        self._title, self._headers = title, headers
        self._paragraph = paragraph  # the header of the rows' paragraphs, if any
        self._wrap = [header in wrap for header in headers]
        self._rows: list[tuple[str, tuple[str, ...]]] = []
        self._paragraphs: list[str] = []

    @property
    def headers(self) -> list[str]:
        """The headers of the numbers' columns."""
        return list(self._headers)

    def add_row(self, title: str, *cells: str, paragraph: str = "") -> None:
        """Add a row: ``title`` above, one cell per header below, and ``paragraph``
        (markup: a reason) under them, wrapped at the console's width as ``_paragraph``."""
        if len(cells) != len(self._headers):
            raise ValueError(f"{len(cells)} cells for {len(self._headers)} headers")
        self._rows.append((title, cells))
        self._paragraphs.append(paragraph)

    def fits(self, width: int) -> bool:
        """Whether every cell fits ``width`` on its line, a ``wrap`` cell between words."""
        console = Console(width=max(width, 1), emoji=False)
        return self._widths(console, width) is not None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._widths(console, options.max_width) or self._least(console)
        yield Text(self._title, style="table.header")
        yield _indented(self._table(widths, header=True))
        if self._paragraph:
            yield _below(Text(self._paragraph, style="table.header"))
        for (title, cells), paragraph in zip(self._rows, self._paragraphs, strict=True):
            yield Text.from_markup(title, emoji=False)
            row = self._table(widths, header=False)
            row.add_row(*cells)
            yield _indented(row)
            if paragraph:  # a sentence has the whole row: in a column it broke word by word
                yield from _paragraph(console, paragraph, options.max_width)

    def _table(self, widths: list[int], *, header: bool) -> Table:
        """The header, or one row, at ``widths``: each row a table of its own, so a
        title can go between them, and all alike wide, so their columns line up."""
        table = Table(box=None, show_header=header, pad_edge=False, padding=(0, 1))
        for name, size, wraps in zip(self._headers, widths, self._wrap, strict=True):
            # A header wraps between words (at most two lines, as measured); a cell not.
            table.add_column(name, width=size, no_wrap=not (wraps or header), overflow="fold")
        return table

    def _widths(self, console: Console, width: int) -> list[int] | None:
        """Each column's width at ``width``, or None when it does not fit: a ``wrap``
        column gets what the others leave, up to its widest line."""
        least, widest = self._least(console), self._widest(console)
        spare = width - _INDENT - _GAP * (len(least) - 1) - sum(least)
        if spare < 0:
            return None
        widths = []
        for small, large, wraps in zip(least, widest, self._wrap, strict=True):
            grow = min(large - small, spare) if wraps else 0
            spare -= grow
            widths.append(small + grow)
        return widths

    def _least(self, console: Console) -> list[int]:
        """Each column's narrowest width: its header in at most two lines, and its
        widest cell line (a ``wrap`` column: its longest word)."""
        columns = zip(*(cells for _, cells in self._rows), strict=True) if self._rows else ()
        cells = list(columns) or [() for _ in self._headers]
        return [
            max(header_width(header), _longest(console, column, words=wraps))
            for header, column, wraps in zip(self._headers, cells, self._wrap, strict=True)
        ]

    def _widest(self, console: Console) -> list[int]:
        """Each column's width with no cell wrapped."""
        columns = zip(*(cells for _, cells in self._rows), strict=True) if self._rows else ()
        cells = list(columns) or [() for _ in self._headers]
        return [
            max(header_width(header), _longest(console, column, words=False))
            for header, column in zip(self._headers, cells, strict=True)
        ]


def _indented(table: Table) -> Padding:
    """``table`` under its title, indented, no wider than it is."""
    return Padding(table, (0, 0, 0, _INDENT), expand=False)


def _below(text: Text) -> Padding:
    """``text`` (the paragraphs' header) under the cells' header, indented as it is."""
    return Padding(text, (0, 0, 0, _INDENT), expand=False)


def _paragraph(console: Console, markup: str, width: int) -> list[Text]:
    """``markup`` under a row's cells, indented as they are, wrapped between clauses or
    words but never between a number and its word: wrapped by rich, a reason read
    "… (duplicate), but 1" over "allocation(s) and 1 adjustment(s) were created"."""
    # Each line fits ``width`` (but a word longer than it, which rich then folds).
    return phrase_lines(console, [markup], width, indent=_INDENT, hanging=_INDENT + 2, sep=" ")


def _longest(console: Console, cells: tuple[str, ...], *, words: bool) -> int:
    """The widest line of ``cells`` as printed (markup rendered), or its longest word."""
    lines = [line for cell in cells for line in console.render_str(cell).plain.splitlines()]
    parts = [word for line in lines for word in line.split()] if words else lines
    return max(map(cell_len, parts), default=1)
