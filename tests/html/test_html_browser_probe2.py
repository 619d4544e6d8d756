"""Report and comparison pages read as a demanding reader would, in a real headless
Chromium: control characters in names, a phone-width window, one-word statuses beside
long text, a page without JavaScript, and printing a comparison. A driver script
appended to the page acts on it and writes what it saw into the DOM; a catcher
prepended to it records every script error and blocked request (each test asserts
there are none)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from onrecord.case import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.html import write_comparison, write_report
from onrecord.runner import plan_run, start_run
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser


def _open(
    page: Path, driver: str, tmp_path: Path, *, window: str = "1280,900", script: bool = True
) -> dict[str, Any]:
    """``_drive`` in a window of ``window`` pixels, with or without the page's script."""
    return _drive(page, driver, tmp_path, window=window, script=script)


def _never(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(False, "bad\x00reason\x1b[31m </script><!-- &amp;", {})


HOSTILE_CHECKS = [OutcomeCheck("hostile", "v1", _never)]


def _lake(path: Path, case_id: str, checks: str = "default") -> Path:
    task = EvalCase("walk", case_id=case_id, completion="either")
    start_run(path, plan_run("frozenlake", "walks_into_hole", tasks=[task], checks=[checks]))
    return path


def test_control_characters_are_shown_not_dropped(tmp_path: Path) -> None:
    name = "a\x00b\x01c</script><!--"
    run = _lake(tmp_path / "run", name, "tests.html.test_html_browser_probe2:HOSTILE_CHECKS")
    out = _open(
        write_report(run),
        "document.querySelector('.episodes tr[data-index]').click();"
        "out.text = document.body.innerText;"
        "out.task = document.querySelector('#tasks tr[data-task] td').textContent;"
        "out.heading = document.querySelector('#episode-view h2').textContent;"
        "out.reason = document.querySelector('#episode-view tr.failing-check')"
        ".cells[2].textContent;"
        "out.scripts = document.scripts.length;",
        tmp_path,
    )
    # Before: the HTML parser dropped the NUL and the others showed as nothing, so the
    # task read "abc", another task's name.
    assert out["task"] == "a\\u0000b\\u0001c</script><!--"
    assert out["heading"].startswith("Episode a\\u0000b\\u0001c</script><!-- #0")
    assert out["reason"] == "bad\\u0000reason\\u001b[31m </script><!-- &amp;"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", out["text"])
    assert out["scripts"] == 4  # catcher, data, the page's, driver: nothing injected


def test_a_phone_width_window_scrolls_the_tables_not_the_page(
    remittance_run: Path, tmp_path: Path
) -> None:
    out = _open(
        write_report(remittance_run, tmp_path / "r.html"),
        "const root = document.documentElement;"
        "out.width = root.clientWidth; out.overflow = root.scrollWidth - root.clientWidth;"
        "const checks = document.getElementById('checks');"
        "out.table = checks.getBoundingClientRect().width;"
        "out.box = checks.parentElement.scrollWidth > checks.parentElement.clientWidth;"
        "const badge = document.getElementById('decision').getBoundingClientRect();"
        "out.badge = [badge.right, badge.bottom, innerHeight];",
        tmp_path,
        window="400,900",
    )
    assert out["width"] < 600  # the narrowest window headless Chromium opens
    assert out["table"] > out["width"]  # nine columns of numbers do not fit ...
    assert out["box"]  # ... so their own box scrolls sideways
    # Before: the whole page scrolled sideways by 224 px.
    assert out["overflow"] <= 0
    right, bottom, height = out["badge"]
    assert right <= out["width"]  # the decision is seen first
    assert bottom < height


def test_one_word_statuses_are_not_broken_by_long_text(tmp_path: Path) -> None:
    run = _lake(tmp_path / "run", "a long task name " * 20)
    out = _open(
        write_report(run),
        "const cells = '.episodes td:nth-child(4), .episodes td:nth-child(5), "
        "#episode-view tr.event td:nth-child(3), #episode-view tr.failing-check td:nth-child(2)';"
        "out.lines = [...document.querySelectorAll(cells)].map(td => {"
        "const range = document.createRange(); range.selectNodeContents(td);"
        "return [td.textContent, range.getClientRects().length]; });",
        tmp_path,
        window="700,900",
    )
    words = {word for word, _ in out["lines"]}
    assert {"fail", "terminated"} <= words
    # Before: "terminat|ed" in the episode table, beside the long task name.
    assert all(lines == 1 for _, lines in out["lines"]), out["lines"]


def test_without_javascript_no_control_does_nothing(remittance_run: Path, tmp_path: Path) -> None:
    page = write_report(remittance_run, tmp_path / "r.html")
    seen = "out.filter = getComputedStyle(document.getElementById('task-filter')).display;"
    # Before: a filter box that filtered nothing.
    assert _open(page, seen, tmp_path, script=False)["filter"] == "none"
    assert _open(page, seen, tmp_path)["filter"] != "none"
    # The details need the script: the <noscript> note says where their data is.
    assert "need JavaScript; their data is in this page" in page.read_text()


def test_printing_a_comparison_shows_its_discordant_episodes(tmp_path: Path) -> None:
    for name, agent in (("a", "walks_to_goal"), ("b", "walks_into_hole")):
        start_run(tmp_path / name, plan_run("frozenlake", agent, seeds=[0, 1]))
    page, data = write_comparison(tmp_path / "a", tmp_path / "b", tmp_path / "c.html")
    pairs = sum(len(check["discordant"]) for check in data["comparison"]["checks"])
    out = _open(
        page,
        "const shown = () => [...document.querySelectorAll('li.discordant')]"
        ".filter(li => li.checkVisibility()).length;"
        "out.before = shown(); dispatchEvent(new Event('beforeprint')); out.after = shown();"
        "out.print = [...document.styleSheets[0].cssRules]"
        ".some(rule => rule.media && rule.media.mediaText === 'print');",
        tmp_path,
    )
    assert pairs == 4
    assert out["before"] == 0  # folded on screen
    # Before: folded on paper too, so a printout named no regressed episode.
    assert out["after"] == pairs
    assert out["print"]
