"""Leftovers 8: ``onrecord show`` saying a report's errors are part of its unmeasured
results, one coverage issue (not two) for a crashed tool-world agent, and a task's rule
value no row of its column can hold refused when the run is planned."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.envkit import Snapshot, ToolContext, changed, created, tool
from onrecord.errors import InputError
from onrecord.report import CheckResult, EvaluationReport, Trial
from onrecord.runner import (
    AgentContext,
    ToolWorldProvider,
    agent_factory,
    plan_run,
    regrade_run,
    start_run,
)
from tests.runner.conftest import onrecord
from tests.runner.test_toolworld_provider import ENV

HERE = "tests.test_leftovers8_toolworld_and_show"

# -- show: errors are among the unmeasured ------------------------------------------------


def test_show_says_the_errors_are_part_of_the_unmeasured(tmp_path: Path) -> None:
    # A world model that raised on half of 40 references: 20 passed, 20 model errors.
    trials = [
        Trial(
            case={"case_id": f"ref-{i}", "content_digest": f"{i:064x}"},
            repeat=0,
            source={"kind": "forecast", "digest": "0" * 64},
            results=(
                CheckResult("dynamics/x/h1", "v1", "model_error", "predict raised")
                if i % 2
                else CheckResult("dynamics/x/h1", "v1", "pass", "within bounds"),
            ),
        )
        for i in range(40)
    ]
    path = EvaluationReport.from_trials(trials).save_json(tmp_path / "model.report.json")
    shown = onrecord("show", str(path))
    assert shown.returncode == 0, shown.stderr
    header = next(line for line in shown.stdout.splitlines() if "unmeasured" in line)
    row = next(line for line in shown.stdout.splitlines() if "dynamics/x/h1" in line)
    # Before: "unmeasured | errors" read 20 and 20 as two kinds of 40 results.
    assert re.search(r"unmeasured\s*┃\s*of which errors\s*┃", header), header
    assert re.search(r"│ 20\s+│ 0\s+│ 20\s+│ 20\s+│", row), row


# -- a crashed tool-world agent: one coverage issue -------------------------------------


@agent_factory
def crashing(context: AgentContext) -> Any:
    def act(observation: Mapping[str, Any]) -> Any:
        raise RuntimeError("model server down")

    return act


@agent_factory
def crashing_later(context: AgentContext) -> Any:
    def act(observation: Mapping[str, Any]) -> Any:
        if observation["step"] == 0:
            return {"tool": "read_order", "arguments": {"order_id": 1}}
        raise RuntimeError("lost the connection")

    return act


@pytest.mark.parametrize(
    ("agent", "error"),
    [("crashing", "RuntimeError: model server down"), ("crashing_later", "RuntimeError: lost")],
)
def test_a_crashed_agent_gets_one_coverage_issue(tmp_path: Path, agent: str, error: str) -> None:
    run = tmp_path / "run"
    start_run(run, plan_run(ENV, f"{HERE}:{agent}", tasks=["order-1"]))
    [trial] = json.loads((run / "report.json").read_bytes())["trials"]
    # Before: also "the episode ended before its first call (after step 0 (read_order))
    # without a successful finish call": two lines for one crash.
    assert len(trial["coverage_issues"]) == 1, trial["coverage_issues"]
    assert trial["coverage_issues"][0].startswith(f"the episode ended with agent_error: {error}")
    regraded = regrade_run(run, name="again")
    assert [t.coverage_issues for t in regraded.report.trials] == [tuple(trial["coverage_issues"])]


# -- rule values a column can never hold --------------------------------------------------

_TASKS = """[[tasks]]
case_id = "order-1"
input = {{ order_id = 1 }}

[[tasks.expected_output.rules]]
rule = "changed"
table = "orders"
where = {{ id = 1, status = "new" }}
to = {{ status = "dispensed" }}
count = 1

[[tasks.expected_output.rules]]
rule = "changed"
table = "drugs"
where = {{ sku = "AMOX" }}
to = {{ stock = {stock} }}
count = 1

[[tasks.expected_output.rules]]
rule = "created"
table = "dispensings"
where = {{ order_id = 1, sku = "AMOX", qty = 2 }}
count = 1

[[tasks.expected_output.rules]]
rule = "no_other_changes"
"""


def test_a_rule_value_of_the_wrong_type_is_refused_when_the_run_is_planned(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(_TASKS.format(stock='"38"'))
    run = onrecord(
        "run", ENV, "-a", "careful", "--tasks-file", str(tasks), "--out", str(tmp_path / "a")
    )
    # Before: the run went ahead and rejected the careful agent ("drugs key 'AMOX'
    # changed to {stock: 38}, but {stock: '38'} was expected").
    assert run.returncode == 3, run.stdout + run.stderr
    assert (
        "task ('order-1') expected_output['rules'][1] (changed drugs): to.stock = \"38\" "
        "can never match" in run.stderr
    )
    assert "drugs.stock is declared INTEGER" in run.stderr
    assert 'SQLite stores "38" as 38; write stock = 38' in run.stderr
    assert not (tmp_path / "a").exists()
    tasks.write_text(_TASKS.format(stock="38"))
    fixed = onrecord(
        "run", ENV, "-a", "careful", "--tasks-file", str(tasks), "--out", str(tmp_path / "b")
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


SCHEMA = """
CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, r REAL, x TEXT, n NUMERIC, b BLOB, u,
                d DATE, v VARCHAR(20), price DECIMAL(10, 2));
