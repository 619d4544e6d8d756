"""Report pages in a real headless Chromium, leftovers 8: the check filter's options in
natural order, the pass-rate chart of a run of 2,000 checks kept a few screens tall, and
the **list** button saying whether it lists failures or unmeasured episodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.html import report_data, write_report
from onrecord.runner import plan_run, start_run
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

HERE = "tests.html.test_html_leftovers8_browser"


def _fails(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(False, "the walker fell in", {})


def _unknown(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(None, "the evidence cannot decide", {})


def _by_seed(episode: EpisodeEvidence) -> OutcomeVerdict:
    """Fails on seed 0, not measured on seed 1."""
    if episode.environment["seed"] == 0:
        return OutcomeVerdict(False, "fell in", {})
    return OutcomeVerdict(None, "cannot tell", {})


HORIZONS = [OutcomeCheck(f"h{h}", "v1", _fails) for h in (16, 4, 32, 8)]
MIXED = [
    OutcomeCheck("fails", "v1", _fails),
    OutcomeCheck("unknowable", "v1", _unknown),
    OutcomeCheck("fails_or_unknown", "v1", _by_seed),
]
MANY = [OutcomeCheck(f"check-{i}", "v1", _fails if i % 7 else _unknown) for i in range(2000)]


def _run(root: Path, checks: str, seeds: list[int]) -> Path:
    run = root / "run"
    start_run(run, plan_run("frozenlake", "walks_into_hole", checks=[checks], seeds=seeds))
    return run


def test_the_check_filter_lists_checks_in_natural_order(tmp_path: Path) -> None:
    page = write_report(_run(tmp_path, f"{HERE}:HORIZONS", [0]))
    out = _drive(
        page,
        "out.options = [...document.querySelectorAll('#episode-check option')]"
        ".map(o => o.textContent);",
        tmp_path,
    )
    # Before: "h16", "h32", "h4", "h8" (string order), where the tables say h4 first.
    assert out["options"] == [
        "any check",
        "not passed: h4 (1)",
        "not passed: h8 (1)",
        "not passed: h16 (1)",
        "not passed: h32 (1)",
    ]


def test_the_list_button_says_what_it_lists(tmp_path: Path) -> None:
    page = write_report(_run(tmp_path, f"{HERE}:MIXED", [0, 1]))
    out = _drive(
        page,
        "out.buttons = Object.fromEntries([...document.querySelectorAll('#checks tr')]"
        ".filter(tr => tr.querySelector('button.list-episodes'))"
        ".map(tr => { const button = tr.querySelector('button.list-episodes');"
        " return [tr.dataset.check, [button.parentElement.dataset.field,"
        " button.parentElement.textContent, button.title]]; }));"
        "const row = document.querySelector('#checks tr[data-check=\"unknowable\"]');"
        "row.querySelector('button.list-episodes').click();"
        "out.listed = [...document.querySelectorAll('#episode-list tbody tr')]"
        ".map(tr => tr.dataset.key);"
        "out.filter = document.getElementById('episode-check').selectedOptions[0].textContent;",
        tmp_path,
    )
    # Before: "0 list" beside a check that never failed, and its button listed the
    # episodes where it was not measured; then "0 list the 2 not measured", still in the
    # failed column. Now beside the count it lists.
    assert out["buttons"] == {
        "fails": ["failed", "2 list the 2 failed", "list the episodes in which this check failed"],
        "unknowable": [
            "unmeasured",
            "2 list the 2 not measured",
            "list the episodes in which this check was not measured",
        ],
        "fails_or_unknown": [
            "failed",
            "1 list the 2 failed or not measured",
            "list the episodes in which this check failed or was not measured",
        ],
    }
    assert out["listed"] == ["frozenlake/goal#0", "frozenlake/goal#1"]
    assert out["filter"] == "not passed: unknowable (2)"


def test_the_chart_of_2000_checks_draws_the_worst_and_keeps_every_value(tmp_path: Path) -> None:
    run = _run(tmp_path, f"{HERE}:MANY", [0])
    page = write_report(run)
    out = _drive(
        page,
        "const svg = document.querySelector('#checks-section svg');"
        "out.height = svg.getBoundingClientRect().height;"
        "out.bars = svg.querySelectorAll('text[text-anchor=\"end\"]').length;"
        "out.labels = [...svg.querySelectorAll('text[text-anchor=\"end\"]')]"
        ".map(t => t.textContent);"
        "out.note = document.getElementById('chart-note').textContent;"
        "out.rows = document.querySelectorAll('#checks tr[data-check]').length;"
        "out.data = JSON.parse(document.getElementById('onrecord-data').textContent)"
        ".summary.checks.length;",
        tmp_path,
    )
    # Before: 2,000 bars of 22 px, an SVG 44,030 px tall above the tasks and episodes.
    assert out["bars"] == 40
    assert out["height"] <= 30 + 22 * 40
    # The worst first: the unmeasured checks (every 7th), which have no pass rate.
    assert out["labels"] == [f"check-{i}" for i in range(0, 280, 7)]
    assert "the 40 checks with the lowest pass rates" in out["note"]
    assert "of 2000" in out["note"]
    assert out["rows"] == out["data"] == 2000
    assert len(report_data(run)["summary"]["checks"]) == 2000
