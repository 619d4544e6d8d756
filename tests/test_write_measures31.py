"""Measures counted from the audit history: ``row_writes`` and ``rows_put_back``.

``rows_changed`` counts the end-state diff, so an agent that changes a row and restores
it looks as tidy as one that never touched it; these measures tell them apart. Runs made
before they existed keep working (verify, compare among themselves and with new runs),
and a regrade of such a run adds them from its saved audit history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool, tool_episode_trial

from .runner.conftest import ROOT, onrecord

SCHEMA = """
CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL, amount REAL NOT NULL,
                     extra);
CREATE TABLE tags (claim_id INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (claim_id, tag));
"""


def _populate(conn: Any, rng: Any) -> None:
    conn.executemany(
        "INSERT INTO claims VALUES (?, 'open', ?, 10.0)", [(i, 10.0 * i) for i in range(1, 6)]
    )


@tool(writes=True, example={"claim_id": 1, "status": "closed"})
def wm_set_status(ctx: ToolContext, claim_id: int, status: str) -> None:
    """Set a claim's status."""
    ctx.execute("UPDATE claims SET status = ? WHERE id = ?", (status, claim_id))


@tool(writes=True, example={"status": "closed"})
def wm_set_every_status(ctx: ToolContext, status: str) -> None:
    """Set every claim's status in one statement."""
    ctx.execute("UPDATE claims SET status = ?", (status,))


@tool(writes=True, example={"claim_id": 1, "tag": "late"})
def wm_tag(ctx: ToolContext, claim_id: int, tag: str) -> None:
    """Tag a claim."""
    ctx.execute("INSERT INTO tags VALUES (?, ?)", (claim_id, tag))


@tool(writes=True, example={"claim_id": 1, "tag": "late"})
def wm_untag(ctx: ToolContext, claim_id: int, tag: str) -> None:
    """Remove a claim's tag."""
    ctx.execute("DELETE FROM tags WHERE claim_id = ? AND tag = ?", (claim_id, tag))


@tool(writes=True, example={"claim_id": 1, "value": 5})
def wm_set_extra(ctx: ToolContext, claim_id: int, value: int) -> None:
    """Set a claim's untyped column, stored as given (an INTEGER 10 is not the REAL 10.0)."""
    ctx.execute("UPDATE claims SET extra = ? WHERE id = ?", (value, claim_id))


TOOLS = [wm_set_status, wm_set_every_status, wm_tag, wm_untag, wm_set_extra]
CASE = EvalCase("tidy up claims", {}, case_id="tidy")


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("write-measures", SCHEMA, _populate, seed=1)


