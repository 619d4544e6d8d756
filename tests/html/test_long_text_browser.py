"""Long text in a report, read in a real headless Chromium: a check's message of
thousands of characters, one unbroken token, hundreds of lines or markup; a long task id
and check name; a long error in the timeline. Each shows its first part and, on request,
all of it (``<details>``): the page keeps to the window's width, no row grows to
thousands of pixels, none of the text is lost and none of it is read as markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.html import render_report_page, report_data, write_report
from tests.html.test_browser_probe import _drive
from tests.html.test_html_browser_probe2 import _lake

pytestmark = pytest.mark.browser

TOKEN = "A" * 5000  # no break opportunity at all
HOSTILE = (
    "why " * 100
    + "<script>document.body.dataset.pwned = 'yes'</script></details></td></tr></table>"
    + "<b>bold</b> &amp; more " * 20
)
LINES = "\n".join(f"line {i}" for i in range(400))
CHECK = "check-" + "c" * 600
TASK = "task-" + "t" * 3000


def _token(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(False, TOKEN, {"rows": "y" * 3000})


def _hostile(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(False, HOSTILE, {})


def _lines(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(None, LINES, {})


CHECKS = [
    OutcomeCheck(CHECK, "v1", _token),
    OutcomeCheck("hostile", "v1", _hostile),
    OutcomeCheck("lines", "v1", _lines),
]

# Per failing check of the episode view: the row's height, the message cell's full and
# preview text, its <details>, and the page's sideways overflow.
_MEASURE = (
    "const root = document.documentElement;"
    "const overflow = () => root.scrollWidth - root.clientWidth;"
    "const rows = [...document.querySelectorAll('#episode-view tr.failing-check')];"
    "out.width = root.clientWidth;"
    "out.overflow = overflow();"
    "out.heights = rows.map(r => r.getBoundingClientRect().height);"
    "out.names = rows.map(r => r.cells[0].querySelector('.full')"
    " ? r.cells[0].querySelector('.full').textContent : r.cells[0].textContent);"
    "out.full = rows.map(r => { const f = r.cells[2].querySelector('.full');"
    " return f ? f.textContent : null; });"
    "out.previews = rows.map(r => { const p = r.cells[2].querySelector('.preview');"
    " return p ? p.textContent : null; });"
    "out.details = rows.map(r => r.cells[2].querySelectorAll('details').length);"
    "out.bold = document.querySelectorAll('#episode-view b').length;"
    "out.scripts = document.scripts.length;"
    "out.pwned = document.body.dataset.pwned || null;"
    "document.querySelectorAll('#episode-view details.long').forEach(d => { d.open = true; });"
    "out.openOverflow = overflow();"
    "const box = rows[2].cells[2].querySelector('.full');"
    "out.box = [box.clientHeight, box.scrollHeight, box.innerText.split('\\n').length];"
    "out.openHeights = rows.map(r => r.getBoundingClientRect().height);"
)


@pytest.fixture(scope="module")
def long_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = _lake(
        tmp_path_factory.mktemp("long") / "run", TASK, "tests.html.test_long_text_browser:CHECKS"
    )
    return write_report(run)


@pytest.mark.parametrize("window", ["1280,900", "700,900"])
def test_long_messages_show_a_part_and_keep_all_of_it(
    long_page: Path, tmp_path: Path, window: str
) -> None:
    out = _drive(long_page, _MEASURE, tmp_path, window=window)
    assert out["overflow"] <= 0
    assert out["openOverflow"] <= 0  # shown in full, still within the window's width
    # Before: rows of 950, 1550 and 460 px at 1280 px (5350, 8050, 2450 on a phone);
    # the 400 lines read as one paragraph.
    assert max(out["heights"]) < 400, out["heights"]
    # Every character is in the page, as text: the markup is not obeyed.
    assert out["names"][0] == CHECK
    assert out["full"] == [TOKEN, HOSTILE, LINES]
    assert out["details"] == [1, 1, 1]  # "</details>" closed nothing
    assert out["bold"] == 0
    assert out["scripts"] == 4  # catcher, data, the page's, driver
    assert out["pwned"] is None
    # The first part: at most 300 characters or 6 lines, then "…".
    assert out["previews"][0] == "A" * 300 + "…"
    assert out["previews"][1] == HOSTILE[:300] + "…"
    assert out["previews"][2] == "\n".join(LINES.split("\n")[:6]) + "…"
    # Opened, 400 lines keep their breaks in a box that scrolls, not a 400-line row.
    height, content, lines = out["box"]
    assert lines == 400
    assert content > height
    assert max(out["openHeights"]) < 800, out["openHeights"]


def test_long_names_in_the_tables_and_the_episode_heading(long_page: Path, tmp_path: Path) -> None:
    out = _drive(
        long_page,
        "const h = s => [...document.querySelectorAll(s)].map(e =>"
        " e.getBoundingClientRect().height);"
        "out.rows = [...h('#checks tbody tr'), ...h('#tasks tbody tr'),"
        " ...h('.episodes tbody tr')];"
        "out.items = [...h('#findings li'), ...h('#reasons li')];"
        "out.heading = document.querySelector('#episode-view h2').textContent;"
        "out.headingHeight = h('#episode-view h2')[0];"
        "const full = s => document.querySelector(s + ' .full').textContent;"
        "out.names = [full('#tasks tbody td'), full('.episodes tbody td'),"
        " full('#checks tbody td'), full('#episode-view .task-id')];"
        "out.same = document.querySelector('#tasks tbody td').innerHTML"
        " === document.querySelector('#episode-view .task-id').innerHTML;"
        "const filter = document.getElementById('task-filter');"
        "filter.value = 'ttttt' + 't'.repeat(2000); filter.dispatchEvent(new Event('input'));"
        "out.filtered = [...document.querySelectorAll('#tasks tbody tr')]"
        ".filter(r => r.style.display !== 'none').length;"
        "const summary = document.querySelector('.episodes tbody summary');"
        "const key = new KeyboardEvent('keydown', {key: 'Enter', bubbles: true, cancelable: true});"
        "summary.dispatchEvent(key); out.prevented = key.defaultPrevented;"
        "out.closed = document.querySelectorAll('details.long:not([open])').length;"
        "dispatchEvent(new Event('beforeprint'));"
        "out.printed = document.querySelectorAll('details.long:not([open])').length;",
        tmp_path,
        window="1280,900",
    )
    # Before: a task row of 620 px, findings of 450 px, a heading of 575 px.
    assert max(out["rows"]) < 150, out["rows"]
    assert max(out["items"]) < 100, out["items"]
    assert out["headingHeight"] < 100
    assert out["heading"] == f"Episode {TASK[:120]}… #0 fail"
    # The whole name is on the page, and the task filter still finds it by its end.
    assert out["names"] == [TASK, TASK, CHECK, TASK]
    assert out["same"]  # the page's markup and the script's are one
    assert out["filtered"] == 1
    # Enter on a name's "show all" in an episode row is left to open it.
    assert not out["prevented"]
    # Printed, all of it: paper has no "show all".
    assert out["closed"] > 0
    assert out["printed"] == 0


def test_a_long_error_in_the_timeline_and_coverage_issues(long_page: Path, tmp_path: Path) -> None:
    data: dict[str, Any] = report_data(long_page.parent)
    episode = data["episodes"][0]
    error = "Traceback:\n" + "\n".join(f'  File "agent.py", line {i}' for i in range(300))
    episode["timeline"][0].update(status="error", error=error, detail="")
    episode["coverage_issues"].append("agent error: " + "x" * 4000)
    page = tmp_path / "page.html"
    page.write_text(render_report_page(data))
    out = _drive(
        page,
        "const row = document.querySelector('#episode-view tr.event');"
        "out.height = row.getBoundingClientRect().height;"
        "out.error = row.cells[3].querySelector('.full').textContent;"
        "const li = [...document.querySelectorAll('#episode-view li')].at(-1);"
        "out.issue = [li.getBoundingClientRect().height, li.querySelector('.full').textContent];"
        "out.overflow = document.documentElement.scrollWidth"
        " - document.documentElement.clientWidth;",
        tmp_path,
        window="1280,900",
    )
    # Before: a timeline row of 300 lines' height, an issue of 4000 characters.
    assert out["height"] < 200
    assert out["error"] == error
    assert out["issue"][0] < 150
    assert out["issue"][1] == "agent error: " + "x" * 4000
    assert out["overflow"] <= 0
