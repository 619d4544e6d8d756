"""The report's charts and plots as a reviewer sees them in Chromium: an unmeasured check
is not drawn as an interval, long check names of one family keep the part that tells
them apart, the horizon chart's lines differ by more than colour, and on a phone's
width no chart is cut off and no plot makes the whole page scroll sideways."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.html import write_report
from onrecord.html._page import document
from onrecord.html._svg import horizon_chart, interval_chart
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

_ROWS = (
    "out.rows = [...document.querySelectorAll('#checks-section svg text')]"
    ".map(t => t.textContent);"
    "out.whiskers = document.querySelectorAll('#checks-section svg line[stroke=\"#1f2328\"]')"
    ".length;"
)


def test_an_unmeasured_check_is_not_drawn_as_an_interval(lake_run: Path, tmp_path: Path) -> None:
    # gives_up_early: no_hole_visited passes in 4 episodes, reached_goal is measured in none.
    out = _drive(write_report(lake_run, tmp_path / "r.html"), _ROWS, tmp_path)
    # Before: reached_goal drew a whisker over 0-100 %, read as a measured 0 % pass rate.
    assert out["whiskers"] == 1
    labels = out["rows"][3:]  # after the three tick labels
    assert labels == ["no_hole_visited", "reached_goal", "not measured (no pass rate)"]


def _page(body: str, tmp_path: Path) -> Path:
    page = tmp_path / "chart.html"
    page.write_text(document("chart", body, {}, ""))
    return page


def test_long_names_of_one_family_stay_distinct_in_the_chart(tmp_path: Path) -> None:
    names = [f"dynamics/pole_angular_velocity/h{h}" for h in (1, 4, 8, 16, 32)]
    chart = interval_chart([(name, 0.5, 0.4, 0.6) for name in names], title="t")
    out = _drive(
        _page(chart, tmp_path),
        "out.labels = [...document.querySelectorAll('svg text')].slice(3)"
        ".map(t => [t.textContent, t.parentElement.querySelector('title')?.textContent]);",
        tmp_path,
    )
    shown = [label for label, _ in out["labels"]]
    # Before: five rows all labelled "dynamics/pole_angular_velocit…".
    assert len(set(shown)) == len(names)
    tails = [name.rsplit("/", 1)[1] for name in names]
    assert all(label.endswith(tail) for label, tail in zip(shown, tails, strict=True))
    assert [full for _, full in out["labels"]] == names  # the whole name on hover


def test_horizon_lines_differ_by_more_than_colour(tmp_path: Path) -> None:
    series = {
        name: [[1, 1.0, 0.9, 1.0], [8, 0.5, 0.3, 0.7]]
        for name in ("cart_position", "cart_velocity", "pole_angle", "pole_angular_velocity")
    }
    out = _drive(
        _page(horizon_chart(series, title="t"), tmp_path),
        "const svg = document.querySelector('svg');"
        "out.lines = [...svg.querySelectorAll('polyline')]"
        ".map(l => l.getAttribute('stroke-dasharray') || 'solid');"
        "out.legend = [...svg.querySelectorAll('line[x2]')].filter(l => l.getAttribute('y1')"
        " === l.getAttribute('y2') && l.getAttribute('stroke') !== '#d0d7de' &&"
        " l.getAttribute('stroke') !== '#57606a')"
        ".map(l => l.getAttribute('stroke-dasharray') || 'solid');"
        "const box = svg.getBBox(); out.right = box.x + box.width;"
        "out.width = svg.width.baseVal.value;",
        tmp_path,
    )
    # Before: solid lines told apart by colour alone, the legend coloured text only.
    assert len(set(out["lines"])) == len(series)
    assert out["legend"] == out["lines"]
    assert out["right"] <= out["width"]  # the longest name in the legend is not cut off


def test_a_chart_on_a_phone_scrolls_sideways_whole(lake_run: Path, tmp_path: Path) -> None:
    out = _drive(
        write_report(lake_run, tmp_path / "r.html"),
        "const svg = document.querySelector('#checks-section svg');"
        "out.drawn = svg.getBoundingClientRect().width; out.width = svg.width.baseVal.value;"
        "const box = svg.parentElement;"
        "out.scrolls = box.scrollWidth > box.clientWidth"
        " && getComputedStyle(box).overflowX === 'auto';"
        "out.page = [document.documentElement.scrollWidth, innerWidth];",
        tmp_path,
        window="400,900",
    )
    # Before: the chart shrunk to the screen without scaling, its bars cut off past 0 %;
    # now whole, in a box that scrolls sideways as the tables do.
    assert out["drawn"] == out["width"]
    assert out["scrolls"]
    assert out["page"][0] <= out["page"][1]


def test_a_wide_plot_does_not_widen_a_phones_page(lake_run: Path, tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "wide.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="300">'
        '<rect width="1200" height="300" fill="#54aeff"/></svg>'
    )
    out = _drive(
        write_report(lake_run, tmp_path / "r.html", plots=plots),
        "const img = document.querySelector('figure img').getBoundingClientRect();"
        "out.img = [img.right, img.width / img.height];"
        "out.page = [document.documentElement.scrollWidth, innerWidth];",
        tmp_path,
        window="400,900",
    )
    # Before: the plot at its own 1200 pixels made the whole page scroll sideways.
    assert out["img"][0] <= out["page"][1]
    assert out["img"][1] == pytest.approx(4.0, rel=0.01)  # shrunk, not squashed
    assert out["page"][0] <= out["page"][1]
