"""Tiny real environments for the core tests: a SQLite-backed invoice environment, and a
generic environment with injectable reset/step (in the spirit of Gymnasium's
GenericTestEnv) — real gymnasium.Env subclasses, no mocks."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

POST, FINISH, CHANGE_PROTECTED, RESTORE_PROTECTED = range(4)


class InvoiceEnv(gym.Env[int, int]):
    """Post an invoice of 1234 cents into a real SQLite file; a protected row must never
    change. ``raise_after_commit`` makes a post commit and then raise."""

    def __init__(self, path: Path, *, raise_after_commit: bool = False) -> None:
        self.path = path
        self.raise_after_commit = raise_after_commit
        self.action_space = spaces.Discrete(4)
        self.observation_space = spaces.Discrete(2)
        self.db = sqlite3.connect(path)
        self.db.executescript(
            "CREATE TABLE IF NOT EXISTS invoices (invoice_id TEXT, amount_cents INTEGER);"
            "CREATE TABLE IF NOT EXISTS protected (id INTEGER PRIMARY KEY, value TEXT);"
            "INSERT OR IGNORE INTO protected VALUES (1, 'original');"
        )
        self.db.commit()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        if action == POST:
            self.db.execute("INSERT INTO invoices VALUES ('invoice-17', 1234)")
            self.db.commit()
            if self.raise_after_commit:
                raise ConnectionError("acknowledgement lost after commit")
        elif action == CHANGE_PROTECTED:
            self.db.execute("UPDATE protected SET value = 'tampered' WHERE id = 1")
            self.db.commit()
        elif action == RESTORE_PROTECTED:
            self.db.execute("UPDATE protected SET value = 'original' WHERE id = 1")
            self.db.commit()
        return int(action == FINISH), 0.0, action == FINISH, False, {}

    def close(self) -> None:
        self.db.close()


def read_committed(path: Path) -> dict[str, Any]:
    """The observer: a read-only connection, independent of the tool's acknowledgement."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT invoice_id, amount_cents FROM invoices ORDER BY rowid")
        invoices = [{"invoice_id": i, "amount_cents": a} for i, a in rows]
        protected = db.execute("SELECT value FROM protected WHERE id = 1").fetchone()[0]
    finally:
        db.close()
    return {"invoice_rows": invoices, "protected": protected}


class GenericEnv(gym.Env[Any, Any]):
    """A real environment whose reset and step are injected by the test."""

    def __init__(
        self,
        step: Callable[[GenericEnv, Any], tuple[Any, float, bool, bool, dict[str, Any]]],
        *,
        action_space: spaces.Space[Any] | None = None,
        observation_space: spaces.Space[Any] | None = None,
        reset_info: dict[str, Any] | None = None,
        close: Callable[[], None] | None = None,
    ) -> None:
        self._step = step
        self.action_space = action_space or spaces.Discrete(2)
        self.observation_space = observation_space or spaces.Box(-1, 1, (2,), np.float32)
        self._reset_info = reset_info or {}
        self._close = close
        self.steps_taken = 0
        self.closed = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.observation_space.sample(), dict(self._reset_info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps_taken += 1
        return self._step(self, action)

    def close(self) -> None:
        self.closed = True
        if self._close is not None:
            self._close()


def capture_generic(
    env: GenericEnv, interact: Any, *, observe: Any = dict, max_steps: int = 2
) -> Any:
    """``capture_episode`` of one prepared ``GenericEnv`` with neutral labels."""
    return capture_from(lambda: env, interact, observe=observe, max_steps=max_steps)


def capture_from(factory: Any, interact: Any, *, observe: Any = dict, max_steps: int = 2) -> Any:
    """``capture_episode`` of whatever ``factory`` returns, with neutral labels."""
    from onrecord import EvalCase
    from onrecord.integrations.gymnasium import capture_episode

    return capture_episode(
        factory,
        interact,
        case=EvalCase("x"),
        environment_id="e",
        observer_id="o",
        observe=observe,
        seed=0,
        max_steps=max_steps,
    )
