"""The report of a 2,000-episode run in a real headless Chromium: every episode is listed
(failing first), a page of rows at a time; the failing ones open with their evidence,
a passing one says how to see its details, and the search finds a task#repeat. Before,
the page listed only the 300 episodes it detailed (the failing ones of a large run) and
a 10,000-episode run with ``--episodes all`` made a page of 63 MB."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.html import _selection, report_data, write_report
from onrecord.runner import load_tasks, plan_run, regrade_run, start_run
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

_PASSING = ["full-01", "full-02", "full-03", "full-04", "full-05", "partial-01", "partial-02"]
_SEEDS = 250  # 8 tasks × 250 seeds: 2,000 episodes, the 250 of duplicate-01 failing


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big"
    protocol = plan_run(
        "remittance",
        "double_poster",
        tasks=[*_PASSING, "duplicate-01"],
        seeds=list(range(_SEEDS)),
        environment_config={"size": 30},
    )
    start_run(path, protocol)
    return path


def _saved(run: Path) -> dict[str, dict[str, Any]]:
    """The run's saved report.json, trial by ``task#repeat`` (in the report's order):
    what the page must show, read apart from the code that builds it."""
    trials = orjson.loads((run / "report.json").read_bytes())["trials"]
    return {f"{t['case']['case_id']}#{t['repeat']}": t for t in trials}


def _not_passed(trial: dict[str, Any]) -> list[list[str]]:
    return [
        [r["name"], r["status"], r["reason"]] for r in trial["results"] if r["status"] != "pass"
    ]


def _outcome(trial: dict[str, Any]) -> str:
    statuses = {r["status"] for r in trial["results"]}
    if "fail" in statuses:
        return "fail"
    return "pass" if statuses == {"pass"} and not trial["coverage_issues"] else "incomplete"


@pytest.fixture(scope="module")
def big_page(big_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(big_run, tmp_path_factory.mktemp("page") / "big.html")


def test_every_episode_is_listed_failing_first(big_run: Path) -> None:
    data = report_data(big_run)
    index = data["episode_index"]
    rows = index["rows"]
    assert len(rows) == 2000
    outcomes = [row[3] for row in rows]
    assert outcomes == ["fail"] * 250 + ["pass"] * 1750
    assert {index["cases"][row[0]] for row in rows[:250]} == {"duplicate-01"}
    # Every failing episode is detailed; the passing ones are listed without details.
    assert [row[6] for row in rows[:250]] == list(range(250))
    assert {row[6] for row in rows[250:]} == {-1}
    assert len(data["episodes"]) == 250
    assert "no_duplicate_allocation" in {index["checks"][c] for c in rows[0][5]}
    assert "`onrecord show big --episode CASE#REPEAT`" in data["detail_note"]
    assert "`onrecord report big --episodes all`" in data["detail_note"]  # RUN was missing
    # Every saved trial is listed once, with its outcome and the checks it did not pass
    # as report.json has them.
    saved = _saved(big_run)
    listed = {
        f"{index['cases'][row[0]]}#{row[1]}": [row[3], [index["checks"][c] for c in row[5]]]
        for row in rows
    }
    assert listed == {
        key: [_outcome(trial), [r[0] for r in _not_passed(trial)]] for key, trial in saved.items()
    }


def test_failing_episodes_beyond_the_budget_are_still_listed(
    big_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_selection, "BAD_LIMIT", 100)
    data = report_data(big_run)
    rows = data["episode_index"]["rows"]
    assert len(data["episodes"]) == 100
    assert [row[6] for row in rows[:100]] == list(range(100))
    assert all(row[6] == -1 and row[3] == "fail" and row[5] for row in rows[100:250])
    assert "150 failing or incomplete episodes beyond the page's budget" in data["detail_note"]


def test_the_page_without_script_shows_the_first_failing_episodes(big_page: Path) -> None:
    page = big_page.read_text()
    listed = re.findall(r'<tr data-row="\d+"[^>]*data-key="([^"]+)"', page)
    assert len(listed) == 100
    assert all(key.startswith("duplicate-01#") for key in listed)
    assert "the first 100 of 2000 episodes, failing and incomplete first" in page
    # 250 values of k: the milestones, not a table of 250 rows.
    shown = re.findall(r'data-k="(\d+)"', page)
    assert shown == ["1", "2", "3", "5", "10", "20", "50", "100", "200", "250"]


_OPEN = (
    "const find = document.getElementById('episode-filter');"
    "const type = q => { find.value = q; find.dispatchEvent(new Event('input')); };"
    "const keys = () => [...document.querySelectorAll('#episode-list tbody tr')]"
    ".map(r => r.dataset.key);"
    "const count = () => document.getElementById('episode-count').textContent;"
    "const view = document.getElementById('episode-view');"
)


def test_a_large_report_pages_its_list_and_opens_the_first_failure(
    big_run: Path, big_page: Path, tmp_path: Path
) -> None:
    out: dict[str, Any] = _drive(
        big_page,
        _OPEN + "out.rendered = document.body.dataset.rendered;"
        "out.nodes = document.getElementsByTagName('*').length;"
        "out.rows = keys().length; out.count = count();"
        "out.shown = view.dataset.episode;"
        "out.evidence = [...view.querySelectorAll('tr.failing-check td:nth-child(4)')]"
        ".map(td => td.textContent);"
        "out.checks = [...view.querySelectorAll('tr.failing-check')]"
        ".map(r => [...r.cells].slice(0, 3).map(td => td.textContent));"
        "document.getElementById('episode-next').click();"
        "out.second = [keys()[0], count()];"
        "document.getElementById('episode-outcome').value = 'pass';"
        "document.getElementById('episode-outcome').dispatchEvent(new Event('change'));"
        "out.passing = [keys()[0], count()];",
        tmp_path,
    )
    assert out["rendered"] == "yes"
    assert out["rows"] == 100  # a page of rows, not 2,000
    assert out["nodes"] < 5000
    assert out["count"] == "episodes 1–100 of 2000"
    assert out["shown"] == "duplicate-01#0"  # the first failure, open with its evidence
    # Each check it did not pass, with its status and message as report.json saved them.
    assert out["checks"] == _not_passed(_saved(big_run)["duplicate-01#0"])
    assert len(out["evidence"]) == 4
    assert all(out["evidence"])
    assert out["second"] == ["duplicate-01#100", "episodes 101–200 of 2000"]
    assert out["passing"] == ["full-01#0", "episodes 1–100 of 1750 found (2000 in all)"]


def test_the_search_finds_a_case_and_a_passing_episode_says_how_to_see_it(
    big_run: Path, big_page: Path, tmp_path: Path
) -> None:
    out: dict[str, Any] = _drive(
        big_page,
        _OPEN + "type('Duplicate-01#137'); out.found = [keys(), count()];"
        "document.querySelector('#episode-list tr[data-key]').click();"
        "out.failing = [view.dataset.episode,"
        " [...view.querySelectorAll('tr.failing-check')]"
        "  .map(r => [...r.cells].slice(0, 3).map(td => td.textContent)),"
        " view.querySelectorAll('tr.event').length, view.querySelectorAll('.diff-row').length];"
        "type('full-03#17'); out.passing = keys();"
        "const row = document.querySelector('#episode-list tr[data-key=\"full-03#17\"]');"
        "row.focus();"
        "row.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));"
        "out.summary = [view.dataset.episode, view.querySelector('.not-detailed').textContent,"
        " row.classList.contains('selected')];"
        "type('no such task'); out.none = [keys().length, count()];",
        tmp_path,
    )
    # The search is case-insensitive and matches task#repeat.
    assert out["found"] == [["duplicate-01#137"], "episodes 1–1 of 1 found (2000 in all)"]
    shown, checks, events, diff = out["failing"]
    saved = _saved(big_run)["duplicate-01#137"]
    assert shown == "duplicate-01#137"
    assert len(checks) == 4
    assert checks == _not_passed(saved)
    # One timeline row per tool call and one diff row per row changed, as recorded.
    assert events == saved["measures"]["tool_calls"] > 0
    assert diff == saved["measures"]["rows_changed"] > 0
    assert out["passing"] == ["full-03#17", "full-03#170", "full-03#171", "full-03#172",
                              "full-03#173", "full-03#174", "full-03#175", "full-03#176",
                              "full-03#177", "full-03#178", "full-03#179"]  # fmt: skip
    key, note, selected = out["summary"]
    assert key == "full-03#17"
    assert selected
    assert "onrecord show big --episode full-03#17" in note
    assert out["none"] == [0, "no episode found (2000 in all)"]


def test_a_failing_check_lists_its_episodes(big_run: Path, big_page: Path, tmp_path: Path) -> None:
    out: dict[str, Any] = _drive(
        big_page,
        _OPEN + "const row = document.querySelector("
        "'#checks tr[data-check=\"no_duplicate_allocation\"]');"
        "row.querySelector('button.list-episodes').click();"
        "out.count = count();"
        "const next = document.getElementById('episode-next');"
        "out.listed = keys(); while (!next.disabled) { next.click(); out.listed.push(...keys()); }"
        "out.check = document.getElementById('episode-check').selectedOptions[0].textContent;"
        "out.passing = document.querySelectorAll('#checks button.list-episodes').length;",
        tmp_path,
    )
    saved = _saved(big_run)
    failed = [
        key
        for key, trial in saved.items()
        if any(r[0] == "no_duplicate_allocation" for r in _not_passed(trial))
    ]
    assert len(failed) == 250
    # Exactly the episodes report.json has failing that check, each once.
    assert sorted(out["listed"]) == sorted(failed)
    assert len(out["listed"]) == len(set(out["listed"]))
    assert out["count"] == f"episodes 1–100 of {len(failed)} found ({len(saved)} in all)"
    assert out["check"] == f"not passed: no_duplicate_allocation ({len(failed)})"
    assert out["passing"] == 4  # only the checks that did not pass somewhere


def test_the_command_for_an_undetailed_episode_can_be_pasted_into_a_shell(
    tmp_path: Path,
) -> None:
    # Before: `onrecord show run --episode refund request's#0`, which a shell split at
    # the space and choked on at the quote; and on a regrade's page it sent the reader
    # to the run's own grading without saying so, and to a report of it.
    name = "refund request's"
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        "".join(
            f'[[tasks]]\ncase_id = "{case}"\ninput = "walk"\ncompletion = "either"\n'
            for case in ("plain", name)
        )
    )
    run = tmp_path / "run"
    start_run(run, plan_run("frozenlake", "walks_into_hole", tasks=load_tasks(tasks)))
    regrade_run(run, name="v2")
    notes = (
        "out.notes = [...document.querySelectorAll('#episode-list tr[data-key]')].map(r => {"
        " r.click(); const n = document.querySelector('#episode-view .not-detailed');"
        " return n ? n.textContent : null; });"
    )
    own = _drive(write_report(run, tmp_path / "own.html", episodes="0"), notes, tmp_path)
    assert own["notes"] == [
        "This page lists this episode without its details (messages, evidence, timeline, "
        "row diff): onrecord show run --episode plain#0 prints them, onrecord report "
        "run --episodes all details every episode.",
        "This page lists this episode without its details (messages, evidence, timeline, "
        "row diff): onrecord show run --episode 'refund request'\"'\"'s#0' prints them, "
        "onrecord report run --episodes all details every episode.",
    ]
    regraded = write_report(run, tmp_path / "v2.html", grading="v2", episodes="0")
    (note, _) = _drive(regraded, notes, tmp_path)["notes"]
    assert note == (
        "This page lists this episode without its details (messages, evidence, timeline, "
        "row diff): onrecord show run --episode plain#0 prints them (as the run graded "
        "them, not the regrade v2 this page shows), onrecord report run --episodes all "
        "--grading v2 details every episode."
    )
