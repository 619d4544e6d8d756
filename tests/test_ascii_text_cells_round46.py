"""Cells built as rich ``Text`` (an evidence key, a value cut to ``… (187 characters)``,
a row change ``0 → -10668``) keep their columns in ASCII too. ``ReadableConsole``
substituted symbols in strings before rich laid a table out, but a Text cell never
passed there: substituted only as written, its row stuck out of the border by a
character per symbol (``…`` became ``...``). Real ``onrecord`` processes on a real
remittance run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.test_ascii_tables_round45 import _tables
from tests.test_ascii_terminal_round44 import ONRECORD, _onrecord

EPISODE = "duplicate-01#0"  # double_poster posts twice: evidence cut, rows changed


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ascii46") / "run"
    args = ("run", "remittance", "--agent", "double_poster", "--repeats", "1", "--out", out)
    done = _onrecord("utf-8", *args, "--no-progress")
    assert done.returncode == 1, done.stderr  # rejected: 3 of 33 episodes fail
    return out


@pytest.mark.parametrize("full", [False, True], ids=["cut", "full"])
def test_an_episode_s_tables_keep_their_columns_in_ascii(run: Path, full: bool) -> None:
    args = ("show", run, "--episode", EPISODE, "--no-progress", *(["--full"] if full else []))
    ascii_done, utf8_done = _onrecord("ascii", *args), _onrecord("utf-8", *args)
    assert ascii_done.returncode == utf8_done.returncode == 0, ascii_done.stderr
    assert "0 \u2192 -10668" in utf8_done.stdout  # the symbols a Text cell holds
    assert "0 -> -10668" in ascii_done.stdout
    ascii_tables, utf8_tables = _tables(ascii_done.stdout, "+|"), _tables(utf8_done.stdout, "┏┃┡│└")
    assert len(ascii_tables) == len(utf8_tables) >= 3
    for table in (*ascii_tables, *utf8_tables):
        # Before: each row holding "…" or "→" in a Text cell wider than the border.
        assert {len(line) for line in table} == {len(table[0])}, "\n".join(table)


def test_a_narrow_ascii_terminal_keeps_the_columns(run: Path) -> None:
    """At 100 columns the evidence and the diff wrap, measured as printed."""
    done = subprocess.run(
        [ONRECORD, "show", str(run), "--episode", EPISODE, "--no-progress"],
        capture_output=True,
        encoding="ascii",
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "100"},
    )
    assert done.returncode == 0, done.stderr
    tables = _tables(done.stdout, "+|")
    assert tables
    for table in tables:
        assert {len(line) for line in table} == {len(table[0])}, "\n".join(table)
