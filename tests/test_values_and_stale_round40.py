"""Round 40: row values on the report page, a stale report read as the run's, and counts.

The page's script parsed the values of the row diff and audit history as JavaScript
numbers: an update from INTEGER 1 to REAL 1.0 (a change the diff counts and `onrecord
show` prints ``1 → 1.0``) read ``1 → 1``, and 9007199254740993 read 9007199254740992.
A real tool world under a real run, its page in headless Chromium.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord import EvalCase
from onrecord.envkit import Snapshot, ToolContext, no_other_changes, tool
from onrecord.runner import (
    AgentContext,
    ToolWorldProvider,
    agent_factory,
    plan_run,
    start_run,
)
from tests.cli_process import onrecord
from tests.test_keys_and_pending_round39 import earlier_grading
from tests.test_show_row_history25 import _rows

BIG = 2**53 + 1
"""An INTEGER JavaScript numbers cannot hold: it read as 2**53 on the page."""
VALUES: list[Any] = [1.0, BIG, 1, None, "null", "1", math.inf, b"\x01"]
"""What ``put`` writes, by index (JSON arguments cannot say 1.0 from 1)."""

SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, v, note TEXT);"
"""``v`` has no type, so no affinity: SQLite keeps each value's storage class."""
START = [(1, 1), (2, BIG - 1), (3, "1"), (4, None), (5, "gone"), (6, BIG)]


def _populate(conn: Any, _rng: Any) -> None:
    conn.executemany("INSERT INTO t (id, v) VALUES (?, ?)", START)


@tool(writes=True, example={"id": 1, "value": 0})
def put(ctx: ToolContext, id: int, value: int) -> None:
    """Set row ``id``'s v to ``VALUES[value]``, creating the row if it is missing."""
    ctx.execute(
        "INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET v = excluded.v",
        (id, VALUES[value]),
    )


@tool(writes=True, example={"id": 1})
def drop(ctx: ToolContext, id: int) -> None:
    """Delete row ``id``."""
    ctx.execute("DELETE FROM t WHERE id = ?", (id,))


CALLS: list[tuple[str, dict[str, int]]] = [
    ("put", {"id": 1, "value": 0}),  # INTEGER 1 → REAL 1.0
    ("put", {"id": 2, "value": 1}),  # 2**53 → 2**53 + 1
    ("put", {"id": 3, "value": 2}),  # TEXT '1' → INTEGER 1
    ("put", {"id": 4, "value": 4}),  # NULL → TEXT 'null'
    ("put", {"id": 7, "value": 1}),  # a new row holding 2**53 + 1
    ("put", {"id": 8, "value": 0}),  # a new row holding REAL 1.0
    ("drop", {"id": 6}),  # a deleted row that held 2**53
    ("put", {"id": 5, "value": 6}),  # TEXT → an infinite REAL
    ("put", {"id": 1, "value": 7}),  # REAL 1.0 → a BLOB
]


@agent_factory
def writer(context: AgentContext) -> Any:
    calls = iter([*CALLS, ("finish", {"message": "done"})])

    def act(observation: Mapping[str, Any]) -> dict[str, Any]:
        name, arguments = next(calls)
        return {"tool": name, "arguments": arguments}

    return act


def world() -> Any:
    """``module:factory``: one task, graded by rules no writer meets (so it fails, and
    the page opens on it)."""
    return ToolWorldProvider(
        Snapshot.build("values40", SCHEMA, _populate),
        [put, drop],
        environment_id="values40/v1",
        tasks=[EvalCase({"n": 0}, {"rules": [no_other_changes()]}, case_id="values")],
        agents={"writer": writer},
        max_steps=20,
    )


@pytest.fixture(scope="module")
def values_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("values40") / "run"
    start_run(path, plan_run(f"{__name__}:world", "writer", seeds=[0]))
    return path


AUDIT = [
    "v: 1 → 1.0",
    "v: 9007199254740992 → 9007199254740993",
    'v: "1" → 1',
    'v: null → "null"',
    'created: {"id":7,"note":null,"v":9007199254740993}',
    'created: {"id":8,"note":null,"v":1.0}',
    'deleted: {"id":6,"note":null,"v":9007199254740993}',
    'v: "gone" → {"$real":"Infinity"}',
    'v: 1.0 → {"$blob":"01"}',
]
"""Each row change's values, as the saved evidence holds them."""

_READ = (
    "const cells = sel => [...document.querySelectorAll(sel)].map(tr =>"
    " [...tr.cells].map(td => td.innerText));"
    "out.audit = cells('#episode-view tr.audit-row');"
    "out.diff = cells('#episode-view tr.diff-row');"
)


def test_show_prints_each_value_as_stored(values_run: Path) -> None:
    shown = onrecord("show", values_run, "--episode", "values#0", "--full")
    assert shown.returncode == 0, shown.stderr
    values = [row[4] for row in _rows(shown.stdout)]
    assert values == [v.removeprefix("created: ").removeprefix("deleted: ") for v in AUDIT]


