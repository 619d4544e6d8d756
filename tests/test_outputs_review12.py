"""The outputs a user reads, reviewed again on real runs of the remittance environment.

- A CI log (no terminal) is as wide as ``COLUMNS`` says; 160 columns only without it.
- Tables fit their width without folding a word: at 80 columns headers folded mid-word
  ("require/ment", "critica/l") and every name was cut; at 160 ``show RUN`` folded a
  requirement name to make room for its reason.
- The HTML report's Decision section says what decided and gives each requirement's
  numbers; an advisory failure is listed apart from the reasons that decided.
- The McNemar note names checks with the same counts together; the bootstrap note
  counts the cases behind its pairs.
- Reasons show rates and thresholds as the table beside them does (``≥ 100.0%``, not
  ``>= 1``); a saved decision keeps the policy's words, so one saved before verifies.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from onrecord import EvaluationReport
from onrecord._canonical import content_digest, record_bytes
from onrecord._numbers import shown_reason
from onrecord.compare import compare_reports, few_bootstrap_pairs_note
from onrecord.report import CheckResult, Trial
from tests.cli_process import onrecord
from tests.warm_client import run_onrecord

POLICY = """
name = "release"
[[requirements]]
check = "expected_changes"
[[requirements]]
check = "only_expected_tables_changed"
min_pass_rate = 0.95
min_lower_bound = 0.5
[[requirements]]
check = "*"
critical = false
"""
TASKS = "duplicate-01,duplicate-02,duplicate-03,full-01,full-02"
CHECKS = (
    "allocations_sum_to_line",
    "answer_reports_done",
    "balances_reconcile",
    "expected_changes",
    "followup_before_deadline",
    "no_duplicate_allocation",
    "no_post_over_threshold",
    "only_expected_tables_changed",
    "read_notes_before_acting",
)


def _command(*args: str | Path, columns: str | None) -> subprocess.CompletedProcess[str]:
    """``onrecord ARGS`` as a CI job runs it: output to a pipe, ``COLUMNS`` as given."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return run_onrecord([str(arg) for arg in args], env=env, cwd=None, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A policy, a run of ``double_poster`` and one of ``careful`` (3 repeats of 5 tasks)."""
    folder = tmp_path_factory.mktemp("review12")
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    for agent, code in (("double_poster", 1), ("careful", 0)):  # 1 reject, 0 accept
        done = onrecord(
            "run", "remittance", "--agent", agent, "--repeats", "3", "--tasks", TASKS,
            "--policy", policy, "--out", folder / agent, "--no-progress",
        )  # fmt: skip
        assert done.returncode == code, done.stderr
    return policy, folder / "double_poster", folder / "careful"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split("[│┃]", line)]


def _tables(text: str) -> tuple[list[list[str]], list[list[str]]]:
    """The header and body rows of every table in ``text``, as cells."""
    heads = [_cells(line) for line in text.splitlines() if "┃" in line]
    rows = [_cells(line) for line in text.splitlines() if "│" in line]
    return heads, rows


# --- COLUMNS -------------------------------------------------------------------------


def test_a_ci_log_is_as_wide_as_columns_says(runs: tuple[Path, Path, Path]) -> None:
    policy, out, _ = runs
    for columns, widest in (("80", 80), ("120", 120), (None, 160)):
        done = _command("gate", out, "--policy", policy, columns=columns)
        assert done.returncode == 1, done.stderr
        width = max(len(line) for line in done.stdout.splitlines())
        assert width <= widest, (columns, done.stdout)
        # the reasons are single lines of up to ~100 characters: wrapped only when narrow
        assert (width > 80) == (widest > 80), (columns, done.stdout)


# --- tables at 80 and 160 columns ------------------------------------------------------


