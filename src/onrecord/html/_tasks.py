"""The report's Per task section, failing tasks first as in the Episodes list. A run of
up to ``ONE_PAGE`` tasks gets the whole table in the HTML. A run of 5,000 distinct tasks
made a table of 1.3 MB and 40,000 elements that Chromium took 1.3 s to lay out; beyond
``ONE_PAGE`` the section is paged like the Episodes list, the first page written into
the HTML (what a reader without JavaScript sees), every other page rendered by
``report.js`` from the page's data (``tasks`` and ``task_list``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.html._listing import ONE_PAGE, PAGE_ROWS
from onrecord.html._page import (
    NAME_CHARS,
    TEXT_CHARS,
    attr,
    cell,
    name_text,
    percent,
    table,
)

__all__ = ["not_passed", "task_list", "tasks_section"]


def task_list(tasks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``order``: positions in ``tasks``, those with an episode that did not pass first
    (each group in the report's order); ``rates``: each task's pass rate as the page
    writes it. Python formats the rate so that the script need not copy ``percent``
    (Python's rounding of 6.25 to "6.2" is not JavaScript's "6.3")."""
    bad = [at for at, t in enumerate(tasks) if t["pass"] < t["episodes"]]
    good = [at for at, t in enumerate(tasks) if t["pass"] >= t["episodes"]]
    return {"order": bad + good, "rates": [percent(t["pass_rate"]) for t in tasks]}


def tasks_section(data: Mapping[str, Any]) -> str:
    tasks = data["tasks"]
    paged = len(tasks) > ONE_PAGE
    listing = data.get("task_list") or task_list(tasks)
    order = listing["order"][:PAGE_ROWS] if paged else listing["order"]
    more = (
        f'<p class="meta" id="task-more">the first {PAGE_ROWS} of {len(tasks)} tasks, those '
        "with failing or incomplete episodes first; with JavaScript the page finds and "
        "pages every one (all are in its <code>onrecord-data</code> JSON)</p>"
        if paged
        else ""
    )
    # Paging buttons and a count only for a paged table: a small one looks as before.
    controls = (
        '<div class="controls" id="task-controls" hidden><input type="search" '
        'id="task-filter" placeholder="filter tasks" aria-label="filter tasks" '
        'aria-controls="tasks"><button type="button" id="task-prev">← previous</button>'
        '<button type="button" id="task-next">next →</button>'
        '<span class="meta" id="task-count" aria-live="polite"></span></div>'
        if paged
        # Hidden until the script shows it: without JavaScript it would filter nothing.
        else '<input type="search" id="task-filter" placeholder="filter tasks" '
        'aria-label="filter tasks" aria-controls="tasks" hidden>'
    )
    return (
        '<section id="tasks-section"><h2>Per task</h2>'
        + controls
        + more
        + table(
            ("task", "episodes", "pass", "fail", "incomplete", "pass rate", "checks not passed"),
            [_row(tasks[at], listing["rates"][at]) for at in order],
            element_id="tasks",
            data={"page": PAGE_ROWS} if paged else None,
        )
        + "</section>"
    )


def _row(task: Mapping[str, Any], rate: str) -> str:
    """One task's row; ``taskRow`` in ``report.js`` writes the same markup."""
    return (
        f'<tr data-task="{attr(task["case_id"])}">'
        + cell(name_text(task["case_id"]), limit=NAME_CHARS)
        + cell(task["episodes"], css="num")
        + cell(task["pass"], css="num pass")
        + cell(task["fail"], css="num fail")
        + cell(task["incomplete"], css="num incomplete")
        + cell(rate, css="num", data={"value": task["pass_rate"]})
        + cell(not_passed(task), limit=TEXT_CHARS)
        + "</tr>"
    )


def not_passed(task: Mapping[str, Any]) -> str:
    """The checks that failed, then those only not measured in some episode (what made
    an incomplete task incomplete; its cell was empty). ``taskNotPassed`` in ``report.js``."""
    unmeasured = [f"{name_text(n)} (not measured)" for n in task.get("unmeasured_checks", ())]
    return ", ".join([*map(name_text, task["failing_checks"]), *unmeasured])
