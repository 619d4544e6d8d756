"""The report's Episodes section: every episode of the run listed from the compact index
(``_selection``), failing and incomplete ones first, a page of rows at a time, with a
search by task id and filters by outcome and by the check that did not pass.

The first page is written into the HTML, so a reader without JavaScript sees the
failing episodes; ``report.js`` renders the same rows (the same markup) for any page or
filter, so 10,000 episodes cost a few hundred table rows in the DOM, not 70,000 nodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from onrecord._natural import natural_key
from onrecord.html._page import (
    NAME_CHARS,
    TEXT_CHARS,
    attr,
    cell,
    esc,
    name_text,
    table,
)

__all__ = ["ONE_PAGE", "PAGE_ROWS", "episodes_section"]

ONE_PAGE = 300
"""A run of up to this many episodes is listed on one page, as before."""
PAGE_ROWS = 100
"""Episode rows on one page of a longer list: the detail view below it stays a scroll
away. ``report.js`` reads the size from the table's ``data-page``."""


def episodes_section(data: Mapping[str, Any]) -> str:
    """The section, or nothing for a report file (no episodes to list)."""
    index = data.get("episode_index") or {"cases": [], "rows": []}
    note = f'<p class="meta">{esc(data["detail_note"])}</p>' if data["detail_note"] else ""
    rows = index["rows"]
    if not rows:
        # `--episodes failing` on a run without failures: say so rather than vanish.
        return f'<section id="episodes-section"><h2>Episodes</h2>{note}</section>' if note else ""
    page = len(rows) if len(rows) <= ONE_PAGE else PAGE_ROWS
    more = (
        f'<p class="meta" id="episode-more">the first {page} of {len(rows)} episodes, '
        "failing and incomplete first; with JavaScript the page lists, finds and pages "
        "every one (all are in its <code>onrecord-data</code> JSON)</p>"
        if len(rows) > page
        else ""
    )
    listing = table(
        ("task", "repeat", "seed", "outcome", "ended", "checks not passed"),
        [_row(index, position) for position in range(page)],
        css="episodes",
        element_id="episode-list",
        data={"page": page},
    )
    return (
        # The hint and the rows' focus come with the script that opens an episode:
        # without it, each row was a Tab stop that did nothing, under "click an episode".
        '<section id="episodes-section"><h2>Episodes</h2><p class="meta" id="episode-hint" '
        "hidden>click an episode (or focus it and press Enter) for its timeline, row diff, "
        "audit history and failing checks</p>"
        + note
        + _controls(index)
        + more
        + listing
        + '<div id="episode-view"><noscript><p>The episode details (timeline, row diff, '
        "audit history) need JavaScript; their data is in this page's "
        "<code>onrecord-data</code> JSON, which <code>onrecord report --json FILE</code> "
        "saves.</p></noscript></div></section>"
    )


def _row(index: Mapping[str, Any], position: int) -> str:
    """One episode's row; ``row`` in ``report.js`` writes the same markup, focusable."""
    case, repeat, seed, outcome, ending, checks, detail = index["rows"][position]
    case_id = index["cases"][case]
    # Not focusable: ``row`` in the script, which opens an episode, adds tabindex="0" and
    # aria-controls (keyboard users reach and open it like a button, Enter or Space).
    detailed = f' data-index="{detail}"' if detail >= 0 else ""
    return (
        f'<tr data-row="{position}"{detailed} data-key="{attr(case_id)}#{repeat}">'
        + cell(name_text(case_id), limit=NAME_CHARS)
        + cell(repeat, css="num")
        + cell(seed, css="num")
        # One-word outcomes stay whole ("terminat|ed" when a long task name took the room).
        + cell(outcome, css=f"tag {outcome}")
        + cell(index["endings"][ending], css="tag")
        + cell(", ".join(name_text(index["checks"][c]) for c in checks), limit=TEXT_CHARS)
        + "</tr>"
    )


def _controls(index: Mapping[str, Any]) -> str:
    """Search and filters, hidden until the script shows them (without it they would
    filter nothing). Their counts are over every episode."""
    rows: Sequence[list[Any]] = index["rows"]
    outcomes = Counter(row[3] for row in rows)
    failed = Counter(check for row in rows for check in row[5])
    outcome_options = "".join(
        f'<option value="{attr(name)}">{esc(name_text(name))} ({count})</option>'
        for name, count in sorted(outcomes.items(), key=lambda item: item[0] == "pass")
    )
    check_options = "".join(
        f'<option value="{position}">not passed: {esc(name_text(name))} '
        f"({failed[position]})</option>"
        # Natural order, as everywhere else on the page: h4 before h16.
        for position, name in sorted(
            enumerate(index["checks"]), key=lambda item: natural_key(item[1])
        )
    )
    return (
        '<div class="controls" id="episode-controls" hidden>'
        '<input type="search" id="episode-filter" placeholder="find a task id or task#repeat" '
        'aria-label="find episodes by task id" aria-controls="episode-list">'
        '<select id="episode-outcome" aria-label="episodes by outcome" '
        f'aria-controls="episode-list"><option value="">every outcome ({len(rows)})</option>'
        f"{outcome_options}</select>"
        '<select id="episode-check" aria-label="episodes by a check they did not pass" '
        'aria-controls="episode-list"><option value="">any check</option>'
        f"{check_options}</select>"
        '<button type="button" id="episode-prev">← previous</button>'
        '<button type="button" id="episode-next">next →</button>'
        '<span class="meta" id="episode-count" aria-live="polite"></span></div>'
    )
