"""The size cap of the ``--markdown`` summaries. GitHub drops a step summary over 1 MiB
and refuses a pull-request comment over 65,536 characters: a policy with hundreds of
failing requirements, or a comparison of hundreds of checks, wrote a summary that was
lost whole. Tables are cut by whole rows (a row is one line: record text never holds a
newline there), never inside a row or a code span, with a line saying what was left out
and where every row is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MARKDOWN_LIMIT", "Part", "fitted"]

MARKDOWN_LIMIT = 60_000
"""Characters: under a pull-request comment's 65,536, with room for a few lines around."""

_NOTE_ROOM = 400
"""Kept free for the line saying what was left out."""


@dataclass(frozen=True)
class Part:
    """A section: ``lines``, whose ``rows`` lines after the first ``head`` (a title, a
    table's header) may be cut from the end, whole; ``noun`` names them, of which
    ``more`` were already left unlisted (its "… and N more" line goes with a cut)."""

    lines: Sequence[str]
    head: int = 0
    rows: int = 0
    noun: str = "rows"
    more: int = 0


def fitted(top: Sequence[str], parts: Sequence[Part], bottom: Sequence[str], where: str) -> str:
    """``top``, the ``parts`` that fit in ``MARKDOWN_LIMIT`` characters, ``bottom``. The
    first part that does not fit keeps the rows that do; it and every later part are
    then counted in one line naming ``where`` the full detail is."""
    room = MARKDOWN_LIMIT - _size(top) - _size(bottom) - _NOTE_ROOM
    lines: list[str] = list(top)
    left: list[str] = []
    for part in parts:
        size = _size(part.lines)
        if not left and size <= room:
            lines += part.lines
            room -= size
            continue
        kept = _rows_that_fit(part, room) if not left else 0
        if kept:
            lines += part.lines[: part.head + kept]
        if part.rows - kept + part.more:
            left.append(f"{part.rows - kept + part.more} {part.noun}")
        room = -1  # nothing after a cut part: its rows came first
    if left:
        lines += [
            "",
            f"… left out to keep this summary under {MARKDOWN_LIMIT:,} characters (a GitHub "
            f"comment holds 65,536): {', '.join(left)}; every one: {where}",
            "",
        ]
    return "\n".join([*lines, *bottom]) + "\n"


def _rows_that_fit(part: Part, room: int) -> int:
    """How many of ``part``'s rows fit in ``room`` with its head (0: none, nor the head)."""
    used = _size(part.lines[: part.head])
    kept = 0
    for row in part.lines[part.head : part.head + part.rows]:
        used += len(row) + 1
        if used > room:
            break
        kept += 1
    return kept


def _size(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)
