"""Hostile and large inputs to ``onrecord show``'s row history and its list of the
episodes not passed: an infinite REAL, one call writing many rows, a case id starting
with ``-``, and an episode incomplete though every check passed. Real worlds and runs,
the real command; what must be shown is read from the saved evidence and report.json."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord import EvalCase
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    changed,
    no_other_changes,
    save_episode,
    tool,
)
from onrecord.runner import AgentContext, ToolWorldProvider, agent_factory, plan_run, start_run
from tests.cli_process import line_after, onrecord
from tests.test_show_row_history25 import _rows

SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, r REAL);"


def populate(conn: Any, _rng: Any) -> None:
    conn.execute("INSERT INTO t VALUES (1, 'a', 1.0)")


@tool(writes=True, example={})
def overflow(ctx: ToolContext) -> None:
    """Set row 1's REAL to infinity."""
    ctx.execute("UPDATE t SET r = ? WHERE id = 1", (math.inf,))


@tool(writes=True, example={"rows": 1})
def bulk(ctx: ToolContext, rows: int) -> None:
    """Insert ``rows`` rows in one statement."""
    ctx.execute(
        "WITH RECURSIVE s(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM s WHERE i <= ?) "
        "INSERT INTO t (id, v) SELECT i, 'v' || i FROM s",
        (rows,),
    )


@tool(writes=True, example={})
def set_b(ctx: ToolContext) -> None:
    """Do the task: row 1's v becomes 'b'."""
    ctx.execute("UPDATE t SET v = 'b' WHERE id = 1")


@tool
def look(ctx: ToolContext) -> Any:
    """Read row 1."""
    return ctx.one("SELECT v FROM t WHERE id = 1")


def _episode(path: Path, *calls: tuple[str, dict[str, Any]]) -> ToolEpisode:
    snapshot = Snapshot.build("probe27", SCHEMA, populate, seed=1)
    with ToolWorld(snapshot, [overflow, bulk]) as world:
        world.reset(seed=1)
        for name, arguments in calls:
            assert world.call(name, arguments)["status"] == "ok"
        return save_episode(world, path)


def test_an_infinite_real_is_not_shown_as_null(tmp_path: Path) -> None:
    episode = _episode(tmp_path / "episode", ("overflow", {}))
    (event,) = episode.audit
    assert event["new"]["r"] == math.inf  # the database holds an infinity, not NULL
    result = onrecord("show", tmp_path / "episode", "--full")
    assert result.returncode == 0, result.stderr
    (row,) = _rows(result.stdout)
    assert row[4] == 'r: 1.0 → {"$real":"Infinity"}'


def test_one_call_writing_many_rows_prints_a_bounded_table_and_how_to_see_all(
    tmp_path: Path,
) -> None:
    episode = _episode(tmp_path / "episode", ("bulk", {"rows": 150}))
    written = len(episode.audit)
    assert written == 150
    result = onrecord("show", tmp_path / "episode")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert len(rows) < written  # every one of 10,000 rows was printed
    command = line_after(
        f"{written - len(rows)} more row change(s) at these steps left out; every one: ",
        result.stdout,
    )
    everything = onrecord(*shlex.split(command)[1:])  # the hint works as printed
    assert everything.returncode == 0, everything.stderr
    assert [row[3] for row in _rows(everything.stdout)] == [
        str(event["key"]) for event in episode.audit
    ]


CASES = ["-dash", "it's #2"]


@agent_factory
def never_finishes(context: AgentContext) -> Any:
    """Does the task, then only looks until the steps run out: never calls finish."""
    calls = iter([("set_b", {})])

    def act(observation: Mapping[str, Any]) -> dict[str, Any]:
        name, arguments = next(calls, ("look", {}))
        return {"tool": name, "arguments": arguments}

    return act


def world() -> Any:
    """``module:factory``: every case's rules hold once row 1's v is 'b'."""
    rules = [changed("t", where={"id": 1}, to={"v": "b"}), no_other_changes()]
    return ToolWorldProvider(
        Snapshot.build("probe27", SCHEMA, populate),
        [set_b, look],
        environment_id="probe27/v1",
        tasks=[EvalCase({"n": n}, {"rules": rules}, case_id=c) for n, c in enumerate(CASES)],
        agents={"never_finishes": never_finishes},
        max_steps=3,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe27") / "run"
    start_run(path, plan_run(f"{__name__}:world", "never_finishes", seeds=[0]))
    return path


def test_an_episode_incomplete_though_its_checks_passed_says_why(run: Path) -> None:
    trials = orjson.loads((run / "report.json").read_bytes())["trials"]
    assert [t["case"]["case_id"] for t in trials] == CASES
    for trial in trials:  # every check passed; the episode is incomplete all the same
        assert {r["status"] for r in trial["results"]} == {"pass"}
        assert trial["coverage_issues"]
    result = onrecord("show", run)
    assert result.returncode == 0, result.stderr
    listed = [line for line in result.stdout.splitlines() if "│ incomplete │" in line]
    assert len(listed) == len(trials)
    for line, trial in zip(listed, trials, strict=True):  # the cell was empty
        assert f"coverage: {trial['coverage_issues'][0][:30]}" in line, result.stdout


def test_the_see_one_hint_works_for_a_case_id_starting_with_a_dash(run: Path) -> None:
    result = onrecord("show", run)
    assert result.returncode == 0, result.stderr
    command = shlex.split(line_after("see one: ", result.stdout))
    assert command[:3] == ["onrecord", "show", str(run)]
    assert command[3:] in (["--episode", "-dash#0"], ["--episode=-dash#0"])
    shown = onrecord(*command[1:])  # the hint works as printed: it was refused, exit 3
    assert shown.returncode == 0, shown.stderr
    assert "episode -dash#0" in shown.stdout


@pytest.mark.parametrize("backslashes", [1, 2, 3, 4])
def test_a_value_cut_after_backslashes_is_shown_as_written(backslashes: int) -> None:
    from io import StringIO

    from rich.console import Console

    from onrecord.cli._episode_view import Cells
    from onrecord.cli._render import _table

    value = "x" * (80 - backslashes) + "\\" * backslashes + "y" * 50  # cut after the "\"s
    table = _table("value")
    cells = Cells(full=False)
    table.add_row(cells(value, 80))
    out = StringIO()
    Console(file=out, width=200).print(table)  # before: MarkupError at 3 backslashes
    assert cells.shortened == 1
    shown = out.getvalue()
    # Every backslash of the cut, then its length (at 2 and 4 half of them were lost).
    assert "x" * (80 - backslashes) + "\\" * backslashes + "… (130 characters)" in shown
