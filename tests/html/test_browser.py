"""The report in a real headless Chromium: the page renders, and the numbers the browser
shows are the numbers in the report's JSON."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.html import write_comparison, write_report
from tests.chromium import CHROMIUM, MISSING, dump_dom

pytestmark = pytest.mark.browser
if CHROMIUM is None:
    pytest.skip(MISSING, allow_module_level=True)


def _cells(dom: str, attribute: str, name: str) -> dict[str, str]:
    row = re.search(rf'<tr {attribute}="{re.escape(name)}">(.*?)</tr>', dom, re.S)
    assert row, f"no row {name}"
    return dict(re.findall(r'data-field="([^"]+)" data-value="([^"]*)"', row.group(1)))


def test_report_renders_and_matches_its_json(remittance_run: Path, tmp_path: Path) -> None:
    page = write_report(remittance_run, tmp_path / "r.html", data_json=tmp_path / "r.json")
    data: dict[str, Any] = orjson.loads((tmp_path / "r.json").read_bytes())
    dom = dump_dom(page)
    assert 'data-rendered="yes"' in dom  # the script ran to the end
    assert re.search(r'id="decision"[^>]*>reject<', dom)
    # The counts the browser shows, against counts taken straight from the saved
    # report's trials (not from the page's own data): every check has a row.
    saved = orjson.loads((remittance_run / "report.json").read_bytes())
    counted = _statuses(saved)
    assert set(re.findall(r'<tr data-check="([^"]+)">', dom)) == set(counted)
    assert sum(c["fail"] for c in counted.values()) == 24  # 6 duplicate episodes × 4 checks
    for name, statuses in counted.items():
        shown = _cells(dom, "data-check", name)
        assert int(shown["passed"]) == statuses["pass"], name
        assert int(shown["failed"]) == statuses["fail"], name
        assert float(shown["pass_rate"]) == statuses["pass"] / sum(statuses.values()), name
    # The script rendered the first failing episode's detail view from the data.
    first = next(e for e in data["episodes"] if e["outcome"] != "pass")
    # The view is the last element of its section (long text in it holds <div>s too).
    view = re.search(
        r'<div id="episode-view" data-episode="([^"]+)">(.*?)</div></section>', dom, re.S
    )
    assert view
    assert view.group(1) == f"{first['case_id']}#{first['repeat']}"
    detail = view.group(2)
    assert detail.count('<tr class="event') == len(first["timeline"])
    diff_rows = sum(
        len(t["created"]) + len(t["changed"]) + len(t["deleted"]) for t in first["diff"].values()
    )
    assert detail.count("diff-row") == diff_rows
    assert detail.count('class="audit-row"') == len(first["audit"])
    failing = [r for r in first["results"] if r["status"] != "pass"]
    assert detail.count('class="failing-check"') == len(failing)
    # Each failing check of the episode is shown with its name and its reason, as the
    # saved report states them.
    trial = next(
        t for t in saved["trials"] if f"{t['case']['case_id']}#{t['repeat']}" == view.group(1)
    )
    reasons = {r["name"]: r["reason"] for r in trial["results"] if r["status"] == "fail"}
    assert len(reasons) == 4
    text = html.unescape(re.sub(r"<[^>]+>", "", detail))
    for name, reason in reasons.items():
        assert name in text, name
        assert reason in text, reason


def test_comparison_renders_and_matches_its_json(remittance_run: Path, tmp_path: Path) -> None:
    page, _ = write_comparison(remittance_run, remittance_run, tmp_path / "c.html")
    dom = dump_dom(page)
    assert 'data-rendered="yes"' in dom
    # A run compared with itself: every episode pairs with itself, so each check's
    # counts follow from the saved report.json's trials alone (not the page's data).
    saved = orjson.loads((remittance_run / "report.json").read_bytes())
    counted = _statuses(saved)
    assert set(re.findall(r'<tr data-check="([^"]+)">', dom)) == set(counted)
    assert sum(c["fail"] for c in counted.values()) == 24  # some checks fail in both
    for name, statuses in counted.items():
        shown = _cells(dom, "data-check", name)
        assert float(shown["p_value"]) == 1.0, name  # no discordant pair
        assert int(shown["both_pass"]) == statuses["pass"], name
        assert int(shown["both_fail"]) == statuses["fail"], name
        assert int(shown["only_a"]) == int(shown["only_b"]) == 0, name
        unmeasured = sum(statuses.values()) - statuses["pass"] - statuses["fail"]
        assert int(shown["unmeasured"]) == unmeasured, name


def _statuses(saved: dict[str, Any]) -> dict[str, Counter[str]]:
    """Each check's statuses counted straight from a saved report.json (an oracle
    independent of the page's own data)."""
    counted: dict[str, Counter[str]] = {}
    for trial in saved["trials"]:
        for result in trial["results"]:
            counted.setdefault(result["name"], Counter())[result["status"]] += 1
    return counted