@pytest.mark.parametrize("columns", ["80", "160"])
def test_no_name_or_header_word_is_folded(runs: tuple[Path, Path, Path], columns: str) -> None:
    policy, out, careful = runs
    outputs = [
        _command("gate", out, "--policy", policy, columns=columns).stdout,
        _command("show", out, columns=columns).stdout,
        _command("compare", careful, out, columns=columns).stdout,
    ]
    header_words = set(
        re.split(
            r"\s+",
            "requirement critical status pass rate 95% interval threshold cases unmeasured "
            "reason check version passed failed of which errors coverage results both A "
            "only B fail McNemar p measure mean − bootstrap pairs "
            "episode outcome checks not "  # show RUN's episodes not passed
            "trials min median max above 0",  # show RUN's measures over the run
        )
    )
    for text in outputs:
        # A command to paste is one line, however narrow (tests/test_copyable_hints15.py).
        lines = [line for line in text.splitlines() if not line.startswith("see one: ")]
        assert max(len(line) for line in lines) <= int(columns), text
        heads, rows = _tables(text)
        words = {word for row in heads for cell in row for word in cell.split()}
        assert words <= header_words, (words - header_words, text)
        names = {cell.split(" (")[0] for row in rows for cell in row[:2]}
        names |= {line.split(" (")[0] for line in lines}  # stacked at 80: a name a line
        for check in ("expected_changes", "only_expected_tables_changed"):
            assert check in names, text
    gate, show, _ = outputs
    # the requirement names of the decision, each whole in its row
    for text in (gate, show):
        _, rows = _tables(text)
        firsts = [row[1] for row in rows if len(row) > 2 and row[1]]
        firsts += text.splitlines()  # at 80 stacked: each name on a line of its own
        for name in ("expected_changes", "only_expected_tables_changed", "*"):
            assert any(first.split(" (")[0] == name for first in firsts), text
    if columns == "80":  # what the narrow layout says instead of its columns
        assert "* (advisory)" in gate
        assert "allocations_sum_to_line" in show
        assert "(remittance-v" in show


def test_show_of_a_run_at_160_columns_wraps_the_reason_not_the_name(
    runs: tuple[Path, Path, Path],
) -> None:
    _, out, _ = runs
    text = _command("show", out, columns="160").stdout
    decision_text = text.split("decision: reject")[1]
    _, rows = _tables(decision_text)
    # Beside a reason column the threshold wrapped inside its parts ("≥ 100.0%, ≥" over
    # "5 cases"): the narrow table keeps it whole, each reason a line below it.
    decision = [row for row in rows if len(row) == 8]  # requirement … cases
    assert [row[1].split(" (")[0] for row in decision if row[1]] == [
        "expected_changes",
        "only_expected_tables_changed",
        "*",
    ], text
    assert [row[5] for row in decision][:2] == ["≥ 100.0%", "≥ 95.0%, lower bound ≥ 50.0%"], text
    for name in ("expected_changes", "only_expected_tables_changed"):
        assert f"  - '{name}' (critical) failed: " in decision_text, text


# --- the HTML report's decision --------------------------------------------------------


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

