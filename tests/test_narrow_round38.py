"""`gate` and `compare` at 100, 80 and 40 columns: a threshold's parts, a reason's
counts, a comparison's header, discordant pairs and bootstrap intervals stay whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_process import onrecord

POLICY = """\
name = "release"
[[requirements]]
check = "no_duplicate_allocation"
min_pass_rate = 0.95
min_cases = 5
[[requirements]]
check = "expected_changes"
min_pass_rate = 0.95
min_cases = 5
"""


@pytest.fixture(scope="module")
def _policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    policy = tmp_path_factory.mktemp("narrow38") / "policy.toml"
    policy.write_text(POLICY)
    return policy


@pytest.fixture
def runs(_policy: Path, remittance_pair_runs: tuple[Path, Path]) -> tuple[Path, Path, Path]:
    """A policy, a run of ``double_poster`` and one of ``careful`` (5 seeds, 3 repeats:
    the session's read-only runs, tests/conftest.py)."""
    careful, double = remittance_pair_runs
    return _policy, double, careful


def test_gate_at_100_columns_puts_a_thresholds_parts_one_a_line(
    runs: tuple[Path, Path, Path],
) -> None:
    policy, double, _ = runs
    text = onrecord("gate", double, "--policy", policy, columns=100).stdout
    # Wrapped between words it read "≥ 95.0%, ≥" over "5 cases".
    assert not re.search(r"≥\s*│", text), text
    assert re.search(r"│ ≥ 95\.0%\s*│", text), text
    assert re.search(r"│ ≥ 5 cases\s*│", text), text


def test_gate_at_80_columns_keeps_a_reasons_counts_with_their_words(
    runs: tuple[Path, Path, Path],
) -> None:
    policy, double, _ = runs
    text = onrecord("gate", double, "--policy", policy, columns=80).stdout
    assert "expected_changes\n  duplicate-01#0" in text, text  # the stacked form
    # Wrapped by rich, the reason read "… (duplicate), but 1" over "allocation(s) …".
    assert not any(line.rstrip().endswith("but 1") for line in text.splitlines()), text
    assert "\n    but 1 allocation(s) and 1 adjustment(s) were created\n" in text, text
    assert max(len(line) for line in text.splitlines()) <= 80, text


def test_compare_at_40_columns_keeps_header_pairs_and_intervals_whole(
    runs: tuple[Path, Path, Path],
) -> None:
    _, double, careful = runs
    done = onrecord("compare", double, careful, columns=40)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 40, done.stdout
    # The header: neither "A:" nor "vs  B:" ends a line, each side's label beside it.
    assert not any(line.rstrip().endswith(("A:", "B:")) for line in lines), done.stdout
    assert "  A: double_poster on remittance" in lines, done.stdout
    assert any(line.startswith("  vs  B: careful") for line in lines), done.stdout
    # Each discordant pair indented under its check's name, whole on its line.
    pairs = lines[lines.index("discordant pairs (episode: A→B):") + 1 :]
    pairs = pairs[: next(i for i, line in enumerate(pairs) if line == "measure")]
    assert all(line.startswith("  ") for line in pairs), done.stdout
    assert "    duplicate-01#0: fail→pass" in pairs, done.stdout
    # Every bootstrap interval whole on one line (folded, it read "[-0.4" over "343]").
    brackets = [line for line in lines if "[" in line or "]" in line]
    assert len(brackets) == 5, done.stdout  # one per measure
    assert all(re.search(r"\[[+-][\d.e+-]*, [+-][\d.e+-]*\]", line) for line in brackets)
