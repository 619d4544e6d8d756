"""Round 38 review of the report page in Chromium: tables on a narrow screen keep their
words whole (they scroll in their own box instead of folding "100.0% (99 of 99)" into
five lines), printing opens the measures folded past the first 20, and without the
page's script the episode rows are no Tab stops under a "click an episode" that does
nothing. The run is made with the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.cli.main import main
from onrecord.html import render_report_page, report_data, write_report
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """change_and_restore fails only_expected_tables_changed on the denial tasks."""
    out = tmp_path_factory.mktemp("round38") / "run"
    code = main(
        [
            *("run", "remittance", "-a", "change_and_restore", "-s", "0", "-r", "1"),
            *("--executor", "inprocess", "--no-progress", "-o", str(out)),
        ]
    )
    assert code == 1, code  # rejected: the failing agent
    return out


# Every place a cell's text (outside JSON, messages and folded text, which may break
# anywhere) goes on to a new line inside a word: not after a space, hyphen or the like.
_SPLIT_WORDS = (
    "const split = [];"
    "const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);"
    "for (let n; (n = walk.nextNode());) {"
    " const el = n.parentElement;"
    " if (!el.closest('.scroll td') || el.closest('.mono,.msg,.long')) continue;"
    " const t = n.textContent, r = document.createRange(); let top = null;"
    " for (let i = 0; i < t.length; i++) {"
    "  r.setStart(n, i); r.setEnd(n, i + 1); const box = r.getBoundingClientRect();"
    "  if (!box.height) continue;"
    "  const now = Math.round(box.top);"
    "  if (top !== null && now > top + 2 && !/[\\s\\-–,/_.(]/.test(t[i - 1])"
    "      && !/\\s/.test(t[i])) split.push(t.slice(0, i) + '|' + t.slice(i));"
    "  top = now; } }"
    "out.split = split;"
    "out.page = [document.documentElement.scrollWidth, innerWidth];"
    "const evidence = document.querySelector('#episode-view table.checks td.mono');"
    "out.evidence = evidence.getBoundingClientRect().width;"
    "out.em = parseFloat(getComputedStyle(evidence).fontSize);"
)


def test_narrow_tables_keep_their_words_whole(run: Path, tmp_path: Path) -> None:
    page = write_report(run, tmp_path / "r.html")
    # Chromium's narrowest window (500 pixels; a phone's 375 folded the same words).
    out = _drive(page, _SPLIT_WORDS, tmp_path, window="400,900")
    assert out["page"][0] <= out["page"][1]  # the boxes scroll, not the page
    # Before: "remitta|nce-v3", "87.9|% (87 of 99)", "only_ex|pected_tables_changed",
    # "up|date": every column but the first could shrink to a letter, though the box
    # scrolled sideways anyway.
    assert out["split"] == []
    # The evidence (one JSON token) keeps 14em: before, 86 pixels and 107 lines.
    assert out["evidence"] >= 14 * out["em"] - 1


def test_printing_opens_the_measures_folded_past_twenty(run: Path, tmp_path: Path) -> None:
    data = report_data(run)
    base = data["summary"]["measures"][0]
    data["summary"]["measures"] = [{**base, "name": f"m{n:02d}"} for n in range(35)]
    page = tmp_path / "measures.html"
    page.write_text(render_report_page(data))
    out = _drive(
        page,
        "const shown = () => [...document.querySelectorAll("
        "'#measure-summary-section tr[data-measure]')].filter(r => r.checkVisibility()).length;"
        "out.before = shown(); dispatchEvent(new Event('beforeprint')); out.after = shown();",
        tmp_path,
    )
    # Before: paper showed the first 20 and a "15 more measures" line.
    assert (out["before"], out["after"]) == (20, 35)


_ROWS = (
    "const rows = [...document.querySelectorAll('#episode-list tbody tr')];"
    "out.focusable = rows.filter(r => r.tabIndex >= 0).length; out.rows = rows.length;"
    "out.pointer = getComputedStyle(rows[0]).cursor;"
    "out.hint = document.getElementById('episode-hint').checkVisibility();"
)


def test_without_javascript_episode_rows_are_no_tab_stops(run: Path, tmp_path: Path) -> None:
    page = write_report(run, tmp_path / "r.html")
    out = _drive(page, _ROWS, tmp_path, script=False)
    assert out["rows"] > 0
    # Before: every row a Tab stop with a hand cursor, under "click an episode (or focus
    # it and press Enter)", and neither opened anything.
    assert out["focusable"] == 0
    assert out["pointer"] != "pointer"
    assert out["hint"] is False


def test_with_javascript_enter_on_a_row_opens_its_episode(run: Path, tmp_path: Path) -> None:
    page = write_report(run, tmp_path / "r.html")
    driver = _ROWS + (
        "const row = rows[1]; row.focus();"
        "row.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));"
        "out.key = row.dataset.key;"
        "out.open = document.getElementById('episode-view').dataset.episode;"
        "out.focused = document.activeElement === row;"
    )
    out = _drive(page, driver, tmp_path)
    assert out["focusable"] == out["rows"] > 1
    assert (out["pointer"], out["hint"]) == ("pointer", True)
    assert out["focused"]
    assert out["open"] == out["key"]
