"""A name holding a newline reads the same in a report's title, heading and run line as
in its tables (``\\n``): the title and run line escaped it only, so there it rendered
as a space ("frozen lake", another environment's name) while the tables said
``frozen\\nlake``. A real run of an environment registered under such a name, its page
read by ``html.parser`` and by headless Chromium."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from onrecord.html import write_comparison, write_report
from onrecord.runner import plan_run, start_run
from onrecord.runner._registry import register_environment
from tests.html.test_browser_probe import _drive

NAME = "frozen\nlake"
SHOWN = "frozen\\nlake"


class _Text(HTMLParser):
    """The text of the page's <title>, <h1> and header's run line."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: dict[str, str] = {"title": "", "h1": "", "p": ""}
        self._in: list[str] = []
        self._header = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._header = self._header or tag == "header"
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self._header = self._header and tag != "header"
        if tag in self._in:  # void elements (<meta>, <img>) have no end tag
            del self._in[len(self._in) - 1 - self._in[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        open_tags = set(self._in)
        for tag in self.parts:
            # The page's <title> (in <head>; the SVG chart has its own), the header's text.
            if tag in open_tags and ("head" in open_tags if tag == "title" else self._header):
                self.parts[tag] += data


def _read(page: Path) -> dict[str, str]:
    parser = _Text()
    parser.feed(page.read_text())
    return parser.parts


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_environment(NAME, "onrecord.runner._examples:frozenlake", replace=True)
    path = tmp_path_factory.mktemp("names") / "run"
    start_run(path, plan_run(NAME, "walks_into_hole"))
    return path


def test_title_heading_and_run_line_show_a_newline_as_the_tables_do(
    run: Path, tmp_path: Path
) -> None:
    parts = _read(write_report(run, tmp_path / "r.html"))
    assert parts["title"] == f"walks_into_hole on {SHOWN}"
    assert parts["h1"] == f"walks_into_hole on {SHOWN}"
    assert f"· {SHOWN} " in parts["p"], parts["p"]
    assert not any("\n" in text for text in parts.values()), parts


def test_a_comparison_title_shows_a_label_s_newline(run: Path, tmp_path: Path) -> None:
    # Labels of report files: the sides line already showed them one line each.
    other = tmp_path / "a\nb.report.json"
    other.write_bytes((run / "report.json").read_bytes())
    page, _ = write_comparison(other, run / "report.json", tmp_path / "c.html")
    title = _read(page)["title"]
    assert "a\\nb" in title, title
    assert "\n" not in title


@pytest.mark.browser
def test_chromium_renders_the_heading_on_one_line(run: Path, tmp_path: Path) -> None:
    out = _drive(
        write_report(run, tmp_path / "r.html"),
        "out.title = document.title;"
        "out.h1 = document.querySelector('header h1').innerText;"
        "out.meta = document.querySelector('header p.meta').innerText;",
        tmp_path,
    )
    # Before: "walks_into_hole on frozen lake", the newline collapsed to a space.
    assert out["title"] == f"walks_into_hole on {SHOWN}"
    assert out["h1"] == f"walks_into_hole on {SHOWN}"
    assert f"· {SHOWN} " in out["meta"]
