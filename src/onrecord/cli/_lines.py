"""Lines of text around the tables, wrapped between phrases rather than anywhere.

rich wraps a long line at the last space that fits: at 80 to 120 columns the report's
summary line broke as "outcomes: 450" over "pass, 45 fail", left "sha256:" or "trials"
alone on a line, and a reason read "0 not measured" over "of 495". Here a line is a
sequence of phrases: as many as fit go on a line, the rest on lines indented under it.
A phrase too long for a line of its own is broken into its parts, a part into its
clauses (after ", ", "; " or ": "), a clause into words, but a number never leaves the
word it counts ("450 pass", "of 495", "≥ 100.0%") and a one-word label ("A:",
"CL-100046:") never ends a line: there it read as the end of what came before it. A
newline in a phrase (record text) starts a hanging line too, never one at column 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

__all__ = ["Phrase", "counted", "phrase_lines", "print_phrases", "print_sentence"]

Phrase = str | tuple[str, ...]
"""Markup; a tuple's parts are one phrase, joined by a space, split only when it does
not fit on a line of its own."""

_NUMBER = re.compile(r"[\d.,%:;()~≈+−-]*\d[\d.,%:;()]*")
"""A count, rate, interval bound or p-value as a word: "450", "96.9%", "(60", "495;"."""

_BEFORE_NUMBER = frozenset({"of", "≥", "≤", "<", ">", "=", "–", "rate", "k", "in"})
"""Words that lead to the number after them ("of 495", "≥ 100.0%")."""

_CLAUSE = re.compile(r"(?<=[,;:]) +")

_BREAK = "\n"
"""The separator before a piece that starts a new (hanging) line whatever the width."""

_LABEL = re.compile(r"\S+:")
"""A one-word label ("A:", "CL-100046:"): it stays with what it labels."""


def counted(number: int, noun: str) -> str:
    """``1 trial``, ``33 trials``: a one-episode run read "report 1 trials"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def print_phrases(
    console: Console,
    phrases: Sequence[Phrase],
    *,
    indent: int = 0,
    hanging: int = 2,
    sep: str = "  ",
) -> None:
    """Print ``phrases`` (``sep`` apart) in as few lines as the console's width allows;
    the first line ``indent`` spaces in, the others ``hanging``."""
    width = console.width
    for line in phrase_lines(console, phrases, width, indent=indent, hanging=hanging, sep=sep):
        console.print(line)


def print_sentence(console: Console, markup: str, *, indent: int = 0, hanging: int = 2) -> None:
    """Print a sentence wrapped between its clauses, else between words that do not
    separate a number from its word."""
    print_phrases(console, [markup], indent=indent, hanging=hanging, sep=" ")


def phrase_lines(
    console: Console,
    phrases: Sequence[Phrase],
    width: int,
    *,
    indent: int,
    hanging: int,
    sep: str = "  ",
) -> list[Text]:
    """The lines ``print_phrases`` prints (see there)."""
    room = max(width - max(indent, hanging), 1)
    units = [unit for phrase in phrases for unit in _units(console, phrase, room, sep)]
    lines: list[Text] = []
    line = Text(" " * indent)
    for index, (separator, unit) in enumerate(units):
        joined = cell_len(line.plain) + cell_len(separator) + unit.cell_len
        if index and (joined > width or separator == _BREAK):
            lines.append(line)
            line = Text(" " * hanging)
        elif index:
            line.append(separator)
        line.append_text(unit)
    lines.append(line)
    return lines


def _units(console: Console, phrase: Phrase, room: int, sep: str) -> Iterator[tuple[str, Text]]:
    """The pieces of ``phrase`` that must stay on one line, each with the separator
    before it: the phrase whole if it fits ``room``, else its parts, clauses, words."""
    parts = phrase if isinstance(phrase, tuple) else (phrase,)
    whole = console.render_str(" ".join(parts), emoji=False)
    if "\n" in whole.plain:
        yield from _broken(whole, room, sep)
        return
    if whole.cell_len <= room:
        yield sep, whole
        return
    separator = sep
    for part in parts:
        text = console.render_str(part, emoji=False)
        for piece in _pieces(text, room):
            yield separator, piece
            separator = " "


def _broken(text: Text, room: int, sep: str) -> Iterator[tuple[str, Text]]:
    """The pieces of a phrase holding newlines (a reason quoting an agent's error),
    each of its lines starting a line of its own. Printed as is, a line after a newline
    began at column 0: "boom\ndecision: accept" read as a verdict in the log of a
    rejected gate."""
    separator = sep
    for line in text.split("\n", allow_blank=True):
        for piece in _pieces(line, room):
            yield separator, piece
            separator = " "
        separator = _BREAK


def _pieces(text: Text, room: int) -> Iterator[Text]:
    """``text`` whole, else its clauses, each whole or else its words (glued)."""
    if text.cell_len <= room:
        yield text
        return
    for start, end in _clauses(text.plain):
        clause = text[start:end]
        if clause.cell_len <= room:
            yield clause
        else:
            yield from (clause[a:b] for a, b in _glued_words(clause.plain))


def _clauses(plain: str) -> list[tuple[int, int]]:
    """The spans of ``plain``'s clauses, a one-word label part of the clause after it."""
    spans, start = [], 0
    for match in _CLAUSE.finditer(plain):
        if _LABEL.fullmatch(plain[start : match.start()]):
            continue
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(plain)))
    return [(a, b) for a, b in spans if b > a]


def _glued_words(plain: str) -> list[tuple[int, int]]:
    """The spans of ``plain``'s words, a number joined to the word after it ("450
    passed") and a word that leads to a number joined to it ("of 495")."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", plain)]
    glued: list[tuple[int, int]] = []
    for start, end in words:
        if glued and _glues(plain[glued[-1][0] : glued[-1][1]], plain[start:end]):
            glued[-1] = (glued[-1][0], end)
        else:
            glued.append((start, end))
    return glued


def _glues(before: str, word: str) -> bool:
    """Whether ``word`` stays on the line of the text ``before`` it."""
    if _LABEL.fullmatch(before):
        return True  # a clause's leading label, with the word it labels
    last = before.split()[-1]
    if last[-1] in ",;:" and not _NUMBER.fullmatch(last):
        return False  # the end of a clause
    number_before = _NUMBER.fullmatch(last) is not None and last[-1] not in ",;:"
    return number_before or (last in _BEFORE_NUMBER and _NUMBER.fullmatch(word) is not None)
