"""Review of the pages' new parts in Chromium and as HTML: an episode's check names are
not folded mid-word beside long evidence, its measures read as "name value" pairs, and
the comparison's note on measures recorded on one side only sits under the measures'
heading with its command as code. The runs are made with the real CLI."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from onrecord.cli.main import main
from onrecord.html import write_comparison, write_report
from onrecord.report import EvaluationReport
from onrecord.report._report import content_digest
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser


def _run(tmp_path: Path, agent: str) -> Path:
    out = tmp_path / agent
    code = main(
        [
            *("run", "remittance", "-a", agent, "-s", "0", "-r", "1"),
            *("--executor", "inprocess", "--no-progress", "-o", str(out)),
        ]
    )
    assert code in (0, 1), code  # 1: the policy rejected the run, which is fine here
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """careful (passes) and skips_notes (fails three checks, with long evidence)."""
    root = tmp_path_factory.mktemp("review36")
    return _run(root, "careful"), _run(root, "skips_notes")


# The first failing episode's detail is open on load: its check names with the line
# boxes each name's text takes, and its measures with the lines each pair takes.
_DETAIL = (
    "const cells = [...document.querySelectorAll("
    "'#episode-view table.checks tbody td:first-child')];"
    "out.names = cells.map(td => { const r = document.createRange(); r.selectNodeContents(td);"
    " return [td.textContent, r.getClientRects().length]; });"
    "out.measures = [...document.querySelectorAll('#episode-view .measure')]"
    ".map(m => [m.dataset.measure, m.textContent,"
    " new Set([...m.getClientRects()].map(r => Math.round(r.bottom))).size]);"
    "out.meta = document.querySelector('#episode-view p.meta').textContent;"
)


def test_episode_check_names_stay_whole_beside_long_evidence(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    page = write_report(runs[1], tmp_path / "r.html")
    out = _drive(page, _DETAIL, tmp_path, window="1280,900")
    names = dict(out["names"])
    assert "only_expected_tables_changed" in names
    # One line box each: before, "expected_ch/anges" and "only_expect/ed_tables_ch/anged"
    # were folded mid-word into a narrow column beside the evidence.
    assert all(lines == 1 for lines in names.values()), names


def test_episode_measures_read_as_name_value_pairs(runs: tuple[Path, Path], tmp_path: Path) -> None:
    page = write_report(runs[1], tmp_path / "r.html")
    # Narrowed to a small phone's text column, where the line must break many times.
    narrow = "document.getElementById('episode-view').style.width = '200px';"
    out = _drive(page, narrow + _DETAIL, tmp_path, window="400,900")
    shown = {name: text for name, text, _ in out["measures"]}
    assert set(shown) >= {"row_writes", "rows_put_back", "tool_calls"}
    assert re.fullmatch(r"row_writes \d+", shown["row_writes"])
    assert re.fullmatch(r"rows_put_back \d+", shown["rows_put_back"])
    # Before: the raw JSON object, {"rejected_calls":0,"row_writes":4,…}.
    assert '{"' not in out["meta"]
    # A pair is never split across lines on a phone's width: one line (bottom) each.
    assert all(lines == 1 for _, _, lines in out["measures"]), out["measures"]


def _without(report: Path, names: set[str], target: Path) -> Path:
    """A copy of a run's report as an earlier onrecord graded it: without ``names``."""
    data = orjson.loads(report.read_bytes())
    for trial in data["trials"]:
        trial["measures"] = {k: v for k, v in trial["measures"].items() if k not in names}
    del data["digest"]
    data["digest"] = content_digest(data)
    EvaluationReport.from_dict(data).save_json(target)
    return target


def test_one_sided_note_shows_its_command_as_code(runs: tuple[Path, Path], tmp_path: Path) -> None:
    old = _without(runs[1] / "report.json", {"row_writes", "rows_put_back"}, tmp_path / "o.json")
    text = write_comparison(runs[0], old, tmp_path / "c.html")[0].read_text()
    note = re.search(r'<p class="meta" id="one-sided-measures">(.*?)</p>', text, re.S)
    assert note, "no one-sided note"
    assert "row_writes, rows_put_back" in note.group(1)
    assert "<code>onrecord regrade RUN</code>" in note.group(1)
    assert "`" not in note.group(1)  # before: the backquotes showed as typed
    # Under the measures' heading, after their table.
    section = re.search(r'<section id="measures-section">(.*?)</section>', text, re.S)
    assert section, "no measures section"
    assert 'id="one-sided-measures"' in section.group(1)


def test_one_sided_note_has_a_heading_when_no_measure_is_common(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    measured = orjson.loads((runs[1] / "report.json").read_bytes())["trials"][0]["measures"]
    old = _without(runs[1] / "report.json", set(measured), tmp_path / "o.json")
    text = write_comparison(runs[0], old, tmp_path / "c.html")[0].read_text()
    # Before: the note followed the checks' discordant tasks with no heading of its own,
    # as if it were part of that list.
    section = re.search(r'<section id="measures-section">(.*?)</section>', text, re.S)
    assert section, "no measures section"
    assert "<h2>Continuous measures" in section.group(1)
    assert 'id="one-sided-measures"' in section.group(1)
    assert 'id="measures"' not in section.group(1)  # no empty table
