"""A JSON Lines file of episodes (a world-model experiment's ``episodes.jsonl``) read
while another process saves it anew is read whole, old or new, with its blobs: the
save removes the old blobs once the new file is in place, and a reader that had read
the old lines then missed them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import Env, spaces

from onrecord import EvalCase
from onrecord.dynamics.experiment._store import load_episodes, save_episodes
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode
from tests.core.test_review_round56_saves import _killed, _saving_in_turns


class Frames(Env[Any, Any]):
    """Observations of 1.6 KB each: every episode keeps its own blobs."""

    observation_space = spaces.Box(-1, 1, (400,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self.np_random.random(400).astype(np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.np_random.random(400).astype(np.float32), 1.0, True, False, {}


def _episodes(seed: int) -> list[EpisodeEvidence]:
    return [
        capture_episode(
            Frames,
            lambda env, observation, info: env.step(0),
            case=EvalCase("frames", case_id=f"c{index}"),
            environment_id="frames/v1",
            observer_id="none/v1",
            observe=dict,
            seed=seed + index,
            max_steps=1,
        )
        for index in range(3)
    ]


def test_lines_read_during_resaves_are_the_old_or_the_new_whole(tmp_path: Path) -> None:
    old, new = _episodes(10), _episodes(20)
    path = tmp_path / "episodes.jsonl"
    save_episodes(path, old)
    pid = _saving_in_turns(lambda first: save_episodes(path, new if first else old))
    failures: list[str] = []
    seen: set[tuple[str, ...]] = set()
    loads = 0
    try:
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            try:
                loaded = load_episodes(path)
                assert loaded in (old, new)
                assert all(
                    a.blobs == b.blobs
                    for a, b in zip(loaded, old if loaded == old else new, strict=True)
                )
                seen.add(tuple(episode.digest for episode in loaded))
            except Exception as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
            loads += 1
    finally:
        _killed(pid)
    assert not failures, f"{len(failures)} of {loads} loads failed: {failures[:3]}"
    assert len(seen) == 2  # the file did change under the reader
