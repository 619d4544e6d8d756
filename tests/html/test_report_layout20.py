"""The report's tables as a reviewer reads them: check names whole on a wide page, and
the tasks that failed at the top of a small Per task table, as in the Episodes list."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.html import write_report
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser


def _outcome(trial: dict[str, Any]) -> str:
    statuses = {r["status"] for r in trial["results"]}
    if "fail" in statuses:
        return "fail"
    return "pass" if statuses == {"pass"} and not trial["coverage_issues"] else "incomplete"


def _tasks_failing_first(run: Path) -> tuple[list[str], list[str]]:
    """From the saved report.json, apart from the page's code: the tasks in the report's
    order, and the order the page must list them in (any episode not passed first)."""
    trials = orjson.loads((run / "report.json").read_bytes())["trials"]
    natural: list[str] = []
    failing: set[str] = set()
    for trial in trials:
        task = trial["case"]["case_id"]
        if task not in natural:
            natural.append(task)
        if _outcome(trial) != "pass":
            failing.add(task)
    return natural, [t for t in natural if t in failing] + [t for t in natural if t not in failing]


def test_a_small_per_task_table_lists_failing_tasks_first(
    remittance_run: Path, tmp_path: Path
) -> None:
    page = write_report(remittance_run, tmp_path / "r.html").read_text()
    natural, expected = _tasks_failing_first(remittance_run)
    assert expected != natural  # passing tasks come before failing ones in the report
    table = page[page.index('id="tasks"') : page.index("</table>", page.index('id="tasks"'))]
    shown = [html.unescape(task) for task in re.findall(r'<tr data-task="([^"]*)"', table)]
    # Before: the report's order, the failing duplicate tasks below the passing ones.
    assert shown == expected
    assert 'id="task-controls"' not in page  # the whole table, not the paged one


def test_check_names_are_not_folded_on_a_wide_page(remittance_run: Path, tmp_path: Path) -> None:
    out = _drive(
        write_report(remittance_run, tmp_path / "r.html"),
        "out.names = [...document.querySelectorAll('#checks tbody tr')].map(row => {"
        " const range = document.createRange(); range.selectNodeContents(row.cells[0]);"
        " return [row.cells[0].textContent, range.getClientRects().length]; });"
        "out.width = document.documentElement.clientWidth;",
        tmp_path,
        window="1400,900",
    )
    names = dict(out["names"])
    assert "only_expected_tables_changed" in names  # the longest of the run's checks
    # Before: "only_expected_tables_chang" on one line, "ed" on the next, beside a wide
    # interval column; every name fits on one line at this width.
    assert names == dict.fromkeys(names, 1), names
