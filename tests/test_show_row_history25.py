"""``onrecord show RUN --episode`` of a tool-world episode prints the rows it really
wrote: each row change of the audit history at the steps shown, and what stayed changed
at the end, naming the tables changed and put back. Real remittance runs, the real
command; the expected rows are read from the run's saved evidence."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool
from onrecord.runner import RunStore, plan_run, start_run
from tests.cli_process import onrecord


def _run(path: Path, agent: str) -> Path:
    plan = plan_run(
        "remittance", agent, seeds=[0], environment_config={"size": 30, "kinds": ["denial"]}
    )
    start_run(path, plan)
    return path


@pytest.fixture(scope="module")
def restored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An agent that writes a claim off and puts it back, then does the task."""
    return _run(tmp_path_factory.mktemp("history") / "run", "change_and_restore")


def _evidence(run: Path, case: str) -> dict[str, Any]:
    store = RunStore.open(run)
    (record,) = [r for r in store.records() if r.key == (case, 0)]
    evidence: dict[str, Any] = store.saved_episode(record).evidence
    return evidence


def _rows(output: str) -> list[list[str]]:
    """The row-changes table's rows (step, table, change, key, values), lines joined."""
    table = output[output.index("row changes, in order") :]
    rows: list[list[str]] = []
    for line in table.splitlines():
        if not line.startswith("│"):
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if cells[0]:
            rows.append(cells)
        else:  # a wrapped cell continues on the next line
            rows[-1] = [f"{a}{b}" if b else a for a, b in zip(rows[-1], cells, strict=True)]
    return rows


def test_a_change_put_back_shows_in_the_history_and_is_named_at_the_end(restored: Path) -> None:
    evidence = _evidence(restored, "denial-01")
    events = evidence["audit"]["events"]
    assert "claims" not in evidence["diff"]  # the end state alone shows nothing of it
    assert [e["table"] for e in events].count("claims") == 2
    result = onrecord("show", restored, "--episode", "denial-01#0", "--full")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    change = {"insert": "created", "update": "changed", "delete": "deleted"}
    assert [row[:4] for row in rows] == [
        [str(e["step"]), e["table"], change[e["op"]], str(e["key"])] for e in events
    ]
    written_off = [row[4] for row in rows if row[1] == "claims"]
    old, new = events[0]["old"]["status"], events[0]["new"]["status"]
    assert written_off == [
        f"status: {orjson.dumps(old).decode()} → {orjson.dumps(new).decode()}",
        f"status: {orjson.dumps(new).decode()} → {orjson.dumps(old).decode()}",
    ]
    (end,) = [line for line in result.stdout.splitlines() if line.startswith("at the end:")]
    assert evidence["diff"]  # the task's own writes stayed: the loop below checks them
    for table, change_of in evidence["diff"].items():
        assert f"{table} {len(change_of['created'])} created" in end
    assert end.endswith("changed during the episode and put back by its end: claims")


def test_steps_select_the_row_changes_too(restored: Path) -> None:
    events = _evidence(restored, "denial-02")["audit"]["events"]
    step = events[0]["step"]
    result = onrecord("show", restored, "--episode", "denial-02#0", "--steps", str(step))
    assert result.returncode == 0, result.stderr
    assert {row[0] for row in _rows(result.stdout)} == {str(step)}
    left = sum(e["step"] != step for e in events)
    assert left > 0
    assert f"{left} row change(s) made at steps not shown left out" in result.stdout


def test_an_episode_that_wrote_nothing_says_so(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "claims_done_without_writing")
    assert _evidence(run, "denial-01")["audit"]["events"] == []
    result = onrecord("show", run, "--episode", "denial-01#0")
    assert result.returncode == 0, result.stderr
    assert "row changes: none (no call wrote a row)" in result.stdout
    assert re.search(r"^at the end:", result.stdout, re.M) is None


@tool(writes=True, example={"status": "written_off"})
def set_status(ctx: ToolContext, status: str) -> None:
    """Set the claim's status."""
    ctx.execute("UPDATE claims SET status = ? WHERE id = 1", (status,))


def test_a_saved_tool_episode_shows_its_row_changes(tmp_path: Path) -> None:
    snapshot = Snapshot.build(
        "history25",
        "CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL);",
        lambda conn, _rng: conn.execute("INSERT INTO claims VALUES (1, 'open')"),
        seed=1,
    )
    with ToolWorld(snapshot, [set_status]) as world:
        world.reset(seed=1)
        world.call("set_status", {"status": "written_off"})
        world.call("set_status", {"status": "open"})
        saved = save_episode(world, tmp_path / "episode")
    assert not any(any(change.values()) for change in saved.diff.values())  # put back
    result = onrecord("show", tmp_path / "episode")
    assert result.returncode == 0, result.stderr
    assert [row[:4] for row in _rows(result.stdout)] == [
        ["1", "claims", "changed", "1"],
        ["2", "claims", "changed", "1"],
    ]
    assert "put back by its end: claims" in result.stdout
