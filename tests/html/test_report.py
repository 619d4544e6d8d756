"""The HTML report's data and markup: numbers equal the report's, nothing external."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from onrecord.html import report_data, write_comparison, write_report
from onrecord.html._page import (
    NAME_CHARS,
    TEXT_CHARS,
    TEXT_LINES,
    embed_json,
    esc,
    long_text,
)
from onrecord.report import EvaluationReport
from onrecord.runner import plan_run, start_run
from tests.runner.conftest import onrecord


def _embedded(page: str) -> Any:
    match = re.search(
        r'<script type="application/json" id="onrecord-data">(.*?)</script>', page, re.S
    )
    assert match
    return orjson.loads(match.group(1))


def test_report_data_matches_the_saved_report(remittance_run: Path) -> None:
    data = report_data(remittance_run)
    report = EvaluationReport.load(remittance_run / "report.json")
    assert data["summary"] == report.summary().to_dict()
    assert data["decision"]["decision"] == "reject"
    assert data["decision"]["complete"]
    assert len(data["episodes"]) == len(report.trials) == 16
    failing = [e for e in data["episodes"] if e["outcome"] == "fail"]
    assert {e["case_id"] for e in failing} == {"duplicate-01", "duplicate-02", "duplicate-03"}
    episode = failing[0]
    assert [e["label"] for e in episode["timeline"]][-1] == "finish"
    assert episode["diff"]["allocations"]["created"]
    assert {row["table"] for row in episode["audit"]} >= {"allocations"}
    assert any(r["status"] == "fail" and r["reason"] for r in episode["results"])
    assert any("no_duplicate_allocation failed in 6 of 16" in f for f in data["findings"])


def test_page_embeds_the_data_and_renders_the_numbers(remittance_run: Path, tmp_path: Path) -> None:
    path = write_report(remittance_run, tmp_path / "r.html", data_json=tmp_path / "r.json")
    page = path.read_text()
    data = _embedded(page)
    assert data == orjson.loads((tmp_path / "r.json").read_bytes())
    for check in data["summary"]["checks"]:
        row = re.search(rf'<tr data-check="{re.escape(check["name"])}">(.*?)</tr>', page)
        assert row
        assert f'data-field="failed" data-value="{check["failed"]}"' in row.group(1)
    assert 'data-decision="reject"' in page


def test_page_references_nothing_outside_itself(lake_run: Path) -> None:
    page = write_report(lake_run).read_text()
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert all(s.startswith(("data:", "#")) for s in sources)
    assert "default-src 'none'" in page
    HTMLParser().feed(page)  # parses
    # A report is attached to tickets and mailed around: no local path in it.
    assert str(lake_run.resolve().parent) not in page


def test_gymnasium_episodes_show_their_attempts(lake_run: Path) -> None:
    data = report_data(lake_run)
    assert data["decision"]["decision"] == "indeterminate"
    episode = data["episodes"][0]
    assert episode["ended"] == "returned"
    assert len(episode["timeline"]) == 3
    assert any(
        "interact returned before the episode ended" in issue
        for issue in episode["coverage_issues"]
    )


def test_report_of_a_plain_report_file(lake_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "report.json"
    copy.write_bytes((lake_run / "report.json").read_bytes())
    done = onrecord("report", str(copy))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report.html").read_text()
    assert "no policy" in page
    assert _embedded(page)["episodes"] == []


def test_hostile_text_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        f"[[tasks]]\ncase_id = {orjson.dumps(hostile).decode()}\n"
        'input = "walk"\ncompletion = "either"\n'
    )
    from onrecord.runner import load_tasks

    start_run(
        tmp_path / "run",
        plan_run("frozenlake", "walks_to_goal", tasks=load_tasks(tasks), checks=["default"]),
    )
    page = write_report(tmp_path / "run").read_text()
    assert "<script>alert(1)" not in page
    assert "<img src=x" not in page
    assert page.count("<script") == 2
    assert _embedded(page)["tasks"][0]["case_id"] == hostile


class _Tags(HTMLParser):
    """The elements of a fragment, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


