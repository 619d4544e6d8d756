"""World-model horizons in natural order: `onrecord compare` (its table, its `--json`),
`onrecord show REPORT` and the report's summary list h1, h4, h8, h16, h32, h60 (before,
as text: h1, h16, h32, h4, h60, h8)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from onrecord import compare_reports
from onrecord._natural import natural_key
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord

HORIZONS = [1, 4, 8, 16, 32, 60]
NAMES = [f"dynamics/pole_angle/h{h}" for h in HORIZONS] + ["dynamics/x/h2"]


def _report(passing: bool) -> EvaluationReport:
    return EvaluationReport.from_trials(
        [
            Trial(
                {"case_id": case, "content_digest": "d" * 64},
                0,
                {"kind": "forecast"},
                tuple(
                    CheckResult(name, "v1", "pass" if passing or case == "task-3" else "fail", "")
                    for name in NAMES
                ),
                measures={f"h{h}/error": float(h) for h in HORIZONS},
                settings={"environment_id": "CartPole-v1", "seed": 0},
            )
            for case in ("task-10", "task-2", "task-3", "task-1")
        ]
    )


def test_compare_lists_horizons_and_tasks_in_natural_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.report.json", tmp_path / "b.report.json"
    _report(True).save_json(a)
    _report(False).save_json(b)
    done = onrecord("compare", str(a), str(b), "--json", str(tmp_path / "c.json"))
    assert done.returncode == 0, done.stderr
    shown = re.findall(r"dynamics/pole_angle/h(\d+) ", done.stdout.split("┃ measure")[0])
    table = [int(h) for h in dict.fromkeys(shown)]
    assert table == HORIZONS  # before: [1, 16, 32, 4, 60, 8]
    measures = re.findall(r"│ h(\d+)/error", done.stdout)
    assert [int(h) for h in measures] == HORIZONS
    pairs = re.findall(r"dynamics/pole_angle/h1: (task-\d+)#0", done.stdout)
    assert pairs == ["task-10", "task-2", "task-1"]  # the reports' own order, as before
    saved = orjson.loads((tmp_path / "c.json").read_bytes())
    assert [c["name"] for c in saved["checks"]] == sorted(NAMES, key=natural_key)
    assert [c["name"] for c in saved["checks"]][:6] == NAMES[:6]
    assert [m["name"] for m in saved["measures"]] == [f"h{h}/error" for h in HORIZONS]


def test_show_and_the_summary_list_horizons_in_natural_order(tmp_path: Path) -> None:
    report = _report(True)
    assert [c.name for c in report.summary().checks][:6] == NAMES[:6]
    path = tmp_path / "r.report.json"
    report.save_json(path)
    done = onrecord("show", str(path))
    assert done.returncode == 0, done.stderr
    assert [int(h) for h in re.findall(r"dynamics/pole_angle/h(\d+) ", done.stdout)] == HORIZONS


def test_the_library_comparison_is_in_natural_order() -> None:
    comparison = compare_reports(_report(True), _report(False), resamples=10)
    assert [c.name for c in comparison.checks] == [*NAMES[:6], "dynamics/x/h2"]
    assert [p.case_id for p in comparison.checks[0].discordant] == ["task-10", "task-2", "task-1"]


def test_natural_key_is_a_total_order() -> None:
    names = ["h10", "h9", "h09", "h", "", "a1b2", "a1b10", "a01b2", "10", "9x", "x"]
    ordered = sorted(names, key=natural_key)
    assert ordered == ["", "9x", "10", "a1b2", "a01b2", "a1b10", "h", "h9", "h09", "h10", "x"]
    assert len({natural_key(name) for name in names}) == len(names)  # no ties: total
