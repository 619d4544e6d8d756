"""Report pages in a real headless Chromium, probe 7: task ids of emoji counted in
characters as the HTML counts them, the small task table's filter matching the id and
failing checks (not the row's text run together), "show all" in an episode row
unfolding only, and the paging buttons keeping the keyboard focus on the first and last
page."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.html import write_comparison, write_report
from onrecord.runner import load_tasks, plan_run, start_run
from tests.chromium import dump_dom
from tests.html.test_browser_probe import _CATCHER, _drive

pytestmark = pytest.mark.browser


def _lake(root: Path, ids: list[str], repeats: int) -> Path:
    """A FrozenLake run whose every episode fails, over tasks of these ids."""
    tasks = root / "tasks.jsonl"
    tasks.write_text(
        "".join(
            orjson.dumps({"case_id": case, "input": "walk", "completion": "either"}).decode() + "\n"
            for case in ids
        )
    )
    run = root / "run"
    start_run(
        run, plan_run("frozenlake", "walks_into_hole", tasks=load_tasks(tasks), repeats=repeats)
    )
    return run


_SHORT, _LONG = "😀" * 100, "😀" * 130  # 100 and 130 characters, 200 and 260 UTF-16 units


def test_emoji_ids_are_folded_and_counted_in_characters(tmp_path: Path) -> None:
    page = write_report(_lake(tmp_path, [_SHORT, _LONG], 1), tmp_path / "r.html")
    cells = (
        "out.cells = [...document.querySelectorAll('#episode-list tr[data-key]')]"
        ".map(r => [r.dataset.key, r.cells[0].innerHTML]);"
    )
    written = _drive(page, cells, tmp_path, script=False)["cells"]
    out = _drive(
        page,
        cells + "const view = document.getElementById('episode-view');"
        "out.headings = [...document.querySelectorAll('#episode-list tr[data-key]')].map(r => {"
        " r.click(); return [view.querySelector('h2').textContent,"
        " view.querySelectorAll('.task-id').length]; });",
        tmp_path,
    )
    # The script renders the list's rows as the HTML has them. Before: the 100-emoji id
    # was folded at 60 and said "200 characters"; the 130-emoji one "260 characters".
    assert out["cells"] == written
    shown = dict(out["cells"])
    assert shown[f"{_SHORT}#0"] == _SHORT
    assert "130 characters, 1 line" in shown[f"{_LONG}#0"]
    assert f'class="preview">{"😀" * 120}…<' in shown[f"{_LONG}#0"]
    # The episode heading cuts the long id at 120 characters only.
    headings = {heading.split(" #")[0]: below for heading, below in out["headings"]}
    assert headings == {f"Episode {_SHORT}": 0, f"Episode {'😀' * 120}…": 1}


def test_the_task_filter_matches_ids_and_failing_checks_not_the_rows_text(
    tmp_path: Path,
) -> None:
    page = write_report(_lake(tmp_path, ["case-1", "case-2", "case-22", "x" * 200], 2))
    out = _drive(
        page,
        "const filter = document.getElementById('task-filter');"
        "out.found = ['case-22', ' case-22 ', 'case-2', 'show all', 'characters', '200',"
        " 'no_hole_visited', 'case-1 no_hole'].map(q => {"
        " filter.value = q; filter.dispatchEvent(new Event('input'));"
        " return [...document.querySelectorAll('#tasks tbody tr')]"
        "  .filter(r => r.style.display !== 'none')"
        "  .map(r => r.dataset.task.length > 9 ? 'long' : r.dataset.task); });",
        tmp_path,
    )
    every = ["case-1", "case-2", "case-22", "long"]
    # Before: "case-22" found case-2 too (its row read "case-2" then 2 episodes), and
    # "show all", "characters" and "200" the long id's row, by its fold's label.
    assert out["found"] == [
        ["case-22"],
        ["case-22"],
        ["case-2", "case-22"],
        [],
        [],
        [],
        every,
        ["case-1"],
    ]


def test_show_all_in_an_episode_row_unfolds_without_opening_it(tmp_path: Path) -> None:
    page = write_report(_lake(tmp_path, ["plain", "t" * 500], 1))
    out = _drive(
        page,
        "const view = document.getElementById('episode-view');"
        "const row = [...document.querySelectorAll('#episode-list tr[data-key]')]"
        " .find(r => r.dataset.key.startsWith('ttt'));"
        "const before = [view.dataset.episode, location.hash];"
        "row.querySelector('summary').click();"
        "out.toggle = [before, view.dataset.episode, location.hash,"
        " row.querySelector('details').open];"
        "row.cells[1].click();"  # the row itself still opens the episode
        "out.row = [view.dataset.episode === row.dataset.key, location.hash.slice(0, 12)];",
        tmp_path,
    )
    # Before: the click that unfolded the id also opened its episode, scrolled to the view
    # below and added a step to the history.
    assert out["toggle"] == [["plain#0", ""], "plain#0", "", True]
    assert out["row"] == [True, "#episode=ttt"]


def _drive_later(page: Path, driver: str, later: str, tmp_path: Path) -> dict[str, Any]:
    """``driver`` after the page's script, then ``later`` once the browser has updated
    the rendering (where it drops the focus of a disabled button); what they wrote in
    ``out``, with the page's script errors."""
    text = page.read_text().replace("<head>", "<head>" + _CATCHER, 1)
    probe = (
        "<script>(function(){const out={};try{" + driver + "}catch(e){out.driver=String(e)}"
        "setTimeout(() => {try{" + later + "}catch(e){out.later=String(e)}"
        "out.errors=window.__errors;document.body.setAttribute('data-probe',"
        "JSON.stringify(out));}, 50);})()</script>"
    )
    end = text.rindex("</body>")
    driven = tmp_path / f"later-{page.stem}.html"
    driven.write_text(text[:end] + probe + text[end:])
    # The timer runs before the DOM is read (it was --virtual-time-budget=5000).
    dom = dump_dom(driven, until="document.body.hasAttribute('data-probe')")
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, dom[-2000:]
    out: dict[str, Any] = orjson.loads(html.unescape(found.group(1)))
    assert "driver" not in out, out["driver"]
    assert "later" not in out, out["later"]
    assert out["errors"] == []
    return out


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """320 tasks of one episode: both the Per task table and the Episodes list are paged."""
    root = tmp_path_factory.mktemp("paged")
    return write_report(_lake(root, [f"t-{i}" for i in range(320)], 1))