_DECISION = (
    "const section = document.querySelector('#decision-section');"
    "const headline = document.querySelector('#decision-headline');"
    "out.headline = headline ? headline.innerText : null;"
    "out.headlineHeight = headline ? headline.getBoundingClientRect().height : 0;"
    "const table = document.querySelector('#requirements');"
    "out.inSection = !!(table && section.contains(table));"
    "out.heads = table ? [...table.querySelectorAll('thead th')]"
    ".map(th => [th.innerText, th.getAttribute('scope')]) : [];"
    "out.rows = table ? [...table.querySelectorAll('tbody tr')]"
    ".map(tr => [...tr.cells].map(c => c.innerText)) : [];"
    "out.rowHeads = table ? table.querySelectorAll('tbody th').length : -1;"
    "out.tableHeight = table ? table.getBoundingClientRect().height : 0;"
    "out.reasons = [...document.querySelectorAll('#reasons li')].map(li => li.innerText);"
    "out.advisory = [...document.querySelectorAll('#advisory-reasons li')]"
    ".map(li => li.innerText);"
)


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_the_html_decision_gives_the_terminal_facts(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from tests.html.test_browser_probe import _drive

    policy, out, _ = runs
    page = tmp_path / "report.html"
    assert onrecord("report", out, "-o", page).returncode == 0
    found = _drive(page, _DECISION, tmp_path, window="1280,2000")
    cause = "failed: expected_changes, only_expected_tables_changed; advisory failed (warning): *"
    gate = onrecord("gate", out, "--policy", policy)
    assert f"  {cause}\n" in gate.stdout  # the headline PolicyDecision gives the terminal
    assert found["headline"] == cause
    assert found["headlineHeight"] > 0
    assert found["tableHeight"] > 0
    assert found["inSection"]
    assert [h for h, _ in found["heads"]] == [
        "requirement", "critical", "status", "pass rate", "95% interval, clustered by case",
        "threshold", "cases", "unmeasured",
    ]  # fmt: skip
    assert {scope for _, scope in found["heads"]} == {"col"}
    assert found["rowHeads"] == 0  # every header a column's, as the page's other tables
    by_name = {row[0]: row for row in found["rows"]}
    assert by_name["expected_changes"][1:] == [
        "critical", "failed", "40.0% (6 of 15)", "11.8% – 76.9%", "≥ 100.0%", "5", "0",
    ]  # fmt: skip
    assert by_name["only_expected_tables_changed"][5] == "≥ 95.0%, lower bound ≥ 50.0%"
    assert by_name["*"][1:4] == ["advisory", "failed", "73.3% (99 of 135)"]
    # the reasons that decided, apart from the advisory failure
    assert len(found["reasons"]) == 2
    assert all("(critical)" in reason for reason in found["reasons"])
    assert len(found["advisory"]) == 1
    assert found["advisory"][0].startswith("'*' (advisory)")
    assert found["advisory"][0].endswith("needs pass rate ≥ 100.0%")


# --- the comparison notes --------------------------------------------------------------


def test_checks_with_the_same_counts_are_named_together(runs: tuple[Path, Path, Path]) -> None:
    _, out, careful = runs
    names = "balances_reconcile, expected_changes, no_duplicate_allocation"
    # The terminal prints the names as they are; Markdown escapes their underscores.
    for option, shown in (([], names), (["--markdown", "-"], names.replace("_", "\\_"))):
        text = " ".join(onrecord("compare", careful, out, *option).stdout.split())
        assert text.count("9 discordant pairs from 3 cases, smallest possible p 0.25") == 1
        assert shown in text, text


def _trial(case: str, repeat: int, value: float) -> Trial:
    return Trial(
        {"case_id": case, "content_digest": "sha256:" + "0" * 64},
        repeat,
        {"kind": "test"},
        (CheckResult("posted", "v1", "pass", "why"),),
        measures={"return": value},
        settings={"environment_id": "env"},
    )


def _reports(cases: int, repeats: int) -> tuple[EvaluationReport, EvaluationReport]:
    keys = [(f"task-{c}", r) for c in range(cases) for r in range(repeats)]
    a = EvaluationReport.from_trials(_trial(c, r, 1.0 + r) for c, r in keys)
    b = EvaluationReport.from_trials(_trial(c, r, 3.0 + 2 * r) for c, r in keys)
    return a, b


def test_the_bootstrap_note_counts_cases_not_pairs(tmp_path: Path) -> None:
    comparison = compare_reports(*_reports(1, 3))
    (measure,) = comparison.measures
    assert (measure.pairs, measure.cases) == (3, 1)
    assert "return (3 pairs from 1 case)" in str(few_bootstrap_pairs_note(comparison.measures))
    # 30 pairs are 10 cases repeated: still too few cases for the interval
    many = compare_reports(*_reports(10, 3))
    assert "return (30 pairs from 10 cases)" in str(few_bootstrap_pairs_note(many.measures))
    a, b = _reports(1, 3)
    paths = a.save_json(tmp_path / "a.json"), b.save_json(tmp_path / "b.json")
    text = " ".join(onrecord("compare", *paths, "--json", tmp_path / "c.json").stdout.split())
    assert "return (3 pairs from 1 case)" in text
    assert "return (3 pairs from 1 case)" in " ".join(
        onrecord("show", tmp_path / "c.json").stdout.split()
    )


def test_a_comparison_saved_before_cases_were_counted_still_verifies(tmp_path: Path) -> None:
    a, b = _reports(1, 3)
    paths = a.save_json(tmp_path / "a.json"), b.save_json(tmp_path / "b.json")
    assert onrecord("compare", *paths, "--json", tmp_path / "new.json").returncode == 0
    saved = orjson.loads((tmp_path / "new.json").read_bytes())
    for measure in saved["measures"]:  # as an earlier onrecord wrote it
        del measure["cases"]
    del saved["digest"]
    saved["digest"] = content_digest(saved)
    old = tmp_path / "old.json"
    old.write_bytes(record_bytes(saved))
    assert onrecord("verify", old).returncode == 0
    shown = " ".join(onrecord("show", old).stdout.split())
    assert "return (3 pairs)" in shown  # without the cases, the pairs it knows


# --- reasons in the table's numbers ----------------------------------------------------


def test_reasons_read_as_their_threshold_and_the_saved_words_stay(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    policy, out, _ = runs
    junit = tmp_path / "junit.xml"
    gate = onrecord(
        "gate", out, "--policy", policy, "--markdown", tmp_path / "summary.md", "--junit", junit
    )
    page = tmp_path / "report.html"
    assert onrecord("report", out, "-o", page).returncode == 0
    shown = {
        "terminal": gate.stdout,
        "show": _command("show", out, columns="80").stdout,  # reasons: whole lines
        "markdown": (tmp_path / "summary.md").read_text(),
        "junit": junit.read_text(),
        "html": page.read_text().split('id="decision-section"')[1].split("</section>")[0],
    }
    for surface, text in shown.items():
        text = " ".join(text.split())
        assert "needs pass rate ≥ 100.0%" in text, surface
        assert "needs pass rate ≥ 95.0%" in text, surface
        assert ">= 1" not in text, surface
        assert "&gt;= 1" not in text, surface
    # What decision.json keeps is the policy's sentence, as saved before this change:
    # ``verify`` compares it with the decision made again, so it must not change.
    saved = orjson.loads((out / "decision.json").read_bytes())["decision"]
    assert saved["reasons"][:2] == [
        "'expected_changes' (critical) failed: 6 passed, 9 failed, 0 not measured of 15; "
        "needs pass rate >= 1",
        "'only_expected_tables_changed' (critical) failed: 6 passed, 9 failed, 0 not "
        "measured of 15; needs pass rate >= 0.95",
    ]
    assert onrecord("verify", out).returncode == 0


def test_every_reason_the_policy_writes_is_shown_in_percent() -> None:
    head = "'a >= 1; b' (critical) failed: 19 passed, 1 failed, 5 not measured of 25; "
    cases = {
        "measured pass rate 0.95 (19 of 20) < 0.96": "measured pass rate 95.0% (19 of 20) < 96.0%",
        "coverage 0.8 (20 of 25) < min_coverage 0.9; 3 measured cases < min_cases 20": (
            "coverage 80.0% (20 of 25) < min_coverage 90.0%; 3 measured cases < min_cases 20"
        ),
        "measured pass rate 0.95 (19 of 20) >= 0.95, but the lower bound of its 95% interval "
        "(clustered by case) is 76.4% < min_lower_bound 0.8: the lower bound decided": (
            "measured pass rate 95.0% (19 of 20) ≥ 95.0%, but the lower bound of its 95% "
            "interval (clustered by case) is 76.4% < min_lower_bound 80.0%: the lower bound "
            "decided"
        ),
    }
    for written, shown in cases.items():
        # the check's name, before the counts, is never rewritten
        assert shown_reason(head + written) == head + shown
    assert shown_reason("coverage: 3 episodes >= 1") == "coverage: 3 episodes >= 1"
