"""Run-level reading, round 38: the measures table in ``gate --markdown`` and at the end
of ``onrecord run``; ``show`` capping a report of many measures (``--all-measures``);
the HTML row diff without an empty unheaded column; and ``show``'s end line of an
episode's row history naming the rows put back inside a table with lasting changes.

Real runs, the real command in a subprocess, real SQLite files; expected values are
read from the saved records, not from the code under test."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.chromium import CHROMIUM, MISSING, dump_dom
from tests.cli_process import onrecord

HEADERS = ["measure", "trials", "mean", "min", "median", "max", "above 0"]


@pytest.fixture(scope="module")
def ledger_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real ledger run (rejected by its policy) and ``onrecord run``'s output."""
    out = tmp_path_factory.mktemp("r38") / "run"
    done = onrecord(
        "run", "ledger", "-a", "forbidden_then_restored", "-s", "0-1",
        "--no-progress", "-o", out,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    return out, done.stdout


def _measures(report_file: Path) -> dict[str, list[float]]:
    trials = orjson.loads(report_file.read_bytes())["trials"]
    names = sorted({name for trial in trials for name in trial["measures"]})
    return {n: [t["measures"][n] for t in trials if n in t["measures"]] for n in names}


def test_gate_markdown_has_the_measures_after_the_requirements(
    ledger_run: tuple[Path, str], tmp_path: Path
) -> None:
    run, _ = ledger_run
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\n[[requirements]]\ncheck = "protected_untouched"\n')
    done = onrecord("gate", run, "--policy", policy, "--markdown", "-")
    assert done.returncode == 1, done.stderr
    text = done.stdout
    values = _measures(run / "report.json")
    assert values  # the run has measures (steps, return)
    head = text.index("**Measures** over the 2 trials")
    assert text.index("| requirement |") < head
    lines = text[head:].splitlines()
    assert lines[2] == "| " + " | ".join(HEADERS) + " |"
    rows = {}
    for line in lines[4:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].replace("\\_", "_")] = cells
    assert set(rows) == set(values)
    for name, got in values.items():
        cells = rows[name]
        assert cells[1] == str(len(got))
        assert float(cells[3]) == min(got)
        assert float(cells[5]) == max(got)
        assert cells[6] == str(sum(v > 0 for v in got))


def test_run_prints_the_measures_table(ledger_run: tuple[Path, str]) -> None:
    run, stdout = ledger_run
    assert "measures over the 2 trials" in stdout
    for name, got in _measures(run / "report.json").items():
        row = re.search(rf"│ {re.escape(name)} +│ (\d+) ", stdout)
        assert row, name
        assert row.group(1) == str(len(got))
    # Before the decision, as `show RUN` orders them.
    assert stdout.index("measures over the") < stdout.index("decision:")


