"""The lines around the terminal's tables wrap between phrases: a number stays with its
word, a digest and the outcomes whole, and ``compare`` at 40 columns stacks its checks
rather than cutting rates and intervals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_process import onrecord


@pytest.fixture
def runs(remittance_pair_runs: tuple[Path, Path]) -> tuple[Path, Path]:
    """``careful`` and ``double_poster`` on remittance, 5 seeds, 3 repeats: the session's
    read-only runs (tests/conftest.py)."""
    return remittance_pair_runs


def _lines(stdout: str) -> list[str]:
    return [line.rstrip() for line in stdout.splitlines()]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_report_line_keeps_each_phrase_whole(runs: tuple[Path, Path], columns: int) -> None:
    lines = _lines(onrecord("show", runs[1], columns=columns).stdout)
    start = next(i for i, line in enumerate(lines) if line.startswith("report "))
    block = lines[start : start + 3]
    # The outcomes and the digest each whole on one line, never "outcomes: 450" / "pass".
    outcomes = [line for line in block if "outcomes:" in line]
    assert len(outcomes) == 1, block
    assert re.search(r"outcomes: \d+ pass, \d+ fail, \d+ incomplete", outcomes[0]), block
    assert any(re.search(r"sha256:[0-9a-f]{16}", line) for line in block), block
    assert not any(line.strip() in ("sha256:", "pass,", "case)") for line in block), block
    assert all(len(line) <= columns for line in block)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_interval_note_wraps_between_its_phrases(runs: tuple[Path, Path], columns: int) -> None:
    stdout = onrecord("show", runs[1], columns=columns).stdout
    lines = _lines(stdout)
    start = next(i for i, line in enumerate(lines) if "95% intervals are Wilson" in line)
    end = start + (1 if lines[start].endswith("trials") else 2)
    note = " ".join(line.strip() for line in lines[start:end])
    assert note.endswith("a case's repeats count as one cluster, not as independent trials")
    # Each line of the note ends a phrase: at 100 "cluster," / "not as …" and at 120
    # "trials" were left on a line of their own.
    for line in lines[start:end]:
        assert line.endswith(("case:", "trials")), lines[start:end]
        assert line.startswith("  95%") or line.startswith("  a case's"), lines[start:end]


@pytest.mark.parametrize("command", ["show", "gate"])
def test_reasons_keep_numbers_with_their_words(
    runs: tuple[Path, Path], command: str, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\n[[requirements]]\ncheck = "expected_changes"\n')
    args = ("--policy", str(policy)) if command == "gate" else ()
    lines = _lines(onrecord(command, runs[1], *args, columns=80).stdout)
    reasons = [i for i, line in enumerate(lines) if line.startswith("  - '")]
    assert reasons
    for index in reasons:
        # "0 not measured" over "of 495" at 80 columns; the rest under the dash
        assert not re.search(r"(\d|of|≥)$", lines[index]), lines[index : index + 2]
        assert lines[index + 1].startswith(("    ", "  - ")), lines[index : index + 2]


def test_compare_at_40_columns_stacks_every_number_whole(runs: tuple[Path, Path]) -> None:
    stdout = onrecord("compare", *runs, columns=40).stdout
    lines = _lines(stdout)
    assert all(len(line) <= 40 for line in lines)
    # Every check named whole on a line of its own, every interval whole on its line.
    assert "only_expected_tables_changed" in lines
    intervals = [line for line in lines if re.search(r"\b[AB] \d+\.\d%", line)]
    assert intervals
    for line in intervals:
        assert re.search(r"[AB] \d+\.\d% +[AB] \d+\.\d% – \d+\.\d%$", line.strip()), line
    assert not any(line.rstrip().endswith("–") for line in lines)