CREATE TABLE s (id INTEGER PRIMARY KEY, i INTEGER, x TEXT, a ANY) STRICT;
CREATE TABLE w (label TEXT);
CREATE TABLE k (code TEXT PRIMARY KEY, qty INT) WITHOUT ROWID;
"""


def _populate(conn: sqlite3.Connection, rng: Any) -> None:
    conn.execute("INSERT INTO t (id) VALUES (1)")
    conn.execute("INSERT INTO s (id) VALUES (1)")
    conn.execute("INSERT INTO w VALUES ('a')")
    conn.execute("INSERT INTO k VALUES ('a', 1)")


@tool(example={})
def noop(ctx: ToolContext) -> dict[str, Any]:
    """Do nothing."""
    return {}


def _provider(table: str, field: str, values: dict[str, Any]) -> ToolWorldProvider:
    where, to = (values, {}) if field == "where" else ({}, values)
    rule = created(table, where=where) if field == "where" else changed(table, where=where, to=to)
    return ToolWorldProvider(
        Snapshot.build("types", SCHEMA, _populate),
        [noop],
        environment_id="types/v1",
        tasks=[EvalCase({}, {"rules": [rule]}, case_id="typed")],
    )


@pytest.mark.parametrize(
    ("table", "field", "column", "value", "says"),
    [
        ("t", "to", "i", "1", 't.i is declared INTEGER, so SQLite stores "1" as 1; write i = 1'),
        ("t", "to", "r", "1.5", 'declared REAL, so SQLite stores "1.5" as 1.5; write r = 1.5'),
        ("t", "where", "x", 5, 'declared TEXT, so SQLite stores 5 as "5"; write x = "5"'),
        ("t", "to", "x", True, 'declared TEXT, so SQLite stores 1 as "1"; write x = "1"'),
        ("t", "to", "n", "10.50", 'NUMERIC, so SQLite stores "10.50" as 10.5; write n = 10.5'),
        ("t", "to", "price", "10.50", "declared DECIMAL(10, 2), so SQLite stores"),
        ("t", "to", "id", "1", 't.id is the rowid (integers only), so SQLite stores "1" as 1'),
        (
            "t",
            "to",
            "id",
            "abc",
            'the rowid (integers only), so SQLite cannot store "abc" there; write an integer',
        ),
        ("w", "where", "rowid", "1", 'w.rowid is the rowid (integers only), so SQLite stores "1"'),
        (
            "s",
            "to",
            "i",
            "abc",
            'STRICT table, so SQLite cannot store "abc" there; write a value of type INTEGER',
        ),
        ("s", "to", "x", 5, 'declared TEXT in a STRICT table, so SQLite stores 5 as "5"'),
        ("k", "to", "qty", "2", 'k.qty is declared INT, so SQLite stores "2" as 2; write qty = 2'),
    ],
)
def test_a_value_its_column_can_never_hold_is_refused(
    table: str, field: str, column: str, value: Any, says: str
) -> None:
    with pytest.raises(InputError) as raised:
        _provider(table, field, {column: value})
    message = str(raised.value)
    assert message.startswith(
        f"tasks[0] ('typed') expected_output['rules'][0] "
        f"({'created' if field == 'where' else 'changed'} {table}): {field}.{column} = "
    )
    assert "can never match" in message
    assert says in message


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("t", "i", "abc"),  # not a number: a plain INTEGER column keeps it as text
        ("t", "i", 1.5),  # kept as a REAL
        ("t", "i", 1.0),  # stored as 1, which a rule of 1.0 matches
        ("t", "r", 3),  # stored as 3.0, equal as a number
        ("t", "x", "5"),
        ("t", "b", "1"),  # BLOB affinity keeps values as given
        ("t", "u", 1),  # no declared type: the same
        ("t", "u", "1"),
        ("t", "d", "2024-01-05"),  # NUMERIC affinity, but not a number
        ("t", "v", "007"),
        ("t", "i", None),
        ("s", "a", "1"),  # ANY keeps values as given
        ("s", "i", 1),
        ("k", "code", "a"),
    ],
)
def test_a_value_its_column_can_hold_is_kept(table: str, column: str, value: Any) -> None:
    provider = _provider(table, "to", {column: value})
    assert [case.case_id for case in provider.tasks()] == ["typed"]