def _many(tmp_path: Path, count: int) -> Path:
    report = EvaluationReport.from_trials(
        Trial(
            {"case_id": f"task-{i}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (CheckResult("posted", "v1", "pass", "why"),),
            measures={f"coord-{j}/error": float(i + j) for j in range(count)},
            settings={"environment_id": "env"},
        )
        for i in range(3)
    )
    return report.save_json(tmp_path / "report.json")


def _names(stdout: str) -> list[str]:
    return re.findall(r"^│ (coord-\d+/error) ", stdout, re.M)


def test_show_caps_many_measures_and_all_measures_lists_them(tmp_path: Path) -> None:
    report = _many(tmp_path, 45)
    done = onrecord("show", report, "--no-progress")
    assert done.returncode == 0, done.stderr
    # Natural order, as the report has them: coord-2 before coord-10.
    assert _names(done.stdout) == [f"coord-{j}/error" for j in range(20)]
    assert "first 20 of 45 measures over the 3 trials" in done.stdout
    assert f"… 25 more measures; onrecord show {report} --all-measures lists every one" in (
        done.stdout
    )
    every = onrecord("show", report, "--all-measures", "--no-progress")
    assert every.returncode == 0, every.stderr
    assert _names(every.stdout) == [f"coord-{j}/error" for j in range(45)]
    assert "more measures" not in every.stdout


def test_gate_markdown_caps_many_measures(tmp_path: Path) -> None:
    report = _many(tmp_path, 25)
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\n[[requirements]]\ncheck = "posted"\n')
    done = onrecord("gate", report, "--policy", policy, "--markdown", "-")
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^\| coord-(\d+)/error \|", done.stdout, re.M)
    assert rows == [str(j) for j in range(20)]
    assert "… and 5 more (`onrecord show REPORT --all-measures` lists them all)" in done.stdout


def test_all_measures_without_a_report_is_refused(ledger_run: tuple[Path, str]) -> None:
    run, _ = ledger_run
    done = onrecord("show", run / "decision.json", "--all-measures")
    assert done.returncode == 3
    assert "--all-measures needs a report, run or regrade directory" in done.stderr


class _DiffTable(HTMLParser):
    """The headers and each row's cell count (colspans added) of ``table.diff``."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = False
        self.headers: list[str] = []
        self.rows: list[int] = []
        self._th: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table" and found.get("class") == "diff":
            self.inside = True
        elif self.inside and tag == "th":
            self._th = []
        elif self.inside and tag == "tr" and "diff-row" in (found.get("class") or ""):
            self.rows.append(0)
        elif self.inside and tag == "td" and self.rows:
            self.rows[-1] += int(found.get("colspan") or 1)

    def handle_data(self, data: str) -> None:
        if self._th is not None:
            self._th.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._th is not None:
            self.headers.append("".join(self._th).strip())
            self._th = None
        elif tag == "table":
            self.inside = False


@pytest.mark.browser
def test_the_html_row_diff_has_no_unheaded_column(tmp_path: Path) -> None:
    if CHROMIUM is None:
        pytest.skip(MISSING)
    run = tmp_path / "run"
    done = onrecord(
        "run", "remittance", "-a", "change_and_restore", "-s", "0", "--no-progress",
        "--env-config", "size=30", "-o", run,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    page = tmp_path / "r.html"
    done = onrecord("report", run, "-o", page)
    assert done.returncode == 0, done.stderr
    data = orjson.loads((run / "report.json").read_bytes())
    trial = data["trials"][0]
    key = f"{trial['case']['case_id']}%23{trial['repeat']}"
    dom = dump_dom(page, fragment=f"episode={key}")
    parsed = _DiffTable()
    parsed.feed(dom)
    assert parsed.rows, "no row diff rendered"
    assert parsed.headers == ["table", "change", "values"]
    assert all(parsed.headers)  # no column without a header
    assert set(parsed.rows) == {len(parsed.headers)}


@tool(writes=True, example={"id": 1, "status": "written_off"})
def set_status(ctx: ToolContext, id: int, status: str) -> None:
    """Set a claim's status."""
    ctx.execute("UPDATE claims SET status = ? WHERE id = ?", (status, id))


def test_end_line_names_rows_put_back_in_a_table_with_lasting_changes(tmp_path: Path) -> None:
    snapshot = Snapshot.build(
        "round38",
        "CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL);"
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
        lambda conn, _rng: conn.executemany(
            "INSERT INTO claims VALUES (?, 'open')", [(1,), (2,), (3,)]
        ),
        seed=1,
    )
    with ToolWorld(snapshot, [set_status]) as world:
        world.reset(seed=1)
        world.call("set_status", {"id": 1, "status": "paid"})  # lasting
        world.call("set_status", {"id": 2, "status": "written_off"})  # put back
        world.call("set_status", {"id": 3, "status": "written_off"})  # put back
        world.call("set_status", {"id": 2, "status": "open"})
        world.call("set_status", {"id": 3, "status": "open"})
        saved = save_episode(world, tmp_path / "episode")
    assert [c["key"] for c in saved.diff["claims"]["changed"]] == [1]
    done = onrecord("show", tmp_path / "episode")
    assert done.returncode == 0, done.stderr
    (end,) = [line for line in done.stdout.splitlines() if line.startswith("at the end:")]
    assert end == (
        "at the end: claims 1 changed — changed during the episode and put back by its "
        "end: claims rows 2, 3"
    )
