"""Terminal tables that fit their console: words wrap, names stay whole.

Before, rich shrank the widest columns first and folded whatever they held: at 80
columns headers broke mid-word ("require/ment", "critica/l", "unmeasu/red") and at 160
``show RUN`` folded ``only_expected_tables_cha/nged`` to make room for a reason.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from itertools import accumulate
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Span, Text

__all__ = ["FittedTable", "ReadableConsole", "SplitTable", "fitted_table", "header_width"]


class ReadableConsole(Console):
    """A console whose text is what its stream's encoding can write (see
    ``cli._encoding``): symbols are substituted before rich measures a cell, not after,
    so a table printed in ASCII keeps its columns. Tables are fitted with one, on the
    same stream, so they measure what is printed."""

    def render_str(self, text: str, **options: Any) -> Text:
        from onrecord.cli._encoding import readable

        # Substitutes and escapes end in a letter or digit: never a backslash that would
        # change how markup after them ("\[") is read.
        return super().render_str(readable(text, self.encoding), **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        # A cell built as a Text (an evidence key, a value cut to "… (187 characters)")
        # never passes render_str: substituted only as written, after the table was laid
        # out, its row stuck out of its column by a character per symbol. Every table and
        # Text this console draws passes here (rich renders nested ones through it too)
        # before it is measured.
        from onrecord.cli._encoding import holds_everything

        if holds_everything(self.encoding):  # UTF-8, the usual case: nothing to substitute
            return super().render(renderable, options)
        if isinstance(renderable, Table):
            for column in renderable.columns:
                column._cells = [self._readable(cell) for cell in column._cells]
                column.header = self._readable(column.header)
        return super().render(self._readable(renderable), options)

    def _readable(self, renderable: RenderableType) -> Any:
        """A Text as this console's stream writes it (``readable_text``); else as is."""
        if isinstance(renderable, Text):
            return readable_text(renderable, self.encoding)
        return renderable


def readable_text(text: Text, encoding: str) -> Text:
    """``text`` with its symbols substituted as ``cli._encoding.readable`` does a
    string's, its styles kept on the characters they styled (``≥`` became ``>=``: the
    spans after it move one on)."""
    from onrecord.cli._encoding import readable

    plain = text.plain
    if readable(plain, encoding) == plain:
        return text  # every character writable: the usual case
    pieces = [readable(character, encoding) for character in plain]
    at = list(accumulate(map(len, pieces), initial=0))
    shown = text.copy()
    shown.plain = "".join(pieces)
    end = len(plain)
    shown.spans = [Span(at[min(s.start, end)], at[min(s.end, end)], s.style) for s in text.spans]
    return shown


def fitted_table(*headers: str, **options: Any) -> FittedTable:
    """A table whose cells wrap rather than end in "…" on a narrow terminal: at 50
    columns every check name read "che…", "no_…" twice, and a p-value or interval
    could be cut to "0.…". Too wide for the console, it is fitted (``FittedTable``)."""
    table = FittedTable(*headers, **options)
    for column in table.columns:
        column.overflow = "fold"
    return table


_WRAP_FIRST = frozenset({"reason", "model error"})
"""Columns of sentences: the first to wrap when a table is too wide."""


