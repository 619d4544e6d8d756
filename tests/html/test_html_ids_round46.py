"""The report's sections a notebook reuses (``PolicyDecision._repr_html_``,
``Comparison._repr_html_``) can leave their element ids out: two decisions shown on one
notebook page repeated ``id="reasons"``, ``id="requirements"`` and the rest (invalid
HTML; a link or script found the first one). The report and comparison pages keep
them. Real runs made by the runner."""

from __future__ import annotations

import copy
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from onrecord.html import comparison_data, report_data, write_comparison, write_report
from onrecord.html._compare import _checks, _measures
from onrecord.html._decision import headline, requirements_section


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [value or "" for name, value in attrs if name == "id"]


def _ids(html: str) -> list[str]:
    parser = _Ids()
    parser.feed(html)
    return parser.ids


def _decision(run: Path) -> dict[str, Any]:
    """The run's decision as the page gets it, one failed requirement made advisory so
    every part of the section (advisory failures too) is there."""
    decision = copy.deepcopy(report_data(run)["decision"])
    failed = [r for r in decision["requirements"] if r["status"] == "failed"]
    failed[-1]["critical"] = False
    return dict(decision)


def test_decision_sections_without_ids(remittance_run: Path) -> None:
    decision = _decision(remittance_run)
    with_ids = headline(decision) + requirements_section(decision)
    assert {"decision-headline", "requirements", "reasons", "advisory-reasons"} <= set(
        _ids(with_ids)
    )
    without = headline(decision, ids=False) + requirements_section(decision, ids=False)
    assert _ids(without) == []
    # The same section otherwise: only the id attributes differ.
    for name in _ids(with_ids):
        with_ids = with_ids.replace(f' id="{name}"', "")
    assert without == with_ids


def test_comparison_sections_without_ids(remittance_run: Path, careful_run: Path) -> None:
    data = comparison_data(careful_run, remittance_run)
    comparison, note = data["comparison"], "only A has `m`"
    with_ids = _checks(comparison) + _measures(comparison, note)
    assert {"checks-section", "checks", "measures-section", "one-sided-measures"} <= set(
        _ids(with_ids)
    )
    without = _checks(comparison, ids=False) + _measures(comparison, note, ids=False)
    assert _ids(without) == []
    for name in _ids(with_ids):
        with_ids = with_ids.replace(f' id="{name}"', "")
    assert without == with_ids


def test_pages_keep_their_ids(remittance_run: Path, careful_run: Path, tmp_path: Path) -> None:
    report = write_report(remittance_run, tmp_path / "r.html").read_text()
    ids = _ids(report)
    assert {"decision-headline", "requirements", "reasons", "checks"} <= set(ids)
    assert len(ids) == len(set(ids))
    page, _ = write_comparison(careful_run, remittance_run, tmp_path / "c.html")
    ids = _ids(page.read_text())
    assert {"checks-section", "checks", "measures-section", "measures"} <= set(ids)
    assert len(ids) == len(set(ids))
