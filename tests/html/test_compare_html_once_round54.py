"""``onrecord compare A B --html PAGE`` reads A and B once and compares them once.

Before: the page was built by ``write_comparison(A, B)``, which loaded and verified both
sources again and ran the paired bootstrap again: twice the time on large runs, and a
run rewritten between the two reads gave a page that was not the comparison printed
(or saved with ``--json``). Real FrozenLake reports, compared in-process so that a
second read can be caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.cli.main import main
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.html import _compare as html_compare
from onrecord.html import comparison_data, render_comparison_page


def _report(folder: Path, name: str, agent: str) -> Path:
    task = frozenlake_task()
    episodes = [run_gym_task(task, FROZENLAKE_AGENTS[agent](), seed=seed) for seed in range(4)]
    folder.mkdir(parents=True, exist_ok=True)
    return evaluate_episodes(episodes, list(task.checks)).save_json(folder / name)


def _no_second_read(*_: Any, **__: Any) -> Any:
    raise AssertionError("the page read or compared a source a second time")


@pytest.mark.parametrize("second", ["walks_to_goal", "walks_into_hole"])
def test_the_page_is_the_comparison_printed_from_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: str
) -> None:
    a = _report(tmp_path / "v1", "report.json", "walks_to_goal")
    b = _report(tmp_path / "v2", "report.json", second)
    expected = render_comparison_page(comparison_data(a, b))
    monkeypatch.setattr(html_compare, "load_source", _no_second_read)
    monkeypatch.setattr(html_compare, "compare_sources", _no_second_read)
    page, saved = tmp_path / "c.html", tmp_path / "c.json"
    assert main(["compare", str(a), str(b), "--html", str(page), "--json", str(saved)]) == 0
    assert page.read_text() == expected
    # The saved comparison beside it was written from the same read, and verifies.
    assert orjson.loads(saved.read_bytes())["schema"].startswith("onrecord.comparison")
    monkeypatch.undo()
    assert main(["verify", str(saved)]) == 0


def test_a_refused_comparison_page_is_written_from_the_same_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _report(tmp_path / "v1", "report.json", "walks_to_goal")
    task = frozenlake_task()
    fewer = [run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=0)]
    b = evaluate_episodes(fewer, list(task.checks)).save_json(tmp_path / "fewer.json")
    expected = render_comparison_page(comparison_data(a, b))
    assert "repeats or seeds differ" in expected
    monkeypatch.setattr(html_compare, "load_source", _no_second_read)
    monkeypatch.setattr(html_compare, "compare_sources", _no_second_read)
    page = tmp_path / "refused.html"
    assert main(["compare", str(a), str(b), "--html", str(page)]) == 3
    assert page.read_text() == expected
