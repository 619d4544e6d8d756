"""``onrecord demo`` counts its remittance episodes with the shared progress
(``onrecord._progress.CountProgress``), one count over every agent's run: in a CI log a
line at the start (before, the log stayed silent until the first agent's run ended), one
as each agent's run ends and one at the end; on a terminal a bar naming the agent and
no plain lines. Real runs of two agents of the demo's eight."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from onrecord.cli import demo
from onrecord.domains.remittance import AGENTS
from onrecord.runner import InProcessExecutor

TWO = ("careful", "skips_notes")
assert set(TWO) <= set(AGENTS)


@pytest.fixture(autouse=True)
def _two_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "AGENTS", TWO)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TERM"):
        monkeypatch.delenv(name, raising=False)


def test_a_ci_log_gets_a_line_at_the_start_one_per_agent_and_one_at_the_end(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    runs = demo._remittance_runs(tmp_path, 1, 1, Console(file=out, width=100))
    assert list(runs) == list(TWO)
    text = out.getvalue()
    assert not {c for c in text if ord(c) < 32 and c != "\n"}, repr(text)
    lines = text.splitlines()
    assert lines[0] == "remittance episodes 0/66 · 0 s", lines
    assert "remittance episodes 33/66: careful done" in lines
    assert "remittance episodes 66/66: skips_notes done" in lines
    assert lines[-1].startswith("remittance episodes 66/66 · "), lines
    assert all(line.startswith("remittance episodes ") for line in lines), lines


def test_a_terminal_gets_a_bar_naming_the_agent_and_no_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process this time: the count is fed the same way, a worker's start-up is slow.
    monkeypatch.setattr(demo, "ProcessPoolExecutor", lambda _workers: InProcessExecutor())
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True)
    demo._remittance_runs(tmp_path, 1, 1, console)
    text = out.getvalue()
    # The bar's last frame, drawn when it stops (then removed: the tables follow).
    assert "remittance episodes · skips_notes" in text, repr(text)
    assert "66/66" in text, repr(text)
    assert " done" not in text, repr(text)
    assert " · 0 s" not in text, repr(text)
