"""Messages to a developer writing rules and tools (a pharmacy stock ledger probe):
a refused rule says what the name it could not find is, and a reveal of a table that
is not hidden says it is the tool's bug."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord import EvalCase
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolWorld,
    changed,
    check_rules,
    created,
    replay,
    run_checks,
    save_episode,
    tool,
)
from onrecord.envkit._rule_names import schema_facts
from onrecord.errors import InputError
from onrecord.runner import ToolWorldProvider

SCHEMA = """
CREATE TABLE drugs (ndc TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE stock (ndc TEXT NOT NULL, lot TEXT NOT NULL, qty INTEGER NOT NULL,
                    price REAL NOT NULL DEFAULT 1.0,
                    value REAL GENERATED ALWAYS AS (qty * price) VIRTUAL,
                    PRIMARY KEY (ndc, lot)) WITHOUT ROWID;
CREATE TABLE movements (id INTEGER PRIMARY KEY, ndc TEXT NOT NULL, delta INTEGER NOT NULL);
CREATE VIEW on_hand AS SELECT d.name, SUM(s.qty) AS qty
    FROM stock s JOIN drugs d ON d.ndc = s.ndc GROUP BY d.ndc;
"""


def populate(conn, rng) -> None:  # type: ignore[no-untyped-def]
    conn.execute("INSERT INTO drugs VALUES ('0001', 'amoxicillin')")
    conn.execute("INSERT INTO stock (ndc, lot, qty) VALUES ('0001', 'A1', 10)")


@tool(writes=True, example={"ndc": "0001", "lot": "A1", "qty": 3})
def receive(ctx: ToolContext, ndc: str, lot: str, qty: int) -> None:
    """Receive stock."""
    ctx.execute("UPDATE stock SET qty = qty + ? WHERE ndc = ? AND lot = ?", (qty, ndc, lot))
    ctx.execute("INSERT INTO movements (ndc, delta) VALUES (?, ?)", (ndc, qty))


@tool
def drug_info(ctx: ToolContext, ndc: str) -> dict | None:
    """Look a drug up (the author forgot to declare drugs hidden)."""
    return ctx.reveal("drugs", ndc)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("pharmacy", SCHEMA, populate)


def refusal(snap: Snapshot, rule: dict) -> str:  # type: ignore[type-arg]
    tables = {table.name: table.columns for table in snap.tables}
    with pytest.raises(InputError) as raised:
        check_rules({}, [rule], tables=tables, schema=lambda: schema_facts(snap.connection))
    return str(raised.value)


def test_a_misspelt_column_gets_the_closest_and_no_generated_column_hint(snap: Snapshot) -> None:
    message = refusal(snap, changed("stock", where={"ndc": "0001"}, to={"qyt": 5}))
    assert "Did you mean 'qty'?" in message
    assert "generated" not in message


def test_rowid_on_a_without_rowid_table_names_its_key(snap: Snapshot) -> None:
    message = refusal(snap, created("stock", where={"rowid": 2}))
    assert "stock is a WITHOUT ROWID table and has no rowid" in message
    assert "['ndc', 'lot']" in message
    assert "generated" not in message


def test_a_generated_column_keeps_its_hint(snap: Snapshot) -> None:
    message = refusal(snap, changed("stock", to={"value": 30.0}))
    assert "'value' is a generated column" in message
    assert "name the columns it is computed from" in message


def test_a_view_is_named_as_a_view_with_the_tables_it_reads(snap: Snapshot) -> None:
    message = refusal(snap, created("on_hand"))
    assert "'on_hand' is a view, which rules cannot watch" in message
    assert "['drugs', 'stock']" in message


def test_the_named_check_explains_from_the_episode_database(snap: Snapshot, tmp_path: Path) -> None:
    case = EvalCase("receive", {"rules": [created("stock", where={"rowid": 2})]})
    with ToolWorld(snap, [receive]) as world:
        world.reset(case=case)
        world.call("receive", {"ndc": "0001", "lot": "A1", "qty": 3})
        episode = save_episode(world, tmp_path / "ep")
    (result,) = run_checks(episode, ["envkit/diff_satisfies_rules"])
    assert result.status == "evaluator_error"
    assert "WITHOUT ROWID table and has no rowid" in result.reason


def test_the_provider_refuses_a_view_rule_saying_it_is_a_view(snap: Snapshot) -> None:
    with pytest.raises(InputError, match="'on_hand' is a view, which rules cannot watch"):
        ToolWorldProvider(
            snap,
            [receive],
            environment_id="pharmacy",
            tasks=[EvalCase("x", {"rules": [created("on_hand")]}, case_id="t")],
        )


def test_revealing_a_table_that_is_not_hidden_says_it_is_the_tools_bug(
    snap: Snapshot, tmp_path: Path
) -> None:
    with ToolWorld(snap, [receive, drug_info], hidden=["movements"]) as world:
        world.reset(seed=1)
        event = world.call("drug_info", {"ndc": "0001"})
        # The status stays what recorded episodes hold, so they replay identically.
        assert (event["status"], event["error"]["type"]) == ("rejected", "rule_violation")
        message = event["error"]["message"]
        assert message.startswith("tool bug, not the agent's: ctx.reveal('drugs', ...)")
        assert "hidden tables: ['movements']" in message
        world.call("receive", {"ndc": "0001", "lot": "A1", "qty": 2})
        episode = save_episode(world, tmp_path / "ep")
        assert replay(world, episode).matches


def test_without_the_schema_a_rowid_is_not_called_a_generated_column(snap: Snapshot) -> None:
    tables = {table.name: table.columns for table in snap.tables}
    with pytest.raises(InputError) as raised:
        check_rules({}, [created("drugs", where={"rowid": 1})], tables=tables)
    assert "drugs has a declared primary key: name its key columns instead of rowid" in str(
        raised.value
    )
    assert "generated" not in str(raised.value)


def test_inject_failure_says_why_the_tool_cannot_fail_so(snap: Snapshot) -> None:
    with ToolWorld(snap, [receive, drug_info]) as world:
        with pytest.raises(InputError) as misspelt:
            world.inject_failure("recieve")
        assert "'recieve' is not a tool of this world" in str(misspelt.value)
        assert "its write tools: ['receive']" in str(misspelt.value)
        with pytest.raises(InputError, match=r"'drug_info' is read-only \(writes=False\)"):
            world.inject_failure("drug_info")
        world.reset()
        world.inject_failure("receive")
        event = world.call("receive", {"ndc": "0001", "lot": "A1", "qty": 1})
        assert event["error"]["type"] == "injected_failure"
