"""The Per task table of a run of many distinct tasks, in a real headless Chromium: past
300 tasks it is paged like the Episodes list, failing tasks first, from the page's data
(5,000 tasks pre-rendered were 40,000 elements). One run of 400 FrozenLake tasks; every
one fails, so the test marks every third one passing in the data before rendering."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.html import render_report_page, report_data
from onrecord.html._tasks import task_list
from onrecord.runner import load_tasks, plan_run, start_run
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

_TASKS = 400


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tasks")
    tasks = root / "tasks.jsonl"
    tasks.write_text(
        "".join(
            orjson.dumps({"case_id": f"lake-{n:03d}", "input": "walk"}).decode() + "\n"
            for n in range(_TASKS)
        )
    )
    start_run(root / "run", plan_run("frozenlake", "walks_into_hole", tasks=load_tasks(tasks)))
    data = report_data(root / "run")
    for task in data["tasks"][::3]:
        task.update({"pass": task["episodes"], "fail": 0, "failing_checks": [], "pass_rate": 1.0})
    data["tasks"][1]["case_id"] = "Straße <b>&'\"#1"  # escaped alike by Python and script
    data["task_list"] = task_list(data["tasks"])
    return data


@pytest.fixture(scope="module")
def page(data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("page") / "tasks.html"
    path.write_text(render_report_page(data))
    return path


def test_failing_tasks_come_first_and_the_html_holds_one_page(page: Path) -> None:
    text = page.read_text()
    section = text[text.index('id="tasks-section"') : text.index('id="episodes-section"')]
    rows = re.findall(r'<tr data-task="([^"]*)"', section)
    failing = [f"lake-{n:03d}" for n in range(_TASKS) if n % 3]
    failing[0] = "Straße &lt;b&gt;&amp;&#x27;&quot;#1"
    assert rows == failing[:100]
    assert "the first 100 of 400 tasks, those with failing or incomplete episodes first" in section


_TABLE = (
    "const body = document.querySelector('#tasks tbody');"
    "const keys = () => [...body.rows].map(r => r.dataset.task);"
    "const count = () => document.getElementById('task-count').textContent;"
    "const filter = document.getElementById('task-filter');"
)


def test_the_script_pages_and_finds_tasks_with_the_same_rows(page: Path, tmp_path: Path) -> None:
    static = _drive(page, _TABLE + "out.html = body.innerHTML;", tmp_path, script=False)
    out: dict[str, Any] = _drive(
        page,
        _TABLE + "out.html = body.innerHTML;"
        "out.nodes = document.getElementsByTagName('*').length;"
        "out.first = count(); out.more = document.getElementById('task-more').hidden;"
        "const next = document.getElementById('task-next');"
        "next.click(); out.second = [keys()[0], count()];"
        "next.click(); next.click(); out.last = [keys().length, keys()[0], keys().at(-1), count(),"
        " next.disabled];"
        "filter.value = 'STRASSE'; filter.dispatchEvent(new Event('input'));"
        "out.found = [keys(), count()];"
        "filter.value = 'no_hole'; filter.dispatchEvent(new Event('input'));"
        "out.checks = count();"
        "filter.value = 'nothing'; filter.dispatchEvent(new Event('input'));"
        "out.none = [keys(), count()];",
        tmp_path,
    )
    # The rows the script writes are the rows the HTML holds (what a reader without
    # JavaScript sees), markup and all.
    assert out["html"] == static["html"]
    assert out["nodes"] < 5000
    assert out["first"] == "tasks 1–100 of 400"
    assert out["more"] is True
    assert out["second"] == ["lake-151", "tasks 101–200 of 400"]
    # 266 failing tasks, then the 134 passing ones (every third) in the report's order.
    assert out["last"] == [100, "lake-102", "lake-399", "tasks 301–400 of 400", True]
    assert out["found"] == [["Straße <b>&'\"#1"], "tasks 1–1 of 1 found (400 in all)"]
    assert out["checks"] == "tasks 1–100 of 266 found (400 in all)"  # the failing checks
    assert out["none"] == [[], "no task found (400 in all)"]


def test_a_small_table_is_written_whole_failing_tasks_first(data: dict[str, Any]) -> None:
    small = {**data, "tasks": data["tasks"][:300]}
    small["task_list"] = task_list(small["tasks"])
    section = render_report_page(small).split('id="tasks-section"')[1].split("</section>")[0]
    rows = [html.unescape(t) for t in re.findall(r'<tr data-task="([^"]*)"', section)]
    ids = [t["case_id"] for t in small["tasks"]]
    failing = [t["case_id"] for t in small["tasks"] if t["pass"] < t["episodes"]]
    assert 0 < len(failing) < 300
    assert ids[0] not in failing  # the two orders differ
    # Each group in the report's order, as the paged table and the Episodes list have it.
    assert rows == failing + [task for task in ids if task not in failing]
    assert "task-controls" not in section
    assert "data-page" not in section
