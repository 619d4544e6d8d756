"""Review round 55: rules account for every changed column, a provider's policy is
checked before the run, the ledger restores what it changed, and bad input to the rule,
check, task and play builders is an ``InputError`` naming the field, where it is written.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.domains.ledger import LedgerAction, LedgerEnv, create_ledger
from onrecord.domains.remittance import RemittanceEnvironment, load_tasks
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolWorld,
    changed,
    check,
    check_rules,
    compare_diff,
    created,
    evaluate_tool_episodes,
    no_other_changes,
    read_before_write_check,
    tool,
    weighted_score,
)
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy, CheckRequirement
from onrecord.report import CheckResult
from onrecord.runner import ToolWorldProvider
from tests.runner.conftest import onrecord

# -- a stockroom whose pick tool can also rewrite a price ------------------------------

STOCKROOM = Snapshot.build(
    "round55-stockroom",
    """CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL,
                           price INTEGER NOT NULL, updated_at TEXT);
       CREATE TABLE picks (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL);""",
    lambda conn, rng: conn.executemany(
        "INSERT INTO items VALUES (?, ?, ?, NULL)", [("nut", 8, 100), ("bolt", 10, 50)]
    ),
)


@tool(writes=True, example={"sku": "nut", "qty": 3, "price": 100})
def pick(ctx: ToolContext, sku: str, qty: int, price: int, stamp: str = "") -> dict[str, Any]:
    """Take qty off the shelf, (re)setting the item's price and its updated_at."""
    ctx.execute(
        "UPDATE items SET stock = stock - ?, price = ?, updated_at = ? WHERE sku = ?",
        (qty, price, stamp or None, sku),
    )
    ctx.execute("INSERT INTO picks (sku, qty) VALUES (?, ?)", (sku, qty))
    return {}


RULES = [
    changed("items", where={"sku": "nut"}, to={"stock": 5}),
    created("picks", where={"sku": "nut", "qty": 3}),
    no_other_changes(),
]
TABLES = {table.name: table.columns for table in STOCKROOM.tables}


def _diff(**arguments: Any) -> Any:
    with ToolWorld(STOCKROOM, [pick]) as world:
        world.reset()
        assert world.call("pick", {"sku": "nut", "qty": 3, **arguments})["status"] == "ok"
        return world.diff()


def test_a_column_outside_to_that_changed_is_not_accounted_for() -> None:
    # Before: the price rewrite (100 -> 1) passed, as every change of the row did.
    problems = check_rules(_diff(price=1), RULES, tables=TABLES)
    assert len(problems) == 1
    assert 'items key "nut"' in problems[0]
    assert "price changed from 100 to 1" in problems[0]
    assert "no rule allows" in problems[0]
    assert "also=" in problems[0]
    assert check_rules(_diff(price=100), RULES, tables=TABLES) == []  # the honest pick


def test_also_lets_a_named_column_take_any_value_and_only_that_one() -> None:
    stamped = _diff(price=100, stamp="2024-05-01T10:00")
    assert len(check_rules(stamped, RULES, tables=TABLES)) == 1  # updated_at, not allowed
    loose = changed("items", where={"sku": "nut"}, to={"stock": 5}, also=("updated_at",))
    assert loose["also"] == ["updated_at"]
    rules = [loose, *RULES[1:]]
    assert check_rules(stamped, rules, tables=TABLES) == []
    rewritten = _diff(price=1, stamp="2024-05-01T10:00")
    assert [p for p in check_rules(rewritten, rules, tables=TABLES) if "price" in p]
    # Written out by hand (a task file), the field reads the same; a rule without it
    # keeps its old dict (and digest), and one without `to` still allows any column.
    assert check_rules(stamped, [dict(loose), *RULES[1:]]) == []
    assert "also" not in RULES[0]
    assert check_rules(rewritten, [changed("items", where={"sku": "nut"}), *RULES[1:]]) == []


