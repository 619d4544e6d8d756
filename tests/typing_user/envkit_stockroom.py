"""docs/envkit.md: a tool world, its checks and a runner provider (annotated)."""

from __future__ import annotations

import random
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, assert_type

from onrecord import EvalCase
from onrecord.envkit import (
    Snapshot,
    Tool,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    changed,
    check,
    created,
    failed,
    no_other_changes,
    only_tables,
    passed,
    run_checks,
    save_episode,
    tool,
)
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.runner import AgentContext, ToolWorldProvider, agent_factory

SCHEMA = """
CREATE TABLE claims (id INTEGER PRIMARY KEY, payer TEXT NOT NULL, amount REAL NOT NULL);
CREATE TABLE allocations (id INTEGER PRIMARY KEY, claim_id INTEGER NOT NULL, amount REAL NOT NULL);
CREATE TABLE notes (id INTEGER PRIMARY KEY, claim_id INTEGER, body TEXT);
"""


def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
    conn.executemany(
        "INSERT INTO claims VALUES (?, ?, ?)",
        [(i, f"payer-{i % 3}", round(rng.uniform(10, 100), 2)) for i in range(1, 21)],
    )
    conn.execute("INSERT INTO notes VALUES (1, 17, 'payer called: pay half')")


@tool(writes=True, example={"claim_id": 1, "amount": 5.0})
def allocate(
    ctx: ToolContext, claim_id: int, amount: Annotated[float, {"minimum": 0}]
) -> dict[str, Any]:
    """Allocate an amount to a claim."""
    claim = ctx.one("SELECT amount FROM claims WHERE id = ?", (claim_id,))
    if claim is None:
        ctx.reject(f"claim {claim_id} does not exist")
    cur = ctx.execute(
        "INSERT INTO allocations (claim_id, amount) VALUES (?, ?)", (claim_id, amount)
    )
    return {"allocation_id": cur.lastrowid}


@tool
def read_note(ctx: ToolContext, note_id: int) -> dict[str, Any] | None:
    """Read a case note."""
    return ctx.reveal("notes", note_id)


snapshot = Snapshot.build("claims-basic", SCHEMA, populate, seed=1)
world = ToolWorld(snapshot, [allocate, read_note], hidden=["notes"])
case = EvalCase(
    "Allocate 5.00 to claim 17",
    {
        "rules": [
            created("allocations", where={"claim_id": 17, "amount": 5.0}),
            only_tables("allocations"),
        ]
    },
    case_id="alloc-17",
)
world.reset(case=case, seed=0, run_id="run-1")
world.call("read_note", {"note_id": 1})
world.call("allocate", {"claim_id": 17, "amount": 5.0})
with tempfile.TemporaryDirectory() as scratch:
    episode: ToolEpisode = save_episode(world, Path(scratch) / "alloc-17")
    print(run_checks(episode, ["envkit/diff_satisfies_rules"]))
world.close()


@check("allocations_sum_to_line", "1")
def allocations_sum_to_line(episode: ToolEpisode) -> OutcomeVerdict:
    ok = True
    return passed("allocations add up") if ok else failed("they do not", missing=1)


STOCK: dict[str, int] = {"bolt": 10, "nut": 8}
SNAPSHOT = Snapshot.build(
    "stockroom",
    """
    CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL);
    CREATE TABLE picks (id INTEGER PRIMARY KEY, sku TEXT NOT NULL REFERENCES items(sku),
                        qty INTEGER NOT NULL);""",
    lambda conn, rng: conn.executemany("INSERT INTO items VALUES (?, ?)", STOCK.items()),
)


@tool(writes=True, example={"sku": "bolt", "qty": 1})
def pick(ctx: ToolContext, sku: str, qty: int) -> dict[str, Any]:
    """Take qty of an item off the shelf."""
    if (
        ctx.execute(
            "UPDATE items SET stock = stock - ? WHERE sku = ? AND stock >= ?", (qty, sku, qty)
        ).rowcount
        != 1
    ):
        ctx.reject(f"cannot pick {qty} {sku}")
    return {
        "pick_id": ctx.execute("INSERT INTO picks (sku, qty) VALUES (?, ?)", (sku, qty)).lastrowid
    }


@tool(writes=True, example={"sku": "bolt", "qty": 1})
def recount(ctx: ToolContext, sku: str, qty: int) -> dict[str, Any]:
    """Correct an item's stock by qty (negative to take some off)."""
    ctx.execute("UPDATE items SET stock = stock + ? WHERE sku = ?", (qty, sku))
    return {"sku": sku}


def order(sku: str, qty: int) -> EvalCase:
    return EvalCase(
        {"sku": sku, "qty": qty},
        {
            "rules": [
                changed("items", where={"sku": sku}, to={"stock": STOCK[sku] - qty}),
                created("picks", where={"sku": sku, "qty": qty}),
                no_other_changes(),
            ]
        },
        case_id=f"pick-{sku}",
    )


Call = dict[str, Any]


def script(*calls: Call) -> Callable[[Mapping[str, Any]], Call]:
    steps: Iterator[Call] = iter(calls)
    return lambda observation: next(steps)


def pick_and_finish(order: Mapping[str, Any]) -> list[Call]:
    return [
        {"tool": "pick", "arguments": dict(order)},
        {"tool": "finish", "arguments": {"message": "picked"}},
    ]


@agent_factory
def careful(context: AgentContext) -> Callable[[Mapping[str, Any]], Call]:
    return script(*pick_and_finish(context.case.input))


def _no_other_item_touched(episode: ToolEpisode) -> OutcomeVerdict:
    ordered = episode.task["input"]["sku"] if episode.task else None
    touched = sorted(
        {e["key"] for e in episode.audit if e["table"] == "items" and e["key"] != ordered}
    )
    if touched:
        return failed("another item's stock was written", items=touched)
    return passed("no other item's stock was written")


no_other_item_touched = OutcomeCheck("no_other_item_touched", "v1", _no_other_item_touched)


def make() -> ToolWorldProvider:
    return ToolWorldProvider(
        SNAPSHOT,
        [pick, recount],
        environment_id="stockroom/v1",
        tasks=[order("nut", 3), order("bolt", 2)],
        checks=[no_other_item_touched],
        agents={"careful": careful},
        foreign_keys=True,
        max_steps=10,
    )


assert_type(pick, Tool)
assert_type(allocations_sum_to_line, OutcomeCheck)
assert_type(careful(AgentContext(order("nut", 1), 0, 0)), Callable[[Mapping[str, Any]], Call])
print(make())
