"""The notebook fragments (``_repr_html_``) of records with markup for names and reasons,
inserted into a page as Jupyter inserts them and loaded in a real headless Chromium:
no handler in the record text runs, and the text shows as written."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement, compare_reports
from tests.chromium import CHROMIUM, MISSING, dump_dom
from tests.display_helpers import HOSTILE, hostile_report

pytestmark = pytest.mark.browser
if CHROMIUM is None:
    pytest.skip(MISSING, allow_module_level=True)

# Runs after the fragments: proves the page runs script, so a handler in them would
# have run too (the image's source "x" fails to load, which fires onerror).
_CONTROL = "<script>document.body.dataset.ran = 'yes'</script>"


def test_fragments_run_no_record_text_in_chromium(tmp_path: Path) -> None:
    report = hostile_report()
    decision = AcceptancePolicy((CheckRequirement(HOSTILE),)).evaluate(report)
    comparison = compare_reports(report, report)
    fragments = [obj._repr_html_() for obj in (report, decision, comparison)]
    page = tmp_path / "notebook.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + "".join(f"<section>{fragment}</section>" for fragment in fragments)
        + _CONTROL
        + "</body></html>",
        encoding="utf-8",
    )
    dom = dump_dom(page)
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None
    assert 'data-ran="yes"' in body.group(1)  # script runs on this page
    assert "pwned" not in body.group(1)  # but none from a record
    assert "<img" not in dom
    # Each fragment shows the check name as text, in a table cell.
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", dom, re.S)]
    assert sum(HOSTILE in cell for cell in cells) >= 3