@pytest.mark.browser
def test_the_page_prints_each_value_as_stored(values_run: Path, tmp_path: Path) -> None:
    from tests.html.test_browser_probe import _drive

    made = onrecord("report", values_run, "-o", tmp_path / "values.html")
    assert made.returncode == 0, made.stderr
    out = _drive(tmp_path / "values.html", _READ, tmp_path)
    # Before: "v: 1 → 1", "v: 9007199254740992 → 9007199254740992", "v":1 and "v":
    # 9007199254740992 in the created and deleted rows.
    assert [row[5] for row in out["audit"]] == AUDIT
    assert [row[1:] for row in out["diff"]] == [
        ["created", AUDIT[4]],
        ["created", AUDIT[5]],
        # Before: an empty cell, the change compared as JavaScript numbers read as none.
        ["changed 1", 'v: 1 → {"$blob":"01"}'],
        ["changed 2", AUDIT[1]],
        ["changed 3", AUDIT[2]],
        ["changed 4", AUDIT[3]],
        ["changed 5", AUDIT[7]],
        ["deleted", AUDIT[6]],
    ]


# -- a stale report read as the run's ---------------------------------------------------

RUN = ["remittance", "-a", "change_and_restore", "-s", "0", "-r", "1"]
RUN += ["--executor", "inprocess", "--no-progress"]
POLICY = '[[requirements]]\ncheck = "expected_changes"\nmin_pass_rate = 0.5\n'
"""Met by the first 20 episodes' grading: `gate` read it as the run's."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("stale40") / "run"
    done = onrecord("run", *RUN, "-o", run)
    assert done.returncode == 1, done.stderr  # rejected: 4 of 33 episodes fail
    return run


@pytest.fixture
def stale(finished: Path, tmp_path: Path) -> Path:
    """A run graded once over 20 episodes, then resumed: the resume records the other
    13, removes the old decision and is killed as it writes the new report.json."""
    run = earlier_grading(finished, tmp_path / "stale", tmp_path)
    assert len(orjson.loads((run / "report.json").read_bytes())["trials"]) == 20
    return run


def _refusal(run: Path) -> str:
    return (
        f"{run} is not graded: its report.json is an earlier grading (20 of the 33 recorded "
        "episodes) and decision.json is missing, as a grading killed before the new "
        f"report.json leaves it; `onrecord run --resume {run}` grades the run"
    )


def test_gate_refuses_a_stale_grading(stale: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    for given in (stale, stale / "report.json"):
        gated = onrecord("gate", given, "--policy", policy, "--markdown", tmp_path / "s.md")
        # Before: exit 2, "the run is incomplete: 13 planned episodes have no trial", a
        # decision on the 20 episodes the earlier grading held (all 33 are recorded).
        assert gated.returncode == 3, gated.stdout
        assert _refusal(stale) in " ".join(gated.stderr.split())
        # The summary says it too, with the command to paste.
        summary = (tmp_path / "s.md").read_text()
        assert f"```\nonrecord run --resume {stale}\n```" in summary
        (tmp_path / "s.md").unlink()
    # The command it names grades the run; the gate then decides on all 33.
    resumed = onrecord("run", "--resume", stale, "--no-progress")
    assert resumed.returncode == 1, resumed.stderr
    gated = onrecord("gate", stale, "--policy", policy)
    assert gated.returncode == 0, gated.stderr
    assert "(33 of 33)" in gated.stdout


def test_compare_refuses_a_stale_grading(stale: Path, finished: Path) -> None:
    compared = onrecord("compare", stale, finished)
    # Before: "A (…) is an incomplete run: 13 of 33 planned episodes have no trial".
    assert compared.returncode == 3, compared.stdout
    assert _refusal(stale) in " ".join(compared.stderr.split())
    assert "no trial" not in compared.stderr


def test_a_grading_not_decided_is_still_read(finished: Path, tmp_path: Path) -> None:
    undecided = tmp_path / "undecided"
    shutil.copytree(finished, undecided)
    (undecided / "decision.json").unlink()  # killed between report.json and decision.json
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    assert onrecord("gate", undecided, "--policy", policy).returncode == 0
    compared = onrecord("compare", undecided, finished)
    assert compared.returncode == 0, compared.stderr


def test_the_report_page_says_not_graded(stale: Path, tmp_path: Path) -> None:
    made = onrecord("report", stale, "-o", tmp_path / "stale.html")
    assert made.returncode == 0, made.stderr
    page = (tmp_path / "stale.html").read_text()
    # Before: "not decided", and "stopped after writing its report.json (the grading
    # shown here)": the report shown is the one before the run's last episodes.
    assert '<span class="badge indeterminate" id="decision">not graded</span>' in page
    assert "not decided" not in page
    assert (
        "its report.json (shown here) is an earlier grading, of 20 of the 33 recorded episodes"
    ) in page


# -- counts --------------------------------------------------------------------------


def test_one_of_a_thing_is_singular(values_run: Path) -> None:
    shown = onrecord("show", values_run, "--no-progress")
    assert shown.returncode == 0, shown.stderr
    # Before: "report 1 trials", "measures over the 1 trials".
    assert "report 1 trial " in shown.stdout
    titles = [line.strip() for line in shown.stdout.splitlines() if "measures over" in line]
    assert titles == ["measures over the 1 trial"]
    compared = onrecord("compare", values_run, values_run)
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.startswith("comparison 1 paired trial\n")  # was "… trials"
