"""Regressions introduced by the day's fixes, each pinned by a test that failed before."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord._canonical import state_bytes, to_portable
from onrecord.errors import LifecycleError, PortabilityError
from onrecord.integrations.gymnasium import capture_episode

LABEL = np.array(["left", "right"])[0]  # a numpy.str_, as indexing a text array gives


@pytest.mark.parametrize(
    "state",
    [
        {"label": LABEL, "pos": np.zeros(2)},
        {"label": LABEL, "pos": (1, 2)},
        [LABEL, (1,)],
        {"label": LABEL, "speed": np.float32(0.5)},
    ],
)
def test_numpy_text_beside_arrays_or_tuples_is_state(state: Any) -> None:
    # A numpy.str_ is text (orjson writes it as such); it was refused as soon as
    # anything beside it did not read back equal, i.e. only sometimes.
    raw = state_bytes(state)
    assert b'"left"' in raw
    assert "left" in str(to_portable(state))


@pytest.mark.parametrize(
    "state",
    [
        {"id": uuid.UUID(int=1), "pos": np.zeros(2)},
        {"t": np.datetime64("2024-01-01"), "pos": (1, 2)},
        {"t": np.array(["2024-01-01"], dtype="datetime64[D]"), "mode": "x"},
    ],
)
def test_objects_written_as_text_are_still_refused(state: Any) -> None:
    with pytest.raises(PortabilityError):
        state_bytes(state)


def test_sealed_recorder_stays_sealed_after_a_step_in_flight() -> None:
    # A step running in another thread when interact returned restored the step limit
    # as it ended, undoing seal(): the thread's next step reached the environment.
    inside, release = threading.Event(), threading.Event()
    calls: list[int] = []
    second: list[str] = []

    class Slow(gym.Env[int, int]):
        observation_space = spaces.Discrete(3)
        action_space = spaces.Discrete(2)

        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[int, dict[str, Any]]:
            super().reset(seed=seed)
            return 0, {}

        def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
            calls.append(action)
            if len(calls) == 1:
                inside.set()
                release.wait(10)
            return 0, 0.0, False, False, {}

    def worker(env: Any) -> None:
        env.step(0)  # in flight while interact returns
        try:
            env.step(1)
            second.append("reached the environment")
        except LifecycleError:
            second.append("refused")

    threads: list[threading.Thread] = []

    def interact(env: Any, observation: Any, info: Any) -> str:
        thread = threading.Thread(target=worker, args=(env,))
        thread.start()
        threads.append(thread)
        assert inside.wait(10)
        return "left a step in flight"

    capture_episode(
        Slow,
        interact,
        case=EvalCase("x", case_id="sealed"),
        environment_id="slow",
        observer_id="none",
        observe=lambda: None,
        seed=0,
        max_steps=10,
    )
    release.set()
    threads[0].join(10)
    assert second == ["refused"]
    assert calls == [0]