class FittedTable(Table):
    """A table that, too wide for its console, wraps its columns between words: never
    below a column's longest word (a check or requirement name stays whole up to half
    the width, another word up to a third), sentences such as a reason first, then the
    column with most to spare. When even that does not fit, the outer border goes; only
    what still does not fit is folded (see the module's docstring for what rich did)."""

    def __init__(
        self,
        *headers: str,
        whole_words: bool = False,
        unbroken: Collection[str] = (),
        **options: Any,
    ) -> None:
        super().__init__(*headers, **options)
        self._headers = list(headers)
        unknown = set(unbroken) - set(headers)
        if unknown:
            raise ValueError(f"unbroken={sorted(unknown)} names no header of {self._headers}")
        # Columns whose cells never wrap (a number, an interval): wrapped between words,
        # "43.9% –" over "100.0%" read as two values, while a column with more to spare
        # beside it kept its width. Their headers still wrap, to at most two lines.
        self._unbroken = [header in unbroken for header in headers]
        # Words are capped (a name at half the row, another word at a third) unless
        # ``whole_words`` and every word fits whole without the outer border: a
        # SplitTable's part, chosen because its words fit. Uncapped everywhere, a
        # 110-character JSON token in an action kept its width and squeezed the errors
        # beside it into two lines each.
        self._whole_words = whole_words
        self._edges = (self.show_edge, self.pad_edge)  # as asked, before any fitting

    def fits(self, width: int) -> bool:
        """Whether every column fits ``width`` without folding a word."""
        return self._fit(ReadableConsole(width=max(width, 1), emoji=False), width, apply=False)

    def fits_framed(self, width: int) -> bool:
        """Whether the table fits ``width`` with its outer border, no word folded and
        no ``unbroken`` cell wrapped: the test for a wide layout, which else lost its
        border and wrapped its intervals when a narrow one shows the same facts whole."""
        texts = self._texts(ReadableConsole(width=max(width, 1), emoji=False))
        return sum(self._least(texts)) + self._overhead(edge=True) <= width

    def fits_whole(self, width: int) -> bool:
        """Whether the table fits ``width`` with its outer border and every word whole:
        unlike ``fits``, a name is never folded (headers and sentences still wrap)."""
        texts = self._texts(ReadableConsole(width=max(width, 1), emoji=False))
        return sum(_widths(lines)[1] for lines in texts) + self._overhead(edge=True) <= width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self._fit(console, options.max_width, apply=True)
        yield from super().__rich_console__(console, options)

    def _fit(self, console: Console, width: int, *, apply: bool) -> bool:
        columns = self.columns
        for column in columns:
            column.width = None
        if apply:
            self.show_edge, self.pad_edge = self._edges
        texts = self._texts(console)
        widths, least = [_widths(lines)[0] for lines in texts], self._least(texts)
        room = width - self._overhead(edge=True)
        if sum(widths) <= room:
            return True
        bare = width - self._overhead(edge=False)  # without the outer border and padding
        if sum(least) > bare or not self._whole_words:
            # A name longer than half the row folds, and any other word (a JSON action, a
            # token of a message) longer than a third, before the cells beside it. In a
            # SplitTable's part, only when not every word fits whole even borderless:
            # capped there, a 43-character check name folded at 100 columns in a part
            # chosen because it fits whole, and at 56 where it fits without the border.
            least = [min(s, max(room // (2 if i == 0 else 3), 1)) for i, s in enumerate(least)]
        if sum(least) > room:
            # Unbroken cells that do not fit wrap between words, as any cell does, before
            # the border goes or rich folds a word ("faile/d") to make room.
            words = [_widths(lines)[1] for lines in texts]
            least = [min(have, word) for have, word in zip(least, words, strict=True)]
        if sum(least) > room:
            room = bare
            if apply:
                self.show_edge = self.pad_edge = False
        excess = sum(widths) - room
        first = [h in _WRAP_FIRST for h in self._headers]
        while excess > 0:
            slack = [w - m for w, m in zip(widths, least, strict=True)]
            pick = max(range(len(widths)), key=lambda i: (slack[i] > 0, first[i], slack[i]))
            if slack[pick] <= 0:
                break  # every column at its longest word: rich folds what is left
            cut = min(excess, slack[pick] if first[pick] else 1)
            widths[pick] -= cut
            excess -= cut
        if apply:
            for column, size in zip(columns, widths, strict=True):
                column.width = size
        return excess <= 0

    def _least(self, texts: list[list[str]]) -> list[int]:
        """Each column's narrowest width: its longest word, or for an ``unbroken``
        column its widest cell line and its header in at most two lines."""
        return [
            max(header_width(lines[0]), _widths(lines[1:])[0]) if whole else _widths(lines)[1]
            for lines, whole in zip(texts, self._unbroken, strict=True)
        ]

    def _texts(self, console: Console) -> list[list[str]]:
        """Each column's header and cells as printed: measured as written, an escaped
        header ("\\[x]") counted its backslashes, and its names were folded for them."""
        return [
            [_plain(console, text) for text in (header, *column.cells)]
            for header, column in zip(self._headers, self.columns, strict=True)
        ]

    def _overhead(self, *, edge: bool) -> int:
        """Border and padding characters of a row."""
        _, right, _, left = self.padding
        count = len(self.columns)
        borders = (count - 1 + (2 if edge else 0)) if self.box else 0
        return borders + (left + right) * count - (0 if edge else left + right)


def _plain(console: Console, cell: object) -> str:
    """A cell's text as printed. A ``Text`` is literal already: rendered as markup like
    a string, a cut value holding "[/]" (an agent's argument, a check's evidence) ended
    the table in a MarkupError."""
    if isinstance(cell, Text):
        # Measured as this console writes it (``ReadableConsole.render``).
        readable = isinstance(console, ReadableConsole)
        return (readable_text(cell, console.encoding) if readable else cell).plain
    return console.render_str(str(cell)).plain


def _widths(texts: Sequence[str]) -> tuple[int, int]:
    """A column's widest line and its longest word (what it can wrap down to)."""
    lines = [line for text in texts for line in text.splitlines() or [""]]
    words = [word for line in lines for word in line.split()]
    return max(map(cell_len, lines), default=1), max(map(cell_len, words), default=1)


def header_width(header: str, lines: int = 2) -> int:
    """The narrowest width that wraps ``header`` between words into at most ``lines``
    lines ("of which errors": 8, as "of which" over "errors"); public for other tables
    (a stacked one) whose headers wrap the same way."""
    words = header.split() or [""]
    for width in range(max(map(cell_len, words)), cell_len(header) + 1):
        count, used = 1, cell_len(words[0])
        for word in words[1:]:
            used += 1 + cell_len(word)
            if used > width:
                count, used = count + 1, cell_len(word)
        if count <= lines:
            return width
    return cell_len(header)


class SplitTable:
    """A table that, wider than its console even with every word whole, is printed as
    several: each repeats the first ``keys`` columns (what a row is about) and takes as
    many of the others as fit. Before, the world model's held-out forecasts at 80
    columns cut nine numbers to "7.73e…" (the exponent lost) and at 60 the closed-loop
    table folded "21.3" into "21." and "3": a number read as another. Wide enough, it is
    the one table it always was."""

    def __init__(self, *headers: str, keys: int, title: str, **options: Any) -> None:
        if not 0 <= keys <= len(headers):
            raise ValueError(f"keys={keys} for a table of {len(headers)} columns")
        self._headers, self._keys, self._title, self._options = headers, keys, title, options
        self._rows: list[tuple[str, ...]] = []
        self._reasons: list[str] = []

    def add_row(self, *cells: str, reason: str = "") -> None:
        """Add a row; a short one is padded with empty cells, as rich's Table does (it
        failed with an IndexError only when printed). A longer one is refused: every
        cell belongs under a header, and the extra ones would silently be dropped.

        ``reason``: why the row's values from the cell that holds it on do not exist (a
        censored horizon); each part holding none of that cell but later ones shows it
        in the first of them. Said only where it was, the parts after showed the row's
        values as bare dashes that gave no reason."""
        if len(cells) > len(self._headers):
            raise ValueError(
                f"a row of {len(cells)} cells for a table of {len(self._headers)} columns: "
                "pass at most one cell per header"
            )
        if reason and reason not in cells[self._keys :]:
            raise ValueError(f"reason={reason!r} is none of the row's value cells")
        self._rows.append((*cells, *[""] * (len(self._headers) - len(cells))))
        self._reasons.append(reason)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        groups = self._groups(options.max_width)
        for number, group in enumerate(groups, 1):
            part = f" (part {number} of {len(groups)})" if len(groups) > 1 else ""
            yield self._table(group, title=self._title + part)

    def _groups(self, width: int) -> list[list[int]]:
        """The columns of each table: greedily, as many as fit with every word whole
        and the outer border kept (one that does not fit alone goes alone, folded)."""
        groups: list[list[int]] = [[]]
        for index in range(self._keys, len(self._headers)):
            tried = self._table([*groups[-1], index], title=self._title)
            if groups[-1] and not tried.fits_whole(width):
                groups.append([])
            groups[-1].append(index)
        return groups

    def _table(self, group: list[int], *, title: str) -> FittedTable:
        columns = [*range(self._keys), *group]
        headers = (self._headers[i] for i in columns)
        table = fitted_table(*headers, title=title, whole_words=True, **self._options)
        for row, reason in zip(self._rows, self._reasons, strict=True):
            cells = [row[i] for i in columns]
            if reason:
                at = row.index(reason, self._keys)
                later = [n for n, i in enumerate(group) if i >= at]
                if later and group[later[0]] != at:
                    cells[self._keys + later[0]] = reason
            table.add_row(*cells)
        return table
