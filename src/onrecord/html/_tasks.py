"""The report's Per task section, failing tasks first as in the Episodes list. A run of
up to ``ONE_PAGE`` tasks gets the whole table in the HTML. A run of 5,000 distinct tasks
made a table of 1.3 MB and 40,000 elements that Chromium took 1.3 s to lay out; beyond
``ONE_PAGE`` the section is paged like the Episodes list, the first page written into
the HTML (what a reader without JavaScript sees), every other page rendered by
``report.js`` from the page's data (``tasks`` and ``task_list``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from onrecord._natural import natural_key
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

if TYPE_CHECKING:
    from onrecord.report import EvaluationReport
    from onrecord.runner import EpisodeJob

__all__ = ["not_passed", "task_list", "task_rows", "tasks_section"]


def task_rows(report: EvaluationReport, planned: Iterable[EpisodeJob] = ()) -> list[dict[str, Any]]:
    """One row per task of ``report`` (in its order), then one per ``planned`` task
    (a run's jobs) it holds no trial of. ``missing``: the task's planned episodes
    without a trial. A run whose every episode timed out had an empty table, no row
    for the tasks it planned."""
    rows: dict[str, dict[str, Any]] = {}
    for trial in report.trials:
        row = rows.setdefault(str(trial.case["case_id"]), _new_row(str(trial.case["case_id"])))
        row["episodes"] += 1
        row[trial.outcome_among(report.check_names)] += 1
        for result in trial.results:
            if result.status != "pass":  # failed, or not measured (an evaluator error too)
                key = "failing_checks" if result.status == "fail" else "unmeasured_checks"
                if result.name not in row[key]:
                    row[key].append(result.name)
    for case_id, count in Counter(str(job.case["case_id"]) for job in planned).items():
        row = rows.setdefault(case_id, _new_row(case_id))
        row["missing"] = max(count - row["episodes"], 0)
    for row in rows.values():
        row["pass_rate"] = row["pass"] / row["episodes"] if row["episodes"] else None
        row["failing_checks"].sort(key=natural_key)  # not whichever trial failed first
        # A check that failed in one episode and was not measured in another is listed
        # once, as failing; an incomplete task showed an empty cell without this list.
        unmeasured = set(row["unmeasured_checks"]) - set(row["failing_checks"])
        row["unmeasured_checks"] = sorted(unmeasured, key=natural_key)
    return list(rows.values())


def _new_row(case_id: str) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "episodes": 0,
        "pass": 0,
        "fail": 0,
        "incomplete": 0,
        "missing": 0,
        "failing_checks": [],
        "unmeasured_checks": [],
    }


def task_list(tasks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``order``: positions in ``tasks``, those with an episode that did not pass first
    (each group in the report's order); ``rates``: each task's pass rate as the page
    writes it. Python formats the rate so that the script need not copy ``percent``
    (Python's rounding of 6.25 to "6.2" is not JavaScript's "6.3")."""
    bad = [at for at, t in enumerate(tasks) if _not_all_passed(t)]
    good = [at for at, t in enumerate(tasks) if not _not_all_passed(t)]
    return {"order": bad + good, "rates": [percent(t["pass_rate"]) for t in tasks]}


def _not_all_passed(task: Mapping[str, Any]) -> bool:
    return bool(task["pass"] < task["episodes"] or task.get("missing"))


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
    an incomplete task incomplete; its cell was empty), then the planned episodes the
    grading has no trial of. ``taskNotPassed`` in ``report.js``."""
    unmeasured = [f"{name_text(n)} (not measured)" for n in task.get("unmeasured_checks", ())]
    missing = task.get("missing") or 0
    lacking = [f"{missing} planned episode{'' if missing == 1 else 's'} without a trial"]
    return ", ".join(
        [*map(name_text, task["failing_checks"]), *unmeasured, *(lacking if missing else ())]
    )