def _measures(snap: Snapshot, tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    with ToolWorld(snap, TOOLS) as world:
        world.reset(case=CASE, seed=0, run_id="wm")
        for name, arguments in calls:
            assert world.call(name, arguments)["status"] == "ok"
        episode = save_episode(world, tmp_path / "episode")
    return tool_episode_trial(episode, []).measures


def test_a_row_changed_and_restored_is_written_twice_and_put_back(
    snap: Snapshot, tmp_path: Path
) -> None:
    measures = _measures(
        snap,
        tmp_path,
        [
            ("wm_set_status", {"claim_id": 1, "status": "written_off"}),
            ("wm_set_status", {"claim_id": 1, "status": "open"}),
            ("wm_tag", {"claim_id": 2, "tag": "temp"}),
            ("wm_untag", {"claim_id": 2, "tag": "temp"}),
            ("wm_set_status", {"claim_id": 3, "status": "closed"}),
        ],
    )
    # The end state differs from the start only in claim 3, as rows_changed says; the
    # history holds five writes, two of them to rows that ended as they started (claim 1
    # restored, the tag created then deleted).
    assert measures == {
        "tool_calls": 5.0,
        "rejected_calls": 0.0,
        "rows_changed": 1.0,
        "row_writes": 5.0,
        "rows_put_back": 2.0,
    }


def test_a_write_that_changes_nothing_counts_as_a_write_but_puts_nothing_back(
    snap: Snapshot, tmp_path: Path
) -> None:
    # One statement over five rows is five row writes; a no-op update never left the
    # start state, so it is no row "put back".
    measures = _measures(snap, tmp_path, [("wm_set_every_status", {"status": "open"})])
    assert (measures["rows_changed"], measures["row_writes"], measures["rows_put_back"]) == (
        0.0,
        5.0,
        0.0,
    )


def test_a_value_back_in_another_storage_class_is_not_put_back(
    snap: Snapshot, tmp_path: Path
) -> None:
    # 10.0 (REAL) -> 7 -> 10 (INTEGER): the diff counts the row as changed (storage
    # class differs), so it must not also count as put back.
    measures = _measures(
        snap,
        tmp_path,
        [
            ("wm_set_extra", {"claim_id": 1, "value": 7}),
            ("wm_set_extra", {"claim_id": 1, "value": 10}),
        ],
    )
    assert (measures["rows_changed"], measures["row_writes"], measures["rows_put_back"]) == (
        1.0,
        2.0,
        0.0,
    )


DENIALS = "denial-01,denial-02,full-01"


def _run(run_dir: Path, agent: str, *, old: bool = False) -> None:
    args = ["run", "remittance", "-a", agent, "--tasks", DENIALS, "--seeds", "0",
            "--executor", "inprocess", "--out", str(run_dir)]  # fmt: skip
    if not old:
        result = onrecord(*args)
    else:
        # A run as onrecord made it before these measures: the same CLI with them off.
        code = (
            "import sys, onrecord.envkit.evaluate as e\n"
            "e.write_measures = lambda events, tables: {}\n"
            "from onrecord.cli.main import main\n"
            "sys.exit(main(sys.argv[1:]))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    # careful is accepted; change_and_restore is rejected on the denials it writes off.
    assert result.returncode == {"careful": 0, "change_and_restore": 1}[agent], result.stderr


def _compared(a: Path, b: Path) -> dict[str, dict[str, Any]]:
    result = onrecord("compare", str(a), str(b), "--json", "-")
    assert result.returncode == 0, result.stderr
    return {m["name"]: m for m in json.loads(result.stdout)["measures"]}


def _trial_measures(report: Path) -> list[set[str]]:
    return [set(t["measures"]) for t in json.loads(report.read_text())["trials"]]


def test_compare_tells_change_and_restore_from_careful(tmp_path: Path) -> None:
    _run(tmp_path / "careful", "careful")
    _run(tmp_path / "restore", "change_and_restore")
    measures = _compared(tmp_path / "careful", tmp_path / "restore")
    # Same end state on every task: rows_changed cannot tell the agents apart.
    assert measures["rows_changed"]["mean_difference"] == 0
    # The two denials each write a claim off and back: two more writes, one row put back.
    assert measures["row_writes"]["mean_difference"] == pytest.approx(4 / 3)
    assert (measures["rows_put_back"]["mean_a"], measures["rows_put_back"]["mean_b"]) == (
        0,
        pytest.approx(2 / 3),
    )


def test_runs_made_before_the_measures_keep_working_and_regrade_adds_them(
    tmp_path: Path,
) -> None:
    old, old_too, new = tmp_path / "old", tmp_path / "old_too", tmp_path / "new"
    _run(old, "careful", old=True)
    _run(old_too, "change_and_restore", old=True)
    _run(new, "change_and_restore")
    assert all("row_writes" not in names for names in _trial_measures(old / "report.json"))
    assert onrecord("verify", str(old)).returncode == 0
    # Measures are not in a report's lock: old and new runs stay comparable, on the
    # measures both have.
    assert set(_compared(old, old_too)) == {"rejected_calls", "rows_changed", "tool_calls"}
    assert set(_compared(old, new)) == {"rejected_calls", "rows_changed", "tool_calls"}
    # ... and say which they left out, and how to add them (the table said nothing).
    said = onrecord("compare", str(old), str(new), "--markdown", str(tmp_path / "summary.md"),
                    "--html", str(tmp_path / "compare.html"))  # fmt: skip
    assert said.returncode == 0, said.stderr
    note = "only in B: row_writes, rows_put_back — not compared"
    assert note in " ".join(said.stdout.split()), said.stdout
    assert "onrecord regrade RUN" in said.stdout
    assert note.replace("_", "\\_") in (tmp_path / "summary.md").read_text()  # as Markdown
    page = (tmp_path / "compare.html").read_text()
    assert 'id="one-sided-measures"' in page
    assert note in page
    quiet = onrecord("compare", str(old), str(old_too))
    assert quiet.returncode == 0, quiet.stderr
    assert "not compared" not in quiet.stdout
    # A regrade re-grades the saved evidence, audit history included: the measures appear.
    regraded = onrecord("regrade", str(old), "--name", "measures")
    assert regraded.returncode == 0, regraded.stderr
    report = old / "regrades" / "measures" / "report.json"
    assert all({"row_writes", "rows_put_back"} <= names for names in _trial_measures(report))
    assert onrecord("verify", str(old)).returncode == 0
    assert {"row_writes", "rows_put_back"} <= set(_compared(old / "regrades" / "measures", new))


def test_the_docs_name_every_measure_of_a_tool_world_trial(snap: Snapshot, tmp_path: Path) -> None:
    documented = (ROOT / "docs" / "envkit.md").read_text()
    names = _measures(snap, tmp_path, [])
    assert {"row_writes", "rows_put_back", "rows_changed"} <= set(names)
    for name in names:
        assert f"`{name}`" in documented, name
