"""Deep links to episodes and the accent-folding search, in a real headless Chromium. One
run of 350 failing FrozenLake episodes (7 tasks × 50 repeats, so the list has four
pages) whose task ids hold '#', spaces, quotes and non-ASCII letters."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from onrecord.html import write_report
from onrecord.runner import load_tasks, plan_run, start_run
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

_IDS = [
    "plain-task",
    "refund request's #2",
    "İstanbul-route",
    "Straße-7",
    'café "quoted"',
    "e\u0301clair",  # é as e and a combining accent
    "日本-lake",
]
_REPEATS = 50


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("links")
    tasks = root / "tasks.jsonl"
    tasks.write_text(
        "".join(
            orjson.dumps({"case_id": case, "input": "walk", "completion": "either"}).decode() + "\n"
            for case in _IDS
        )
    )
    run = root / "run"
    start_run(
        run, plan_run("frozenlake", "walks_into_hole", tasks=load_tasks(tasks), repeats=_REPEATS)
    )
    return write_report(run, root / "links.html")


_STATE = (
    "const view = document.getElementById('episode-view');"
    "const count = () => document.getElementById('episode-count').textContent;"
    "const selected = () => { const r = document.querySelector('#episode-list tr.selected');"
    " return r ? r.dataset.key : null; };"
    "const notice = () => { const n = document.getElementById('link-notice');"
    " return n && !n.hidden ? n.textContent : null; };"
    "const state = () => [view.dataset.episode, selected(), count(), notice()];"
    # The browser fires hashchange after a navigation to a link of the same page or a
    # step back; a probe cannot wait for it, so it sets the address and fires it.
    "const go = hash => { history.pushState(null, '', hash || location.pathname);"
    " dispatchEvent(new HashChangeEvent('hashchange')); return state(); };"
)


def test_opening_an_episode_puts_a_link_in_the_address_that_opens_it_again(
    page: Path, tmp_path: Path
) -> None:
    keys = [
        f"{case}#{repeat}" for case, repeat in zip(_IDS, (3, 17, 49, 0, 25, 9, 40), strict=True)
    ]
    out: dict[str, Any] = _drive(
        page,
        _STATE + f"const keys = {orjson.dumps(keys).decode()};"
        "const find = document.getElementById('episode-filter');"
        "out.links = keys.map(key => {"
        " find.value = key; find.dispatchEvent(new Event('input'));"
        " const row = [...document.querySelectorAll('#episode-list tr[data-key]')]"
        "  .find(r => r.dataset.key === key);"
        " row.click(); return location.hash; });"
        # The search still holds the last key: following a link clears it.
        "out.followed = out.links.map(go);"
        "out.search = find.value;"
        "out.back = go(out.links[1]);"  # as Back to the previous episode does
        "out.start = go('');",  # back to the page as it opened
        tmp_path,
    )
    # encodeURIComponent of task#repeat: '#' is %23, so the repeat is not lost.
    assert out["links"][0] == "#episode=plain-task%233"
    assert out["links"][1] == "#episode=refund%20request's%20%232%2317"
    assert out["links"][3] == "#episode=Stra%C3%9Fe-7%230"
    # Each on the page of 100 it is on (positions 3, 67, 149, 150, 225, 259 and 340),
    # with every episode listed again.
    pages = ["1–100", "1–100", "101–200", "101–200", "201–300", "201–300", "301–350"]
    for key, link, pages_, state in zip(keys, out["links"], pages, out["followed"], strict=True):
        assert state == [key, key, f"episodes {pages_} of 350", None], link
    assert out["search"] == ""
    assert out["back"][:2] == [keys[1], keys[1]]
    assert out["start"][0] == "plain-task#0"  # the first failing episode, as on opening


@pytest.mark.parametrize("key", ["日本-lake#20", "refund request's #2#7"])
def test_a_pasted_link_opens_its_episode_on_its_page(page: Path, tmp_path: Path, key: str) -> None:
    out = _drive(
        page, _STATE + "out.state = state();", tmp_path, fragment="episode=" + quote(key, safe="")
    )
    position = _IDS.index(key.rsplit("#", 1)[0]) * _REPEATS + int(key.rsplit("#", 1)[1])
    first = position // 100 * 100
    assert out["state"] == [key, key, f"episodes {first + 1}–{min(first + 100, 350)} of 350", None]


def test_an_unknown_link_opens_the_page_with_a_notice(page: Path, tmp_path: Path) -> None:
    out = _drive(
        page,
        _STATE + "out.unknown = state();"
        "out.malformed = go('#episode=%E6%97%A');"
        "out.other = go('#view=timeline');"
        "out.section = go('#checks-section');"
        "out.known = go('#episode=plain-task%231');",
        tmp_path,
        fragment="episode=no-such-task%23999",
    )
    shown, row, counted, notice = out["unknown"]
    assert (shown, row, counted) == ("plain-task#0", "plain-task#0", "episodes 1–100 of 350")
    assert notice == "This link names episode no-such-task#999, which this report does not list."
    assert "does not list" in out["malformed"][3]
    assert out["other"][3] == (
        "This link (#view=timeline) names nothing this report knows; an episode is linked "
        "as #episode=task%23repeat."
    )
    assert out["section"][3] is None  # an element's id: the browser's business
    assert out["known"][:2] == ["plain-task#1", "plain-task#1"]
    assert out["known"][3] is None


def test_the_searches_ignore_accents_and_compatibility_forms(page: Path, tmp_path: Path) -> None:
    out = _drive(
        page,
        _STATE + "const find = document.getElementById('episode-filter');"
        "const keys = q => { find.value = q; find.dispatchEvent(new Event('input'));"
        " return [count(), document.querySelector('#episode-list tr[data-key]')?.dataset.key]; };"
        "out.episodes = ['istanbul', 'STRASSE', 'cafe \"QUOTED', 'eclair#4', '\\u00e9clair#49',"
        " 'ﬁ', 'refund request\\'s #2#1'].map(keys);"
        "const filter = document.getElementById('task-filter');"
        "out.tasks = ['istanbul', 'strasse', 'Éclair', 'CAFE'].map(q => {"
        " filter.value = q; filter.dispatchEvent(new Event('input'));"
        " return [...document.querySelectorAll('#tasks tbody tr')]"
        "  .filter(r => r.style.display !== 'none').map(r => r.dataset.task); });",
        tmp_path,
    )
    found = lambda n: f"episodes 1–{n} of {n} found (350 in all)"  # noqa: E731
    assert out["episodes"] == [
        [found(50), "İstanbul-route#0"],
        [found(50), "Straße-7#0"],
        [found(50), 'café "quoted"#0'],
        [found(11), "e\u0301clair#4"],  # #4 and #40–#49
        [found(1), "e\u0301clair#49"],  # a precomposed é finds a decomposed one
        ["no episode found (350 in all)", None],  # "ﬁ" is "fi", in no id
        [found(11), "refund request's #2#1"],
    ]
    assert out["tasks"] == [["İstanbul-route"], ["Straße-7"], ["e\u0301clair"], ['café "quoted"']]