@pytest.mark.parametrize("section", ["episode", "task"])
def test_paging_to_the_last_page_from_the_keyboard_keeps_the_focus(
    section: str, paged: Path, tmp_path: Path
) -> None:
    page = paged
    pages = (
        f"const prev = document.getElementById('{section}-prev');"
        f"const next = document.getElementById('{section}-next');"
        f"const count = () => document.getElementById('{section}-count').textContent;"
    )
    # Enter or Space on a focused button clicks it.
    out = _drive_later(
        page,
        pages + "next.focus(); while (!next.disabled) next.click(); out.last = count();",
        "out.focus = document.activeElement.id;",
        tmp_path,
    )
    # Before: the focus fell to the page's body, the next Tab going from the top.
    assert out["focus"] == f"{section}-prev"
    assert out["last"].startswith(f"{section}s 301–320 of 320")
    back = _drive_later(
        page,
        pages + "next.click(); prev.focus(); prev.click(); out.first = count();",
        "out.focus = document.activeElement.id;",
        tmp_path,
    )
    assert back["focus"] == f"{section}-next"
    assert back["first"].startswith(f"{section}s 1–100 of 320")


def test_back_to_the_page_as_opened_shows_the_first_episode_on_its_page(
    paged: Path, tmp_path: Path
) -> None:
    out = _drive(
        paged,
        "const view = document.getElementById('episode-view');"
        "const state = () => { const r = document.querySelector('#episode-list tr.selected');"
        " return [view.dataset.episode, r ? r.dataset.key : null,"
        " document.getElementById('episode-count').textContent]; };"
        # The browser fires hashchange after a step back; a probe sets the address and
        # fires it (as test_report_links_browser does).
        "const back = () => { history.pushState(null, '', location.pathname);"
        " dispatchEvent(new HashChangeEvent('hashchange')); return state(); };"
        "out.linked = state(); out.back = back();"
        "const find = document.getElementById('episode-filter');"
        "find.value = 't-25'; find.dispatchEvent(new Event('input'));"
        "document.querySelector('#episode-list tr[data-key]').click();"
        "out.searched = state(); out.back2 = back();",
        tmp_path,
        fragment="episode=t-250%230",
    )
    assert out["linked"] == ["t-250#0", "t-250#0", "episodes 201–300 of 320"]
    assert out["searched"] == ["t-25#0", "t-25#0", "episodes 1–11 of 11 found (320 in all)"]
    # Before: the view showed t-0#0 while the list stayed on episodes 201–300 (or on the
    # search that hid t-0), with no row of the episode open.
    assert out["back"] == out["back2"] == ["t-0#0", "t-0#0", "episodes 1–100 of 320"]


