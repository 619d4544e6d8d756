"""Tables printed in ASCII keep their columns. Under ``PYTHONIOENCODING=ascii`` the
symbols were substituted as the text was written, after rich had laid the table out:
a threshold ``>= 100.0%`` (one character, ``≥``, when measured) stuck out of its
column by one, and each reason with ``≥`` in it too. Real ``onrecord`` processes on a
real remittance run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_ascii_terminal_round44 import _onrecord

POLICY = (
    '[[requirements]]\ncheck = "expected_changes"\nmin_pass_rate = 1.0\n'
    '[[requirements]]\ncheck = "balances_reconcile"\nmin_pass_rate = 0.5\n'
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ascii45") / "run"
    args = ("run", "remittance", "--agent", "double_poster", "--repeats", "1", "--out", out)
    done = _onrecord("utf-8", *args, "--no-progress")
    assert done.returncode == 1, done.stderr  # rejected: 3 of 33 episodes fail
    (out.parent / "policy.toml").write_text(POLICY)
    return out


def _tables(text: str, edges: str) -> list[list[str]]:
    """Each table's lines, from its top border to its bottom one."""
    tables: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        framed = bool(line) and line[0] in edges
        if framed and not inside:
            tables.append([])
        if framed:
            tables[-1].append(line)
        inside = framed
    return tables


def _commands(run: Path) -> list[tuple[int, tuple[str, ...]]]:
    """Each command with its exit code: the gate rejects, ``show`` shows."""
    return [
        (1, ("gate", str(run), "--policy", str(run.parent / "policy.toml"))),
        (0, ("show", str(run), "--no-progress")),
    ]


@pytest.mark.parametrize("index", [0, 1], ids=["gate", "show"])
def test_an_ascii_table_keeps_its_columns(run: Path, index: int) -> None:
    code, args = _commands(run)[index]
    ascii_done = _onrecord("ascii", *args)
    utf8_done = _onrecord("utf-8", *args)
    assert ascii_done.returncode == utf8_done.returncode == code, ascii_done.stderr
    assert "\u2265 100.0%" in utf8_done.stdout  # what is being replaced, as before
    assert ">= 100.0%" in ascii_done.stdout
    ascii_tables, utf8_tables = _tables(ascii_done.stdout, "+|"), _tables(utf8_done.stdout, "┏┃┡│└")
    assert ascii_tables
    assert len(ascii_tables) == len(utf8_tables)
    for table in (*ascii_tables, *utf8_tables):
        # Before: the threshold's and the reasons' rows one column wider than the border.
        assert {len(line) for line in table} == {len(table[0])}, "\n".join(table)
    assert not [line for line in ascii_done.stdout.splitlines() if "\\u" in line]


def test_utf8_output_is_unchanged(run: Path) -> None:
    """Under UTF-8 nothing is substituted: the symbols are printed as they are."""
    for _, args in _commands(run):
        done = _onrecord("utf-8", *args)
        assert ">=" not in done.stdout
        assert "\u2265" in done.stdout
        assert "\u2013" in done.stdout  # an interval's en dash
