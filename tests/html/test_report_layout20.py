"""The report's tables as a reviewer reads them: check names whole on a wide page, the
tasks that failed at the top of a small Per task table (as in the Episodes list) with the
checks each did not pass, a run line in good grammar, and p-values with the digits that
keep them off the level they are read against."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.case import EvalCase
from onrecord.html import write_comparison, write_report
from onrecord.runner import plan_run, start_run
from tests.core.test_ci_outputs import make_report
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


def test_an_incomplete_task_names_the_checks_it_was_not_measured_on(
    lake_run: Path, tmp_path: Path
) -> None:
    trials = orjson.loads((lake_run / "report.json").read_bytes())["trials"]
    failed: dict[str, set[str]] = {}
    unmeasured: dict[str, set[str]] = {}
    for trial in trials:
        task = trial["case"]["case_id"]
        for result in trial["results"]:
            if result["status"] == "fail":
                failed.setdefault(task, set()).add(result["name"])
            elif result["status"] != "pass":
                unmeasured.setdefault(task, set()).add(result["name"])
    assert unmeasured  # the agent gives up: checks are left unmeasured
    page = write_report(lake_run, tmp_path / "r.html").read_text()
    table = page[page.index('id="tasks"') : page.index("</table>", page.index('id="tasks"'))]
    assert '<th scope="col">checks not passed</th>' in table
    rows = re.findall(r'<tr data-task="([^"]*)">(.*?)</tr>', table)
    assert {html.unescape(task) for task, _ in rows} == {t["case"]["case_id"] for t in trials}
    for task, row in rows:
        cell = html.unescape(re.findall(r"<td[^>]*>(.*?)</td>", row)[-1])
        names = [name for name in cell.split(", ") if name]
        shown_failed = {name for name in names if not name.endswith(" (not measured)")}
        shown_unmeasured = {n.removesuffix(" (not measured)") for n in names} - shown_failed
        task = html.unescape(task)
        # Before: an empty cell for a task whose episodes were all incomplete.
        assert shown_failed == failed.get(task, set())
        assert shown_unmeasured == unmeasured.get(task, set()) - failed.get(task, set())


def test_the_run_line_counts_one_task_in_the_singular(tmp_path: Path) -> None:
    task = EvalCase("walk", case_id="only-task", completion="either")
    run = tmp_path / "run"
    start_run(run, plan_run("frozenlake", "walks_into_hole", tasks=[task], seeds=[0, 1]))
    page = write_report(run, tmp_path / "r.html").read_text()
    # Before: "1 tasks × 2 seeds × 1 repeats".
    assert "1 task × 2 seeds × 1 repeat " in page


def test_a_p_value_just_above_a_level_is_not_shown_as_the_level(tmp_path: Path) -> None:
    # 151 and 182 discordant pairs: exact McNemar p = 0.100034, "0.1" at four digits.
    a = make_report({"posted_once": ["pass"] * 151 + ["fail"] * 182})
    b = make_report({"posted_once": ["fail"] * 151 + ["pass"] * 182})
    path, _ = write_comparison(
        a.save_json(tmp_path / "a.json"), b.save_json(tmp_path / "b.json"), tmp_path / "c.html"
    )
    page = path.read_text()
    (cell,) = re.findall(r'data-field="p_value"[^>]*>([^<]*)<', page)
    assert cell == "0.10003"


def test_a_check_measured_nowhere_has_no_interval(lake_run: Path, tmp_path: Path) -> None:
    trials = orjson.loads((lake_run / "report.json").read_bytes())["trials"]
    statuses: dict[str, set[str]] = {}
    for trial in trials:
        for result in trial["results"]:
            statuses.setdefault(result["name"], set()).add(result["status"])
    never = {name for name, seen in statuses.items() if not seen & {"pass", "fail"}}
    assert never  # the agent gives up before the goal can be judged
    assert never != set(statuses)  # and other checks are measured
    page = write_report(lake_run, tmp_path / "r.html").read_text()
    for name in statuses:
        (row,) = re.findall(rf'<tr data-check="{re.escape(name)}">(.*?)</tr>', page)
        (interval,) = re.findall(r'data-field="interval"[^>]*>([^<]*)<', row)
        # Before: "0.0% – 100.0%", as if estimated from results, beside "n/a".
        assert (interval == "—") == (name in never)
