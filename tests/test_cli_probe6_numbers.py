"""Numbers near 0 and 1 in ``show``, ``gate`` and its JUnit and Markdown outputs, run as
a real process: a rate, coverage, interval or threshold is never rounded into a
different fact (one decimal printed 2999 of 3000 as ``100.0%`` beside its failure, and a
requirement of 0.9995 as ``≥ 100.0%`` beside the ``99.9%`` that met it)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._numbers import rate_percent, threshold_percent
from tests.cli_process import onrecord
from tests.core.test_ci_outputs import make_report

NEAR = ["pass"] * 2999 + ["fail"]  # 99.97 %
COVERED = ["pass"] * 299 + ["not_measured"] + ["pass"] * 2700  # coverage 99.97 %


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("near")
    report = make_report({"near": NEAR, "covered": COVERED}).save_json(folder / "report.json")
    policy = AcceptancePolicy(
        (
            CheckRequirement("near", min_pass_rate=0.9995),
            CheckRequirement("covered", min_coverage=0.999),
        ),
        name="release",
    ).save_json(folder / "policy.json")
    return report, policy


def _row(output: str, name: str) -> str:
    (line,) = [line for line in output.splitlines() if re.match(rf"\W*{name}\b", line)]
    return line


def test_show_of_a_report_never_rounds_a_failure_away(files: tuple[Path, Path]) -> None:
    result = onrecord("show", files[0])
    assert result.returncode == 0, result.stderr
    near, covered = _row(result.stdout, "near"), _row(result.stdout, "covered")
    assert "99.97%" in near
    assert "100.0%" not in near
    assert "1.00]" not in near
    assert "99.97%" in covered  # coverage: one result of 3000 unmeasured, not "100%"
    assert "k=1: 1.000" not in result.stdout


def test_gate_shows_the_threshold_the_rate_was_held_to(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    result = onrecord(
        "gate", files[0], "--policy", files[1], "--junit-xml", junit, "--markdown", summary
    )
    assert result.returncode == 0, result.stderr
    for text in (_row(result.stdout, "near"), _row(summary.read_text(), r"\| near")):
        assert "99.97% (2999 of 3000)" in text
        assert "≥ 99.95%" in text
        assert "100.0%" not in text
    assert "coverage ≥ 99.9%" in _row(result.stdout, "covered")
    (case,) = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "near"]
    details = case.findtext("system-out") or ""
    assert "threshold: ≥ 99.95%" in details
    assert "99.97% (2999 of 3000)" in details
    assert "100.0%" not in details


@pytest.mark.parametrize(
    ("rate", "need", "shown"),
    [(0.94996, 0.95, "94.996%"), (0.95, 0.95, "95.0%"), (0.9996, 0.9995, "99.96%")],
)
def test_a_rate_beside_its_threshold_reads_on_the_right_side(
    rate: float, need: float, shown: str
) -> None:
    assert rate_percent(rate, need) == shown
    assert (float(shown[:-1]) >= float(threshold_percent(need)[:-1])) == (rate >= need)
