"""``EpisodeEvidence.failures()`` lists failures in the order they happened, not grouped
by phase: a caller reading the first failure gets the one that came first. Real
Gymnasium CartPole episodes, whose step raises at chosen attempts, whose observer fails
at chosen reads and whose close() may raise."""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode

ATTEMPTS = 5


class Flaky(gym.Wrapper[Any, Any, Any, Any]):
    """CartPole whose step raises on the attempts in ``failing`` (0-based) and whose
    close() raises when ``close_fails``."""

    def __init__(self, failing: set[int], close_fails: bool) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.failing, self.close_fails, self.attempt = failing, close_fails, 0

    def step(self, action: Any) -> Any:
        attempt, self.attempt = self.attempt, self.attempt + 1
        if attempt in self.failing:
            raise RuntimeError(f"step {attempt} crashed")
        return super().step(action)

    def close(self) -> None:
        super().close()
        if self.close_fails:
            raise OSError("port stuck")


def flaky_episode(
    failing_steps: set[int], failing_reads: set[int], close_fails: bool = False
) -> EpisodeEvidence:
    """``failing_reads`` numbers the observer's reads: 0 after reset, i + 1 after attempt
    i, ``ATTEMPTS + 1`` before cleanup."""
    holder: dict[str, Any] = {"reads": 0}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = Flaky(failing_steps, close_fails)
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for _ in range(ATTEMPTS):
            with contextlib.suppress(RuntimeError):  # recorded; go on
                env.step(0)
        return "done"

    def observe() -> dict[str, Any]:
        read, holder["reads"] = holder["reads"], holder["reads"] + 1
        if read in failing_reads:
            raise RuntimeError(f"read {read} failed")
        return {"steps": holder["env"].attempt}

    return capture_episode(
        factory,
        interact,
        case=EvalCase("Balance", case_id="cartpole/flaky"),
        environment_id="CartPole-v1",
        observer_id="attempts/v1",
        observe=observe,
        seed=1,
        max_steps=ATTEMPTS + 2,
    )


def order(episode: EpisodeEvidence) -> list[tuple[str, str, int, str]]:
    """Each failure's phase, read, index and message, without the place the user's code
    raised it (since round 51): ``_places`` checks those."""
    places = _places()
    return [
        (f["phase"], f.get("read", ""), f["index"], _unplaced(f["message"], places))
        for f in episode.failures()
    ]


def _places() -> dict[str, str]:
    with open(__file__, encoding="utf-8") as source:
        lines = source.read().splitlines()
    step = lines.index('            raise RuntimeError(f"step {attempt} crashed")') + 1
    read = lines.index('            raise RuntimeError(f"read {read} failed")') + 1
    close = lines.index('            raise OSError("port stuck")') + 1
    return {
        "crashed": f" (at {__file__}:{step} in step)",
        "read ": f" (at {__file__}:{read} in observe)",
        "port stuck": f" (at {__file__}:{close} in close)",
    }


def _unplaced(message: str, places: dict[str, str]) -> str:
    for marker, place in places.items():
        if marker in message:  # the user's code raised these
            assert message.endswith(place), message
            return message.removesuffix(place)
    return message


def test_an_observer_failure_before_a_later_step_error_comes_first() -> None:
    # The read after reset fails, then attempt 3 raises: the read came first.
    episode = flaky_episode({3}, {0})
    assert order(episode) == [
        ("observe", "after_reset", 0, "RuntimeError: read 0 failed"),
        ("step", "", 3, "step 3 crashed"),
    ]


def test_every_kind_interleaves_in_time_order(tmp_path: Path) -> None:
    # Reads: 0 after reset, 2 after attempt 1, 4 after attempt 3, 6 before cleanup.
    episode = flaky_episode({1, 3}, {0, 2, 4, ATTEMPTS + 1}, close_fails=True)
    expected = [
        ("observe", "after_reset", 0, "RuntimeError: read 0 failed"),
        ("step", "", 1, "step 1 crashed"),
        ("observe", "after_step", 1, "RuntimeError: read 2 failed"),
        ("step", "", 3, "step 3 crashed"),
        ("observe", "after_step", 3, "RuntimeError: read 4 failed"),
        ("observe", "before_cleanup", ATTEMPTS, f"RuntimeError: read {ATTEMPTS + 1} failed"),
        ("cleanup", "", ATTEMPTS, "port stuck"),
    ]
    assert order(episode) == expected
    # The same order from evidence saved and loaded again, and from a pickled copy.
    assert order(EpisodeEvidence.load(episode.save_json(tmp_path / "flaky.json"))) == expected
    assert order(pickle.loads(pickle.dumps(episode))) == expected


@pytest.mark.parametrize("read", [1, 2])
def test_a_read_after_an_earlier_step_precedes_a_later_step_error(read: int) -> None:
    # Read ``read`` follows attempt read - 1, which is before attempt 2 raises.
    first = order(flaky_episode({2}, {read}))[0]
    assert first == ("observe", "after_step", read - 1, f"RuntimeError: read {read} failed")
