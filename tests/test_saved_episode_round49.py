"""``onrecord gate`` and ``onrecord compare`` of a saved tool-world episode (``save_episode``)
say what reads one and how to gate or compare it, as ``onrecord report`` does.

Before: ``gate DIR`` said the directory was "not a regular file" (records are regular
files), ``compare DIR`` "not a run directory (it has no run.json)", and of the episode's
``manifest.json`` both that its schema was not a report's."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.cli.main import main
from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    full_policy,
)
from onrecord.envkit import ToolEpisode, evaluate_tool_episodes
from tests import test_saved_episode_round48 as round48

TASK = round48.TASK
episode = round48.episode  # the fixture: one careful full-01 episode per module


def _refusal(capsys: pytest.CaptureFixture[str], *args: str | Path, out: str = "") -> str:
    code = main([str(arg) for arg in args])
    printed, err = capsys.readouterr()
    assert (code, printed) == (3, out)
    return " ".join(err.split())  # the error wraps to the terminal


def _names_what_reads_it(message: str, episode: Path) -> None:
    assert f"{episode} is a saved tool-world episode (save_episode), not a run" in message
    assert "a saved episode holds no grading" in message
    assert f"`onrecord show {episode}`" in message
    assert f"`onrecord check NAME... --episode {episode}`" in message
    assert "`onrecord run remittance --agent AGENT --tasks full-01 --out RUN`" in message


@pytest.mark.parametrize("given", ["", "manifest.json"])
def test_gate_of_a_saved_episode_names_what_reads_it(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, given: str
) -> None:
    policy = full_policy().save_json(tmp_path / "policy.json")
    message = _refusal(capsys, "gate", episode / given, "--policy", policy)
    _names_what_reads_it(message, episode)
    assert "`onrecord gate` decides on a report" in message
    assert message.endswith("then `onrecord gate RUN --policy POLICY`")


@pytest.mark.parametrize("given", ["", "manifest.json", "actions.jsonl"])
@pytest.mark.parametrize("side", ["A", "B"])
def test_compare_of_a_saved_episode_names_what_reads_it(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, given: str, side: str
) -> None:
    # A report that loads, so that B is read too.
    graded = evaluate_tool_episodes([ToolEpisode.load(episode)], REMITTANCE_CHECKS)
    report = graded.save_json(tmp_path / "report.json")
    pair = (episode / given, report) if side == "A" else (report, episode / given)
    message = _refusal(capsys, "compare", *pair)
    _names_what_reads_it(message, episode)
    assert "`onrecord compare` pairs the trials of two reports" in message
    assert "then `onrecord compare RUN OTHER_RUN`" in message


def test_compare_html_page_of_a_saved_episode_says_the_same(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "compare.html"
    message = _refusal(capsys, "compare", episode, episode, "--html", page, out=f"wrote {page}\n")
    assert "`onrecord compare` pairs the trials of two reports" in message
    # The page of a refused comparison carries the reason (HTML-escaped).
    assert "`onrecord compare` pairs the trials of two reports (two runs&#x27;" in (
        page.read_text()
    )