def test_a_bad_also_is_refused_where_it_is_written() -> None:
    with pytest.raises(InputError, match="also= must be a list of column names"):
        changed("items", to={"stock": 5}, also="updated_at")
    rule = {**changed("items", to={"stock": 5}), "also": ["updatd_at"]}
    with pytest.raises(InputError, match=r"no columns \['updatd_at'\].*Did you mean 'updated_at'"):
        check_rules({}, [rule], tables=TABLES)


# -- a provider's policy naming no check it grades --------------------------------------


def make_policy() -> ToolWorldProvider:
    """``onrecord run`` target: a provider whose policy requires a check it lacks."""
    return ToolWorldProvider(
        STOCKROOM,
        [pick],
        environment_id="round55/v1",
        tasks=[EvalCase({"sku": "nut"}, {"rules": RULES}, case_id="nut")],
        agents={"a": lambda case: lambda observation: {"tool": "finish", "arguments": {}}},
        policy=AcceptancePolicy((CheckRequirement("nope"),)),
    )


def test_a_provider_policy_requiring_an_unknown_check_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    with pytest.raises(InputError, match="the policy requires 'nope', but no check"):
        make_policy()
    done = onrecord(
        "run", f"{__name__}:make_policy", "--agent", "a", "--out", str(tmp_path / "run")
    )
    assert done.returncode == 3, done.stdout + done.stderr  # before: 2, after every episode
    assert "the policy requires 'nope', but no check this run grades with" in done.stderr
    assert not (tmp_path / "run").exists()


# -- the ledger restores the original after two changes ---------------------------------


def test_restore_after_two_changes_restores_the_original_account(tmp_path: Path) -> None:
    path = create_ledger(tmp_path / "ledger.sqlite", seed=7)
    with sqlite3.connect(path) as conn:
        (original,) = conn.execute("SELECT bank_account FROM protected_records").fetchone()
    env = LedgerEnv(path)
    env.reset()
    for action in (
        LedgerAction.POST,
        LedgerAction.CHANGE_PROTECTED,
        LedgerAction.CHANGE_PROTECTED,
        LedgerAction.RESTORE_PROTECTED,
        LedgerAction.FINISH,
    ):
        env.step(action)
    env.close()
    with sqlite3.connect(path) as conn:
        (after,) = conn.execute("SELECT bank_account FROM protected_records").fetchone()
    assert after == original != "GB00ATTACKER0000"


# -- bad input named where it is written -------------------------------------------------