@given(st.text(max_size=700))
def test_long_text_keeps_every_character_as_text(value: str) -> None:
    parser = _Tags()
    parser.feed(long_text(value))
    parser.close()
    full = esc(value)
    if len(value) <= TEXT_CHARS and value.count("\n") < 6:
        assert long_text(value) == full  # short text is as before
        return
    # Before: the whole message inline. Now its first part, then all of it.
    assert parser.tags == ["details", "summary", "span", "span", "span", "div"]
    assert long_text(value).endswith(f'<div class="full">{full}</div></details>')


def test_long_text_markup_is_text_and_the_script_agrees_on_the_limits() -> None:
    hostile = "x" * 400 + "</details><script>alert(1)</script>"
    shown = long_text(hostile)
    assert "<script>" not in shown
    assert shown.count("</details>") == 1
    # report.js renders the episode view with the same limits as the page's tables.
    from onrecord.html._script import EPISODE_SCRIPT

    assert f"TEXT = {TEXT_CHARS}, NAME = {NAME_CHARS}, VALUE = 160, LINES = {TEXT_LINES};" in (
        EPISODE_SCRIPT
    )


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_embedded_json_round_trips_and_never_closes_the_script(value: Any) -> None:
    text = embed_json(value)
    assert "<" not in text
    assert ">" not in text
    assert orjson.loads(text) == value


def test_comparison_page(remittance_run: Path, careful_run: Path, tmp_path: Path) -> None:
    done = onrecord(
        "compare", str(careful_run), str(remittance_run), "--html", str(tmp_path / "c.html")
    )
    assert done.returncode == 0, done.stderr
    data = _embedded((tmp_path / "c.html").read_text())
    check = next(c for c in data["comparison"]["checks"] if c["name"] == "no_duplicate_allocation")
    assert (check["only_a"], check["only_b"]) == (6, 0)
    assert check["p_value"] == 2 / 2**6
    assert {"case_id": "duplicate-01", "repeat": 0, "a": "pass", "b": "fail"}.items() <= next(
        pair for pair in check["discordant"] if pair["case_id"] == "duplicate-01"
    ).items()
    assert "duplicate-01#0: pass→fail" in (tmp_path / "c.html").read_text()


def test_refused_comparison_page_lists_the_reasons(
    remittance_run: Path, lake_run: Path, tmp_path: Path
) -> None:
    _, data = write_comparison(remittance_run, lake_run, tmp_path / "c.html")
    assert data["comparison"] is None
    assert any("case sets differ" in reason for reason in data["refused"])
    assert "refused" in (tmp_path / "c.html").read_text()


def test_world_model_report_plots_pass_rate_by_horizon(tmp_path: Path) -> None:
    from onrecord.report import CheckResult, Trial

    identity = {"case_id": "c", "source_id": None, "content_digest": "0" * 64}
    trials = [
        Trial(
            identity,
            repeat,
            {"kind": "forecast", "digest": str(repeat)},
            tuple(
                CheckResult(f"dynamics/x/h{h}", "v1", "pass" if repeat < 4 - h // 4 else "fail", "")
                for h in (1, 4, 8)
            ),
        )
        for repeat in range(4)
    ]
    (tmp_path / "reports").mkdir()
    EvaluationReport.from_trials(trials).save_json(tmp_path / "reports" / "m.report.json")
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "error.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><rect width="1" height="1"/></svg>'
    )
    data = report_data(tmp_path / "reports" / "m.report.json")
    assert data["horizons"]["x"] == [
        [1, 1.0, *data["horizons"]["x"][0][2:]],
        [4, 0.75, *data["horizons"]["x"][1][2:]],
        [8, 0.5, *data["horizons"]["x"][2][2:]],
    ]
    assert [image["name"] for image in data["images"]] == ["error.svg"]
    page = write_report(tmp_path / "reports" / "m.report.json").read_text()
    assert "Forecast pass rate by horizon" in page
    assert 'src="data:image/svg+xml;base64,' in page
