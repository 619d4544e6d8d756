"""Split tables: an agent's name is printed literally, and a split table's key count is
checked when it is made."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from onrecord._tables import SplitTable
from onrecord.domains.remittance import (
    SuiteResult,
    ablation_table,
    load_tasks,
    run_demo_suite,
    suite_table,
)


def _render(table: object, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), emoji=False)
    console.print(table)
    return console.export_text()


@pytest.fixture(scope="module")
def suite() -> SuiteResult:
    """The careful agent on one remittance task, once."""
    return run_demo_suite(agents=["careful"], tasks=load_tasks()[:1], repeats=1)


def test_an_agent_name_like_markup_is_printed_literally(suite: SuiteResult) -> None:
    # Before, "[/]" crashed rendering (MarkupError) and "[bold]x" printed "x".
    (outcome,) = suite.outcomes.values()
    suite.outcomes = {"[/]": outcome, "[bold]x": outcome}
    for table in (suite_table(suite), ablation_table(suite)):
        text = _render(table, 160)
        assert "│ [/] " in text, text
        assert "│ [bold]x " in text, text


def test_more_key_columns_than_columns_is_refused_when_made() -> None:
    # Before, it failed only when printed, with an IndexError.
    with pytest.raises(ValueError, match="keys=3"):
        SplitTable("model", "MAE", keys=3, title="t")
