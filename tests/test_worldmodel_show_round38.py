"""Round 38: a world model's report and a decision on it read at 80, 100 and 120
columns. Its 34-character check names ("dynamics/pole_angular_velocity/h16") left the
narrow table cutting the names onto two lines, each interval over two lines and each
result over four; the decision's "(12 of 31)" and intervals wrapped likewise. Long
names now go on a line of their own (stacked), their numbers whole on the line below.

A real ``worldmodel run --smoke``, the real commands in subprocesses; expected names and
intervals are read from the saved report, not from the code under test."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from tests.cli_process import onrecord

_INTERVAL = re.compile(r"\d+\.\d% – \d+\.\d%")
_COUNT = re.compile(r"\(\d+ of \d+\)")
_POLICY = """name = "wm"
[[requirements]]
check = "dynamics/cart_position/h16"
min_pass_rate = 0.9
min_cases = 20
[[requirements]]
check = "dynamics/pole_angular_velocity/h32"
min_pass_rate = 0.95
critical = false
min_coverage = 0.5
min_lower_bound = 0.8
[[requirements]]
check = "dynamics/pole_angle/h1"
min_pass_rate = 0.9
"""


@pytest.fixture
def report(smoke_world_model_run: Path) -> Path:
    """The shared smoke run's report (tests/conftest.py): these tests only read it."""
    return smoke_world_model_run / "reports" / "persistence_v1.report.json"


def _saved(report: Path) -> tuple[list[str], int]:
    """The report's check names and how many of its checks measured any result."""
    trials = orjson.loads(report.read_bytes())["trials"]
    results = [r for trial in trials for r in trial["results"]]
    names = sorted({r["name"] for r in results})
    measured = {r["name"] for r in results if r["status"] in ("pass", "fail")}
    return names, len(measured)


def _check_table(text: str) -> str:
    """The report's check table: from after the sha256 line to the interval note."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if "95% intervals are Wilson" in line)
    start = max(i for i, line in enumerate(lines[:end]) if "sha256:" in line)
    return "\n".join(lines[start + 1 : end])


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_show_world_model_report_keeps_names_and_intervals_whole(
    report: Path, columns: int
) -> None:
    done = onrecord("show", report, columns=columns)
    assert done.returncode == 0, done.stderr
    table = _check_table(done.stdout)
    names, measured = _saved(report)
    assert len(names) >= 20  # a real report of long names: the case this is about
    for name in names:  # each name whole on one line (as a word: h1 is no prefix of h16)
        assert re.search(rf"(^|[\s│]){re.escape(name)}(\s|$)", table, re.M), (name, table)
    # every measured check's interval whole on a line, none cut over two
    assert len(_INTERVAL.findall(table)) == measured, table
    assert not re.search(r"\d\.\d% –\s*(│\s*)?$", table, re.M), table
    assert all(len(line) <= columns for line in table.splitlines()), table


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_gate_on_long_names_keeps_counts_and_intervals_whole(
    report: Path, tmp_path: Path, columns: int
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(_POLICY)
    done = onrecord("gate", report, "--policy", policy, columns=columns)
    assert done.returncode == 1, done.stderr  # cart_position/h16 fails its threshold
    top = done.stdout.split("95% intervals are Wilson")[0]
    for name in ("dynamics/cart_position/h16", "dynamics/pole_angular_velocity/h32"):
        assert re.search(rf"(^|[\s│]){re.escape(name)}(\s|$)", top, re.M), (name, top)
    assert len(_INTERVAL.findall(top)) == 3, top  # one per requirement, each whole
    assert len(_COUNT.findall(top)) == 3, top  # "(12 of 31)" never over two lines
    assert "lower bound ≥ 80.0%" in top or columns > 100, top
    assert all(len(line) <= columns for line in top.splitlines()), top


def test_short_names_keep_the_framed_table(report: Path, tmp_path: Path) -> None:
    """A report whose names fit beside their numbers keeps its framed table at 80."""
    done = onrecord("run", "cartpole", "--agent", "balances", "--seeds", "0-2",
                    "--out", tmp_path / "run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = _check_table(onrecord("show", tmp_path / "run", columns=80).stdout)
    assert table.lstrip().startswith("┏"), table
