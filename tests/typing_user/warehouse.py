"""docs/writing-a-task.md: a Gymnasium provider with agents and checks (annotated)."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeVerdict, outcome_check
from onrecord.runner import AgentContext, GymnasiumProvider, agent_factory

SKUS = ["bolt", "nut", "washer"]
STOCK = {"bolt": 10, "nut": 8, "washer": 5}
Obs = NDArray[np.int64]
Act = dict[str, Any]


class Warehouse(gym.Env[Obs, Act]):
    action_space = gym.spaces.Dict(
        {
            "op": gym.spaces.Discrete(3),
            "sku": gym.spaces.Discrete(len(SKUS)),
            "qty": gym.spaces.Discrete(6),
        }
    )
    observation_space = gym.spaces.Box(0, 100, (len(SKUS),), np.int64)

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(suffix=".sqlite")
        os.close(fd)
        self.db = sqlite3.connect(self.path, isolation_level=None)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        super().reset(seed=seed)
        self.db.executescript(
            """DROP TABLE IF EXISTS items; DROP TABLE IF EXISTS reservations;
            CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL);
            CREATE TABLE reservations (id INTEGER PRIMARY KEY, sku TEXT, qty INTEGER);"""
        )
        self.db.executemany("INSERT INTO items VALUES (?, ?)", STOCK.items())
        return self._stock(), {}

    def _stock(self) -> Obs:
        rows = dict(self.db.execute("SELECT sku, stock FROM items"))
        return np.array([rows[sku] for sku in SKUS], dtype=np.int64)

    def step(self, action: Act) -> tuple[Obs, SupportsFloat, bool, bool, dict[str, Any]]:
        op, sku, qty = int(action["op"]), SKUS[int(action["sku"])], int(action["qty"])
        if op == 1:
            self.db.execute("UPDATE items SET stock = stock - ? WHERE sku = ?", (qty, sku))
            self.db.execute("INSERT INTO reservations (sku, qty) VALUES (?, ?)", (sku, qty))
        return self._stock(), 0.0, op == 0, False, {}

    def committed(self) -> dict[str, Any]:
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            return {
                "items": dict(db.execute("SELECT sku, stock FROM items")),
                "reservations": [
                    list(r) for r in db.execute("SELECT sku, qty FROM reservations ORDER BY id")
                ],
            }
        finally:
            db.close()

    def close(self) -> None:
        self.db.close()
        os.remove(self.path)


Interact = Callable[[Warehouse, Obs, dict[str, Any]], str]


def _plan(steps: Sequence[tuple[int, str, int]]) -> Interact:
    def interact(env: Warehouse, observation: Obs, info: dict[str, Any]) -> str:
        for op, sku, qty in steps:
            env.step({"op": op, "sku": SKUS.index(sku), "qty": qty})
        return "done"

    return interact


@agent_factory
def careful(context: AgentContext) -> Interact:
    order = context.case.input
    return _plan([(1, order["sku"], order["qty"]), (0, "bolt", 0)])


@outcome_check("reserved_as_ordered", "v1")
def reserved_as_ordered(episode: EpisodeEvidence) -> OutcomeVerdict:
    if episode.final_state is None:
        return OutcomeVerdict(None, "the database could not be read", {})
    order = episode.case["expected_output"]
    rows = episode.final_state["reservations"]
    return OutcomeVerdict(rows == [[order["sku"], order["qty"]]], "one reservation", {"rows": rows})


def committed(env: Warehouse) -> dict[str, Any]:
    return env.committed()


def make_for(case: EvalCase) -> Warehouse:
    return Warehouse()


def make() -> GymnasiumProvider:
    return GymnasiumProvider(
        Warehouse,
        environment_id="warehouse/v1",
        tasks=[EvalCase({"sku": "nut", "qty": 2}, {"sku": "nut", "qty": 2}, case_id="nut-2")],
        checks=[reserved_as_ordered],
        observe=committed,
        observer_id="warehouse-db/v1",
        agents={"careful": careful},
    )


def make_per_task() -> GymnasiumProvider:
    return GymnasiumProvider(
        make_for_task=make_for, environment_id="warehouse/v1", observe=committed
    )


print(make(), make_per_task())
