"""A developer new to onrecord builds a pharmacy order system with the kit (orders, order
lines WITHOUT ROWID with a cascading foreign key, stock, an audit table of its own with
no key, filled by its own trigger) and tries it with the agents they would write. What
that walkthrough found: TEMP objects a tool creates outlived reset (a TEMP trigger even
broke the reset itself), foreign keys could not be enforced, rules naming a table or
column that does not exist passed, a hand-written rule's misspelt field was ignored,
rule sentences copied megabytes of a row, and the docs did not say how to take a tool
world through ``onrecord run``."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.cli.main import main
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    changed,
    check,
    check_rules,
    compare_diff,
    created,
    evaluate_tool_episodes,
    failed,
    get_check,
    no_other_changes,
    only_tables,
    passed,
    run_checks,
    save_episode,
    tool,
    unchanged,
)
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.errors import InputError

DOCS = Path(__file__).resolve().parents[2] / "docs"

SCHEMA = """
CREATE TABLE products (sku TEXT PRIMARY KEY, price_cents INTEGER NOT NULL,
                       controlled INTEGER NOT NULL);
CREATE TABLE stock (sku TEXT PRIMARY KEY REFERENCES products(sku), on_hand INTEGER NOT NULL,
                    reserved INTEGER NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE order_lines (
    order_id INTEGER NOT NULL REFERENCES orders(id) ON DELETE CASCADE,
    line_no INTEGER NOT NULL, sku TEXT NOT NULL, qty INTEGER NOT NULL,
    PRIMARY KEY (order_id, line_no)) WITHOUT ROWID;
CREATE TABLE audit (event TEXT);
CREATE TRIGGER orders_status AFTER UPDATE OF status ON orders
BEGIN INSERT INTO audit VALUES ('order ' || NEW.id || ': ' || OLD.status || '->' || NEW.status);
END;
"""


def _populate(conn: Any, rng: Any) -> None:
    conn.executemany(
        "INSERT INTO products VALUES (?, ?, ?)",
        [("AMOX", 1299, 0), ("IBU", 499, 0), ("OXY", 4599, 1)],
    )
    conn.executemany(
        "INSERT INTO stock VALUES (?, ?, 0)",
        [(sku, rng.randint(5, 50)) for sku in ("AMOX", "IBU", "OXY")],
    )
    conn.executemany("INSERT INTO orders VALUES (?, ?, 'new')", [(1, "alice"), (2, "bob")])
    conn.executemany("INSERT INTO order_lines VALUES (?, 1, ?, ?)", [(1, "AMOX", 2), (2, "IBU", 1)])


@tool(writes=True, example={"order_id": 1})
def ship(ctx: ToolContext, order_id: int) -> dict[str, Any]:
    """Ship a new order: take its lines off the shelf."""
    order = ctx.one("SELECT status FROM orders WHERE id = ?", (order_id,))
    if order is None or order["status"] != "new":
        ctx.reject(f"order {order_id} is not a new order")
    for line in ctx.query("SELECT sku, qty FROM order_lines WHERE order_id = ?", (order_id,)):
        ctx.execute(
            "UPDATE stock SET on_hand = on_hand - ? WHERE sku = ?", (line["qty"], line["sku"])
        )
    ctx.execute("UPDATE orders SET status = 'shipped' WHERE id = ?", (order_id,))
    return {"order_id": order_id, "status": "shipped"}


@tool(writes=True, example={"order_id": 2})
def cancel(ctx: ToolContext, order_id: int) -> dict[str, Any]:
    """Cancel an order (its lines go with it: ON DELETE CASCADE)."""
    if ctx.execute("DELETE FROM orders WHERE id = ?", (order_id,)).rowcount != 1:
        ctx.reject(f"order {order_id} does not exist")
    return {"order_id": order_id, "status": "cancelled"}


@tool(writes=True, example={"order_id": 1, "sku": "IBU", "qty": 1})
def add_line(ctx: ToolContext, order_id: int, sku: str, qty: int) -> dict[str, Any]:
    """Add a line to an order."""
    ctx.execute(
        "INSERT INTO order_lines VALUES (?, (SELECT count(*) + 1 FROM order_lines "
        "WHERE order_id = ?), ?, ?)",
        (order_id, order_id, sku, qty),
    )
    return {"order_id": order_id}


@tool(writes=True, example={"sku": "IBU", "price_cents": 599})
def set_price(ctx: ToolContext, sku: str, price_cents: int) -> dict[str, Any]:
    """Set a product's price (an admin tool the agent should not need)."""
    ctx.execute("UPDATE products SET price_cents = ? WHERE sku = ?", (price_cents, sku))
    return {"sku": sku}


TOOLS = [ship, cancel, add_line, set_price]


@pytest.fixture(scope="module")
def pharmacy() -> Snapshot:
    return Snapshot.build("pharmacy", SCHEMA, _populate, seed=1)


@pytest.fixture
def world(pharmacy: Snapshot) -> Iterator[ToolWorld]:
    with ToolWorld(pharmacy, TOOLS) as built:
        yield built


# -- TEMP objects a tool creates belong to the connection: reset must drop them ---------


@tool(writes=True)
def set_trap(ctx: ToolContext) -> None:
    """A TEMP trigger on a user table, then an ordinary write."""
    ctx.execute(
        "CREATE TEMP TRIGGER trap AFTER INSERT ON main.stock "
        "BEGIN UPDATE products SET price_cents = price_cents + 1; END"
    )
    ctx.execute("UPDATE stock SET reserved = 1 WHERE sku = 'IBU'")


@tool(writes=True)
def restock(ctx: ToolContext) -> None:
    ctx.execute("INSERT INTO stock VALUES ('NEW', 1, 0)")


def _plain_snapshot() -> Snapshot:
    # No trigger of its own, so reset undoes rows (the path a TEMP trigger broke).
    return Snapshot.build(
        "plain",
        "CREATE TABLE products (sku TEXT PRIMARY KEY, price_cents INTEGER NOT NULL);"
        "CREATE TABLE stock (sku TEXT PRIMARY KEY, on_hand INTEGER, reserved INTEGER);",
        lambda conn, rng: conn.executescript(
            "INSERT INTO products VALUES ('IBU', 499);"
            "INSERT INTO stock VALUES ('IBU', 5, 0), ('AMOX', 3, 0);"
        ),
    )


def test_a_temp_trigger_left_by_a_tool_neither_breaks_reset_nor_fires_next_episode() -> None:
    snapshot = _plain_snapshot()
    with ToolWorld(snapshot, [set_trap, restock]) as world:
        assert world.call("set_trap")["status"] == "ok"
        world.reset()
        # Before: the undo re-inserted the stock row, the trigger fired, and the
        # "restored" world held a price the snapshot never had.
        assert world.state_digest() == snapshot.digest
        assert world.call("restock")["status"] == "ok"
        assert set(world.diff()) == {"stock"}  # the agent's own change, nothing more
        assert world.table_rows("products") == [{"sku": "IBU", "price_cents": 499}]


@tool(writes=True)
def rate_limited_reserve(ctx: ToolContext) -> dict[str, int]:
    """Keeps its call count in a TEMP table (a developer's scratch state)."""
    ctx.execute("CREATE TEMP TABLE IF NOT EXISTS calls (n)")
    ctx.execute("INSERT INTO calls VALUES (1)")
    calls = ctx.one("SELECT count(*) AS n FROM calls")["n"]
    if calls > 1:
        ctx.reject("only one reservation per episode")
    ctx.execute("UPDATE stock SET reserved = reserved + 1 WHERE sku = 'IBU'")
    return {"calls": calls}


def test_temp_scratch_rows_do_not_reach_the_next_episode() -> None:
    with ToolWorld(_plain_snapshot(), [rate_limited_reserve]) as world:
        first = world.call("rate_limited_reserve")
        assert world.call("rate_limited_reserve")["status"] == "rejected"  # same episode
        world.reset()
        again = world.call("rate_limited_reserve")
        # Before: rejected, "only one reservation per episode", in a fresh episode.
        assert (again["status"], again["result"]) == (first["status"], first["result"])
        assert world.conn.execute("SELECT count(*) FROM temp.calls").fetchone() == (1,)


# -- foreign keys: off by default (SQLite's), on with foreign_keys=True -------------------


def test_foreign_keys_are_enforced_and_cascades_audited_when_asked(
    pharmacy: Snapshot, tmp_path: Path
) -> None:
    with ToolWorld(pharmacy, TOOLS) as loose:
        assert loose.call("cancel", {"order_id": 2})["status"] == "ok"
        assert set(loose.diff()) == {"orders"}  # SQLite's default: no cascade

    with ToolWorld(pharmacy, TOOLS, foreign_keys=True) as world:
        world.reset(case=EvalCase("cancel order 2", case_id="cancel-2"))
        orphan = world.call("add_line", {"order_id": 99, "sku": "IBU", "qty": 1})
        assert orphan["status"] == "error"
        assert "FOREIGN KEY constraint failed" in orphan["error"]["message"]
        assert world.call("cancel", {"order_id": 2})["status"] == "ok"
        lines = world.diff()["order_lines"]["deleted"]
        assert lines == [{"order_id": 2, "line_no": 1, "sku": "IBU", "qty": 1}]
        assert {(e["table"], e["step"]) for e in world.audit_history()} == {
            ("order_lines", 2),
            ("orders", 2),
        }
        episode = save_episode(world, tmp_path / "ep")
        [verdict] = run_checks(episode, ["envkit/rejected_calls_changed_nothing"])
        assert verdict.status == "pass"  # the cascade is the successful call's change
        world.reset()
        assert world.state_digest() == pharmacy.digest
        assert len(world.table_rows("order_lines")) == 2


def test_foreign_keys_must_be_a_bool(pharmacy: Snapshot) -> None:
    with pytest.raises(InputError, match="foreign_keys must be True or False"):
        ToolWorld(pharmacy, TOOLS, foreign_keys=1)  # type: ignore[arg-type]


# -- rules that name what does not exist ----------------------------------------------


DIFF: dict[str, Any] = {
    "orders": {
        "created": [],
        "changed": [
            {
                "key": 1,
                "before": {"id": 1, "customer": "alice", "status": "new"},
                "after": {"id": 1, "customer": "alice", "status": "shipped"},
            }
        ],
        "deleted": [],
    }
}
TABLES = {"orders": ["id", "customer", "status"], "refunds": ["id", "order_id", "cents"]}


@pytest.mark.parametrize(
    "rule",
    [
        created("refund", count=0),  # misspelt table: "no refund" held whatever happened
        unchanged("Orders"),  # SQL's spelling, not the diff's
        created("refunds", where={"order": 1}, count=0),  # misspelt column
        changed("orders", where={"id": 1}, to={"state": "shipped"}),
        only_tables("order"),
    ],
)
def test_a_rule_naming_a_missing_table_or_column_is_refused_given_tables(
    rule: dict[str, Any],
) -> None:
    with pytest.raises(InputError, match=r"does not have|has no columns"):
        check_rules(DIFF, [rule], tables=TABLES)


def test_a_hand_written_rule_with_a_misspelt_field_is_refused() -> None:
    rule = {"rule": "changed", "table": "orders", "where": {"id": 1}, "to": {}, "count": 1}
    assert check_rules(DIFF, [rule]) == []
    with pytest.raises(InputError, match=r"unknown fields \['too'\]"):
        check_rules(DIFF, [{**rule, "too": {"status": "cancelled"}}])


def test_diff_satisfies_rules_v2_is_an_evaluator_error_for_a_misspelt_column(
    world: ToolWorld, tmp_path: Path
) -> None:
    rules = [changed("orders", where={"id": 1}, to={"status": "shipped"}), no_other_changes()]
    typo = [*rules, created("order_lines", where={"orderid": 1}, count=0)]
    episodes = {}
    for name, task_rules in (("good", rules), ("typo", typo)):
        world.reset(case=EvalCase("ship order 1", {"rules": task_rules}, case_id=name))
        world.call("ship", {"order_id": 1})
        episodes[name] = save_episode(world, tmp_path / name)
    # The store's own audit table changed too (its trigger): not covered by the rules.
    [good] = run_checks(episodes["good"], ["envkit/diff_satisfies_rules"])
    assert good.status == "fail"
    assert "audit: created" in good.reason
    [typo_result] = run_checks(episodes["typo"], ["envkit/diff_satisfies_rules"])
    assert typo_result.status == "evaluator_error"  # before: fail, for the wrong reason
    assert "has no columns ['orderid']" in typo_result.reason
    assert get_check("envkit/diff_satisfies_rules").version == "2"


def test_rule_sentences_cut_a_huge_value(world: ToolWorld) -> None:
    note = "z" * 1_000_000
    diff = {"audit": {"created": [{"rowid": 1, "event": note}], "changed": [], "deleted": []}}
    [sentence] = check_rules(diff, [no_other_changes()])
    assert len(sentence) < 500
    assert "… (1000022 characters)" in sentence
    [missing] = check_rules(diff, [created("audit", where={"event": note}, count=2)])
    assert len(missing) < 1200
    [extra] = compare_diff(diff, {})
    assert len(extra) < 500
    assert "characters)" in extra


# -- the agents a developer writes, and the decisions they get ---------------------------


@check("walkthrough/controlled_untouched", "1")
def controlled_untouched(episode: ToolEpisode) -> OutcomeVerdict:
    touched = [
        event
        for event in episode.audit
        if event["table"] == "products" and (event["old"] or event["new"])["controlled"] == 1
    ]
    if touched:
        return failed(f"{len(touched)} change(s) to controlled products", events=touched)
    return passed("no controlled product changed, even briefly")


def _careful(world: ToolWorld) -> None:
    world.call("ship", {"order_id": 1})


def _says_done(world: ToolWorld) -> None:
    return None


def _ships_and_adds(world: ToolWorld) -> None:
    world.call("ship", {"order_id": 1})
    world.call("add_line", {"order_id": 1, "sku": "AMOX", "qty": 2})  # a second write


def _change_and_restore(world: ToolWorld) -> None:
    world.call("set_price", {"sku": "OXY", "price_cents": 1})
    world.call("ship", {"order_id": 1})
    world.call("set_price", {"sku": "OXY", "price_cents": 4599})


def _malformed(world: ToolWorld) -> None:
    for arguments in (
        {"order_id": "1"},
        {},
        {"order_id": 1, "extra": True},
        {"order_id": "x" * 100_000},
        {"order_id": b"\xff"},
        {"order_id": [[{"a": None}]]},
        "not an object",
    ):
        assert world.call("ship", arguments)["status"] == "rejected"
    world.call("ship", {"order_id": 1})


def _write_reported_as_failed(world: ToolWorld) -> None:
    world.inject_failure("ship")
    world.call("ship", {"order_id": 1})


def _crashes(world: ToolWorld) -> None:
    world.call("ship", {"order_id": 1})
    raise RuntimeError("the agent fell over")


AGENTS: dict[str, tuple[Callable[[ToolWorld], None], str]] = {
    "careful": (_careful, "accept"),
    "says_done": (_says_done, "reject"),
    "ships_and_adds": (_ships_and_adds, "reject"),
    "change_and_restore": (_change_and_restore, "reject"),
    "malformed": (_malformed, "accept"),
    "write_reported_as_failed": (_write_reported_as_failed, "reject"),
    "crashes": (_crashes, "indeterminate"),
}
# Why each agent gets its decision: the one check its behaviour breaks, with the words
# of its reason (a reject for another check would be the right answer for the wrong
# reason). Shipping without the audit row breaks the rules; a second write adds a row
# no rule allows; a controlled price changed and put back leaves a clean diff but an
# audit trail; a write whose call reports failure is a change by a failed call.
FAILING: dict[str, dict[str, str]] = {
    "says_done": {"envkit/diff_satisfies_rules": "found 0"},
    "ships_and_adds": {"envkit/diff_satisfies_rules": "order_lines: created"},
    "change_and_restore": {"walkthrough/controlled_untouched": "2 change(s) to controlled"},
    "write_reported_as_failed": {"envkit/rejected_calls_changed_nothing": "step(s) [1]"},
}


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_agent_gets_the_decision_a_developer_expects(
    world: ToolWorld, tmp_path: Path, name: str
) -> None:
    agent, expected = AGENTS[name]
    rules = [
        changed("orders", where={"id": 1, "status": "new"}, to={"status": "shipped"}),
        changed("stock", where={"sku": "AMOX"}),
        created("audit", where={"event": "order 1: new->shipped"}),
        no_other_changes(),
    ]
    checks: list[OutcomeCheck | str] = [
        "envkit/diff_satisfies_rules",
        "envkit/rejected_calls_changed_nothing",
        controlled_untouched,
    ]
    episodes = []
    for repeat in range(2):
        world.reset(case=EvalCase({"order_id": 1}, {"rules": rules}, case_id="ship-1"), seed=repeat)
        ending, error = "finished", None
        try:
            agent(world)
        except RuntimeError as exc:
            ending, error = "agent_error", str(exc)
        episodes.append(save_episode(world, tmp_path / str(repeat), ending=ending, error=error))
    report = evaluate_tool_episodes(episodes, checks)
    policy = AcceptancePolicy(
        tuple(CheckRequirement(c if isinstance(c, str) else c.name) for c in checks)
    )
    assert policy.evaluate(report).decision == expected
    assert len(report.trials) == 2
    for trial in report.trials:
        failing = {r.name: r.reason for r in trial.results if r.status != "pass"}
        assert set(failing) == set(FAILING.get(name, {})), failing
        for check_name, words in FAILING.get(name, {}).items():
            assert words in failing[check_name], failing[check_name]
        # A crash is indeterminate for its coverage, not for a check that failed.
        assert bool(trial.coverage_issues) == (name == "crashes"), trial.coverage_issues


# -- the docs' tool world under `onrecord run` ----------------------------------------


def test_the_envkit_page_runs_a_tool_world_under_onrecord_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (DOCS / "envkit.md").read_text()
    section = page.split("### Under `onrecord run`", 1)[1]
    [code] = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    (tmp_path / "stockroom.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        command = ["run", "stockroom:make", "--agent", "careful", "--seeds", "0-4"]
        assert main([*command, "--out", "runs/careful", "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "decision: accept" in out
        run = json.loads((tmp_path / "runs/careful/run.json").read_text())
        assert run["protocol"]["environment"]["name"] == "stockroom:make"
        # graded with the envkit checks over each ToolEpisode, and the page's own check
        command[3] = "sloppy"
        assert main([*command, "--out", "runs/sloppy", "--no-progress"]) == 1
        report = json.loads((tmp_path / "runs/sloppy/report.json").read_text())
        failing = {
            (trial["case"]["case_id"], result["name"])
            for trial in report["trials"]
            for result in trial["results"]
            if result["status"] == "fail"
        }
        assert failing == {("pick-nut", "no_other_item_touched")}
        names = {result["name"] for result in report["trials"][0]["results"]}
        assert {"envkit/diff_satisfies_rules", "envkit/rejected_calls_changed_nothing"} < names
        assert main(["show", "runs/sloppy", "--episode", "pick-nut#0"]) == 0
        assert "recount" in capsys.readouterr().out
    finally:
        sys.modules.pop("stockroom", None)
