"""A tool world under Gymnasium for the ``onrecord show`` tests: saved as episode
evidence (``python -m tests.core.show_tool_world OUT.json``), run with ``onrecord run
tests.core.show_tool_world:make``, or saved as a tool-world episode directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from onrecord import EvalCase
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, ToolWorldEnv, save_episode, tool
from onrecord.episode import EpisodeEvidence, OutcomeVerdict, outcome_check
from onrecord.integrations.gymnasium import capture_episode
from onrecord.runner import GymnasiumProvider, agent_factory

SNAPSHOT = Snapshot.build(
    "show-stockroom",
    """
    CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL CHECK (stock >= 0));
    CREATE TABLE picks (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL,
                        memo TEXT NOT NULL);
    """,
    lambda conn, rng: conn.executemany(
        "INSERT INTO items VALUES (?, ?)", [("bolt", 10), ("nut", 8)]
    ),
)
LONG_MEMO = "q" * 3000
"""A memo of 3,000 characters: the action carrying it is longer still."""
CASE = EvalCase({"sku": "nut", "qty": 3}, case_id="pick-nut")


@tool(writes=True, example={"sku": "bolt", "qty": 1, "memo": ""})
def pick(ctx: ToolContext, sku: str, qty: int, memo: str) -> dict[str, Any]:
    """Take qty of an item off the shelf."""
    if ctx.one("SELECT 1 FROM items WHERE sku = ?", (sku,)) is None:
        ctx.reject(f"there is no item {sku!r}")
    ctx.execute("UPDATE items SET stock = stock - ? WHERE sku = ?", (qty, sku))
    cursor = ctx.execute("INSERT INTO picks (sku, qty, memo) VALUES (?, ?, ?)", (sku, qty, memo))
    return {"pick_id": cursor.lastrowid}


def _act(sku: str, qty: int, memo: str = "") -> str:
    return json.dumps({"tool": "pick", "arguments": {"sku": sku, "qty": qty, "memo": memo}})


ACTIONS = [
    _act("zzz", 1),  # rejected by the tool: rule_violation
    _act("bolt", 100),  # refused by the CHECK constraint: tool_error
    json.dumps({"tool": "nope"}),  # unknown_tool
    _act("nut", 3, LONG_MEMO),  # succeeds, with a 3,000-character memo
    *[_act("nut", 0) for _ in range(45)],  # ok calls, past the first 40 steps
    _act("gone", 1, "late"),  # index 49 (world step 50): refused late, shown by default
    '{"tool": "finish"}',
]


def interact(env: Any, observation: Any, info: Any) -> str:
    for action in ACTIONS:
        env.step(action)
    return "finished"


def world() -> ToolWorld:
    return ToolWorld(SNAPSHOT, [pick], foreign_keys=True)


def evidence() -> EpisodeEvidence:
    built = world()
    try:
        return capture_episode(
            lambda: ToolWorldEnv(built, case=CASE),
            interact,
            case=CASE,
            environment_id="show-stockroom/v1",
            observer_id="state-version/v1",
            observe=lambda: {"state_version": built.state_version},
            seed=0,
            max_steps=len(ACTIONS),
        )
    finally:
        built.close()


def saved_episode(directory: Path) -> Path:
    """The same calls straight on a world, saved as a tool-world episode directory."""
    with world() as built:
        built.reset(seed=0, case=CASE)
        for action in ACTIONS[:-1]:
            parsed = json.loads(action)
            built.call(parsed["tool"], parsed.get("arguments"))
        return save_episode(built, directory).path


class Stockroom(ToolWorldEnv):
    """A fresh world per episode, closed with the env."""

    def __init__(self, case: EvalCase) -> None:
        super().__init__(world(), case=case)

    def close(self) -> None:
        self.world.close()


@agent_factory
def clumsy(context: Any) -> Any:
    return interact


@outcome_check("picked", "v1")
def picked(episode: Any) -> OutcomeVerdict:
    return OutcomeVerdict(True, "graded elsewhere", {})


def make() -> GymnasiumProvider:
    return GymnasiumProvider(
        make_for_task=Stockroom,
        environment_id="show-stockroom/v1",
        tasks=[CASE],
        checks=[picked],
        observe=lambda env: {"state_version": env.unwrapped.world.state_version},
        observer_id="state-version/v1",
        agents={"clumsy": clumsy},
    )


if __name__ == "__main__":
    evidence().save_json(sys.argv[1])
