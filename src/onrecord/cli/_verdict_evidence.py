"""``onrecord show RUN --episode CASE#REPEAT``: the evidence of the episode's verdicts.

A check returns ``OutcomeVerdict(passed, reason, evidence)``; the reason is one
sentence (``diff_satisfies_rules`` names 5 broken rules "and 7 more in the evidence's
'broken'"), the evidence holds what it measured: every broken rule, every mismatch, the
tile an agent ended on. ``show --episode`` printed only the reason, so a reviewer
reading a CI log had to open report.json. The evidence of the checks that did not pass
is now printed under the verdicts, one row per key (and per item of a list); that of
the checks that passed only on request (``--all-evidence``), to keep the default short.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from onrecord.cli._episode_view import Cells, as_json
from onrecord.cli._render import _table, literal, plain

__all__ = ["ALL_EVIDENCE", "EVIDENCE", "ITEMS", "render_evidence"]

ALL_EVIDENCE = "--all-evidence"
"""The ``show`` option that prints the evidence of the checks that passed too."""

EVIDENCE = 160
"""Characters of an evidence value shown before ``… (N characters)``."""

ITEMS = 10
"""Items of an evidence list shown, one row each, before ``… N more``."""


def render_evidence(
    console: Console,
    results: Iterable[Mapping[str, Any]],
    *,
    every: bool = False,
    full: bool = False,
    command: str = "onrecord show RUN --episode CASE#REPEAT",
) -> None:
    """The evidence of each result (a trial's ``results``, as dicts) that did not pass,
    or of every result when ``every``; long values and lists cut unless ``full``.
    ``command`` (the one that printed this) is how the hints name the way to see more."""
    cell = Cells(full=full)
    title = "evidence of every check" if every else "evidence of the checks not passed"
    table = _table("check", "key", "value")
    hidden = 0
    for result in results:
        evidence = result.get("evidence")
        if result.get("status") == "pass" and not every:
            hidden += bool(evidence)  # a pass with nothing to show is not worth a hint
            continue
        for index, (key, value) in enumerate(_rows(evidence, cell, full=full)):
            # The name once per check: repeated on each row, it hid where one check ends.
            table.add_row(_key(str(result.get("name"))) if index == 0 else "", key, value)
    if table.row_count:
        # A line of its own: as the table's title, it wrapped over the narrow table of
        # a check or two ("evidence of the checks not" over "passed").
        console.print(title)
        console.print(table)
        cell.notice(console, command + (f" {ALL_EVIDENCE}" if every else ""))
    if hidden:
        console.print(
            f"evidence of {hidden} check(s) that passed left out; see it: "
            f"{literal(command)} {ALL_EVIDENCE}",
            soft_wrap=True,  # the command is copied from here: one line
        )


_Row = tuple[str | Text, str | Text]
"""A (key, value) pair of cells."""


def _rows(evidence: Any, cell: Cells, *, full: bool) -> Iterator[_Row]:
    """(key, value) cells of one check's evidence: one per key (a mapping too long to
    read whole split into its keys) and one per item of a list (the broken rules, the
    mismatches), the first ``ITEMS`` of each shown unless ``full``. A value other than
    a mapping (a record written by hand) is one row."""
    if not isinstance(evidence, Mapping):
        yield "", cell(evidence, EVIDENCE)
        return
    if not evidence:
        # Said, rather than left out: "no evidence" and "not shown" read apart.
        yield "", Text("(no evidence recorded)", style="dim")
        return
    for key, value in evidence.items():
        yield from _value_rows(_name(key), value, cell, full=full)


def _value_rows(key: str, value: Any, cell: Cells, *, full: bool) -> Iterator[_Row]:
    """The rows of the value named ``key``."""
    if isinstance(value, list) and value:
        # One row per item: as one JSON array cut at EVIDENCE characters, a list of
        # broken rules showed the first one or two and hid the rest behind --full.
        shown = value if full else value[:ITEMS]
        for index, item in enumerate(shown):
            yield _key(f"{key}[{index}]"), cell(item, EVIDENCE)
        yield from _more(f"{key}[{len(shown)}…]", len(shown), len(value), "items", cell)
    elif isinstance(value, Mapping) and len(as_json(value)) > EVIDENCE:
        # Too long to read whole, a mapping is split one level down, a row per key: as
        # one value, expected_changes' diff ({table: {created: [...], ...}}) was cut
        # inside its first table, the others unseen. Not further: deeper keys
        # ("diff.adjustments.created[0]") folded at 80 columns. Whether it is split
        # does not depend on ``full``: --full shows the same rows, whole.
        names = list(value) if full else list(value)[:ITEMS]
        for name in names:
            yield _key(f"{key}{_nested(name)}"), cell(value[name], EVIDENCE)
        yield from _more(f"{key}.…", len(names), len(value), "keys", cell)
    else:
        yield _key(key), cell(value, EVIDENCE)


def _more(key: str, shown: int, total: int, what: str, cell: Cells) -> Iterator[_Row]:
    """The row saying how many more items (or keys) ``--full`` would show."""
    if shown < total:
        cell.shortened += 1  # counted by the "--full" notice as a value cut
        yield _key(key), Text(f"… {total - shown:,} more ({total:,} {what})", style="dim")


_AMBIGUOUS = frozenset('.[]"…')
"""Characters that, in a bare key, would read as a path's own punctuation (a nesting
dot, an index, a quote, the ``…`` of a "more" row)."""


def _name(key: object) -> str:
    """A key as shown in the key column: bare when it reads as nothing else
    (``steps``, ``CL-100046``, ``tile``), else JSON-quoted in brackets (``["a.b"]``).
    Bare, ``{"a.b": 1}`` and ``{"a": {"b": 1}}`` both read ``a.b``, and a key holding a
    newline split its row. Not ``key_path``'s rule: it would bracket the row keys with a
    hyphen (``diff.CL-100046``) that checks' evidence is full of."""
    text = str(key)
    if text and text == text.strip() and text.isprintable() and _AMBIGUOUS.isdisjoint(text):
        return text
    return f"[{json.dumps(text)}]"


def _nested(key: object) -> str:
    """A key one level down, after its parent's: ``.name`` or ``["a.b"]``."""
    name = _name(key)
    return name if name.startswith("[") else f".{name}"


def _key(key: str) -> Text:
    # A Text, as ``Cells`` gives values: a key is printed as the record holds it, but a
    # newline shown as "\n" (as ``cell`` does): a check name "posted\nonce" read as two.
    return Text(plain(key).replace("\n", "\\n"))
