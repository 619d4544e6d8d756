"""Round 38 review of the row diff and audit history in Chromium: an insert shows the row
it created and a delete the row it removed (not ``null → value`` per column), values are
JSON (the text "null" and a NULL, "1" and 1, read apart, as `onrecord show` prints them),
and a created or deleted row is not headed "before → after". A plain report file's page
is titled by what it holds, not by the command that wrote it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord.cli.main import main
from onrecord.html import render_report_page, report_data, write_report
from onrecord.html._episode import _audit_rows, _diff_rows
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

_CREATED = {"id": 1, "note": "null", "code": "1", "gone": None}
_EVENTS: list[dict[str, Any]] = [
    {"seq": 1, "step": 1, "table": "notes", "op": "insert", "key": 1, "old": None, "new": _CREATED},
    {
        "seq": 2,
        "step": 2,
        "table": "notes",
        "op": "update",
        "key": 1,
        "old": _CREATED,
        "new": {**_CREATED, "note": None, "code": 1},
    },
    {"seq": 3, "step": 3, "table": "notes", "op": "delete", "key": 1, "old": _CREATED, "new": None},
]
_DIFF = {
    "notes": {
        "created": [_CREATED],
        "changed": [
            {"key": 7, "before": {"id": 7, "note": "null"}, "after": {"id": 7, "note": None}}
        ],
        "deleted": [{"id": 9, "note": "x"}],
    }
}
# Each row's cells as text, and whether its values cell strikes a "before".
_READ = (
    "const cells = sel => [...document.querySelectorAll(sel)].map(tr =>"
    " [...tr.cells].map(td => td.textContent).concat(String(!!tr.querySelector('del'))));"
    "out.audit = cells('#episode-view tr.audit-row');"
    "out.diff = cells('#episode-view tr.diff-row');"
    "out.heads = [...document.querySelectorAll('#episode-view table.diff th,"
    " #episode-view table.audit th')].map(th => th.textContent);"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rows38") / "run"
    code = main(
        [
            *("run", "remittance", "-a", "change_and_restore", "-s", "0", "-r", "1"),
            *("--executor", "inprocess", "--no-progress", "-o", str(out)),
        ]
    )
    assert code == 1, code  # rejected: the failing agent
    return out


def _page(run: Path, tmp_path: Path) -> dict[str, Any]:
    """The run's page with the first episode shown given these rows, read in Chromium."""
    data = report_data(run)
    first = next(i for i, e in enumerate(data["episodes"]) if e["outcome"] != "pass")
    data["episodes"][first].update(audit=_audit_rows(_EVENTS), diff=_diff_rows(_DIFF))
    page = tmp_path / "rows.html"
    page.write_text(render_report_page(data))
    return _drive(page, _READ, tmp_path)


def test_audit_shows_an_insert_and_a_delete_as_their_rows(run: Path, tmp_path: Path) -> None:
    audit = _page(run, tmp_path)["audit"]
    row = '{"code":"1","gone":null,"id":1,"note":"null"}'
    # Before: "code: null → 1", "gone" left out, "id: null → 1", "note: null → null".
    assert audit[0][4:] == ["1", f"created: {row}", "false"]
    assert audit[2][4:] == ["1", f"deleted: {row}", "false"]
    # Before: "code: 1 → 1" and "note: null → null", each a change that read as none.
    assert audit[1][4:] == ["1", 'code: "1" → 1note: "null" → null', "true"]


def test_row_diff_values_are_json_and_labelled(run: Path, tmp_path: Path) -> None:
    out = _page(run, tmp_path)
    assert out["diff"] == [
        ["notes", "created", 'created: {"code":"1","gone":null,"id":1,"note":"null"}', "false"],
        ["notes", "changed 7", 'note: "null" → null', "true"],
        ["notes", "deleted", 'deleted: {"id":9,"note":"x"}', "false"],
    ]
    # A created row's whole JSON was headed "before → after".
    assert out["heads"] == [
        "table",
        "change",
        "values",
        "seq",
        "step",
        "table",
        "op",
        "key",
        "values",
    ]


def test_a_report_files_page_says_what_it_holds(run: Path, tmp_path: Path) -> None:
    report = tmp_path / "ledger.report.json"
    report.write_bytes((run / "report.json").read_bytes())
    page = write_report(report, tmp_path / "ledger.html")
    out = _drive(
        page,
        "out.title = document.title; out.h1 = document.querySelector('h1').textContent;",
        tmp_path,
    )
    # Before: "onrecord report ledger.report.json", the command, as title and heading.
    assert out["title"] == out["h1"] == "ledger: 33 episodes of 33 tasks"