def test_the_list_button_takes_the_focus_to_the_episodes_it_lists(
    paged: Path, tmp_path: Path
) -> None:
    out = _drive(
        paged,
        "const button = document.querySelector('#checks button.list-episodes');"
        "button.focus(); button.click();"  # as Enter or Space on the focused button
        "out.focus = document.activeElement.id;"
        "out.check = document.getElementById('episode-check').selectedOptions[0].textContent;"
        "out.top = document.getElementById('episodes-section').getBoundingClientRect().top;",
        tmp_path,
    )
    # Before: the focus stayed on the button in the checks table, scrolled out of view,
    # and the next Tab went on from there.
    assert out["focus"] == "episode-check"
    assert out["check"].startswith("not passed: ")
    assert abs(out["top"]) < 2  # the list is in view, not scrolled back to the button


# Each character of an element's text with its left edge, sorted left to right: the
# text as drawn.
_DRAWN = (
    "const drawn = element => { const walker = document.createTreeWalker(element,"
    " NodeFilter.SHOW_TEXT); const at = []; let node;"
    " while ((node = walker.nextNode())) for (let i = 0; i < node.data.length; i++) {"
    "  const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);"
    "  at.push([node.data[i], range.getBoundingClientRect().left]); }"
    " return at.sort((a, b) => a[1] - b[1]).map(c => c[0]).join(''); };"
)
_HEBREW = "שלום עולם"


def test_a_right_to_left_task_id_keeps_its_repeat_after_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    page = write_report(_lake(tmp_path / "a", [_HEBREW, "plain"], 1))
    out = _drive(
        page,
        _DRAWN + "const view = document.getElementById('episode-view');"
        "document.querySelector('#episode-list tr[data-key]').click();"
        "out.heading = drawn(view.querySelector('h2'));",
        tmp_path,
    )
    # Drawn right to left, the name reads "םלוע םולש" from the left. Before: "#0" ran
    # into it and was drawn on its left, "Episode #0 םלוע םולש fail".
    assert out["heading"] == f"Episode {_HEBREW[::-1]} #0 fail"
    tasks_file = tmp_path / "a" / "tasks.jsonl"
    start_run(tmp_path / "b", plan_run("frozenlake", "walks_to_goal", tasks=load_tasks(tasks_file)))
    compared, _ = write_comparison(tmp_path / "a" / "run", tmp_path / "b", tmp_path / "c.html")
    pairs = _drive(
        compared,
        _DRAWN + "out.pairs = [...document.querySelectorAll('li.discordant')].map(drawn);",
        tmp_path,
    )["pairs"]
    assert pairs[:2] == [f"{_HEBREW[::-1]}#0: fail→pass", "plain#0: fail→pass"]