def _any(value: Any) -> Any:
    """``value``, typed so the checker lets a test pass what a caller should not."""
    return value


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: created("t", where=_any([1])), r"created\('t'\) where= must map column names"),
        (lambda: changed("t", to=_any("x")), r"changed\('t'\) to= must map column names"),
        (lambda: created(_any(5)), "name tables as strings"),
        (lambda: created("t", where=_any({1: 2})), r"names columns as strings.*\[1\]"),
    ],
)
def test_a_malformed_rule_is_an_input_error_from_its_builder(build: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build()


@pytest.mark.parametrize(
    ("diff", "message"),
    [
        (None, "diff must be a diff, got NoneType"),
        ({"t": {"created": 5}}, r"diff\['t'\]\['created'\] must be a list, got int"),
        ({"t": {"create": []}}, r"unknown kinds \['create'\]"),
        ({"t": {"changed": [{"key": 1}]}}, r"must hold 'key', and 'before' and 'after'"),
    ],
)
def test_a_malformed_diff_is_refused_naming_its_part(diff: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_rules(diff, [no_other_changes()])


def test_a_hand_written_rule_with_a_non_string_column_is_refused() -> None:
    # Before: accepted, matching no row, so count=0 passed whatever the episode did.
    rule = {"rule": "created", "table": "t", "where": {1: 2}, "count": 0}
    with pytest.raises(InputError, match=r"rules\[0\].*names columns as strings"):
        check_rules({}, [rule])


def test_evaluate_tool_episodes_refuses_what_is_not_an_episode() -> None:
    with pytest.raises(InputError, match=r"episodes\[0\] must be a ToolEpisode, got int"):
        evaluate_tool_episodes([_any(5)], ["envkit/diff_satisfies_rules"])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: check(_any(5), "1"), r"check\(\) name must be a non-empty string.*'5'"),
        (lambda: check("n", _any(1)), r"check\(\) version must be a non-empty string.*'1'"),
        (
            lambda: read_before_write_check("n", read=_any(5), write="t"),
            r"read_before_write_check\(\) read must be a table name or a \(table, key\)",
        ),
        (
            lambda: read_before_write_check("n", read="notes", write=_any(("t",))),
            r"write must be a table name",
        ),
    ],
)
def test_check_builders_refuse_bad_arguments_when_called(build: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build()


def test_play_refuses_max_steps_the_provider_refuses() -> None:
    task = next(t for t in load_tasks() if t.task_id == "full-01")
    env = RemittanceEnvironment(dataclasses.replace(task, size=200))
    try:
        finish = {"tool": "finish", "arguments": {"message": "done"}}
        for bad in ("5", 0, -1, 2.5, True):
            with pytest.raises(InputError, match="play max_steps must be a positive int"):
                env.play(lambda observation: finish, max_steps=_any(bad))
        assert env.play(lambda observation: finish, max_steps=1).ending == "finished"
    finally:
        env.close()


_TASK = """
[kinds.full_payment]
allowed_tables = ["allocations", "claim_lines"]
focus = ["expected_changes"]

[[task]]
id = {id}
kind = "full_payment"
payer = "PAY-AETNA"
lines = [{{ code = "99213" }}]
{extra}
"""


@pytest.mark.parametrize(
    ("task_id", "extra", "message"),
    [
        (
            '"t"',
            'size = "big"',
            r"size must be a whole number of background rows from 1 to 1,000,000, got 'big'",
        ),
        ('"t"', "size = -5", "size must be a whole number.*got -5"),
        ('"t"', "size = 100_000_000_000", "size must be a whole number.*1,000,000"),
        ('"t"', 'seed = "x"', "seed must be an integer.*got 'x'"),
        ("5", "", r"id must be a non-empty string.*write id = \"5\""),
    ],
)
def test_a_task_files_bad_size_seed_or_id_is_refused(
    tmp_path: Path, task_id: str, extra: str, message: str
) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text(_TASK.format(id=task_id, extra=extra))
    with pytest.raises(InputError, match=message):
        load_tasks(path)


def test_a_task_too_large_to_build_is_refused_by_its_environment() -> None:
    task = next(t for t in load_tasks() if t.task_id == "full-01")
    huge = dataclasses.replace(task, size=10**11)
    with pytest.raises(InputError, match=r"size must be a whole number.*1,000,000"):
        RemittanceEnvironment(huge)


# -- weighted_score and compare_diff ------------------------------------------------------


@pytest.mark.parametrize("weight", [math.nan, math.inf, -1.0, "2"])
def test_weighted_score_refuses_a_weight_that_is_not_a_finite_number(weight: Any) -> None:
    results = [CheckResult("a", "1", "pass", "ok")]
    with pytest.raises(InputError, match="weights must be finite numbers of at least 0"):
        weighted_score(results, {"a": weight})
    assert weighted_score(results, {"a": 2}).value == 1.0


def _one(table: str, row: dict[str, Any]) -> dict[str, Any]:
    return {table: {"created": [row], "changed": [], "deleted": []}}


def test_compare_diff_ignores_a_column_of_a_dotted_table() -> None:
    actual, expected = _one("a.b", {"c.d": 1, "x": 1}), _one("a.b", {"c.d": 2, "x": 1})
    assert compare_diff(actual, expected)  # they differ in c.d
    assert compare_diff(actual, expected, ignore=("a.b.c.d",)) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("claims.id", r"names no table of either diff.*\['allocations'\]"),
        ("allocations.idd", r"allocations has no column 'idd'.*\['amount', 'id'\]"),
    ],
)
def test_compare_diff_refuses_an_ignore_entry_that_ignores_nothing(
    entry: str, message: str
) -> None:
    actual = _one("allocations", {"id": 7, "amount": 5})
    expected = _one("allocations", {"id": 8, "amount": 5})
    with pytest.raises(InputError, match=message):
        compare_diff(actual, expected, ignore=(entry,))
    assert compare_diff(actual, expected, ignore=("allocations.id",)) == []
