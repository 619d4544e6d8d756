"""Episodes saved as JSON Lines keep their blobs.

Before: ``experiment._store.save_episodes`` wrote each episode's canonical line and
nothing else, so the large observations of a pixel environment (stored as blobs beside
the record, not in it) were lost: the file could be neither loaded nor verified. Now
the blobs of every line go to one ``<file>.blobs/`` folder beside it, as for a single
saved episode, and ``load_episodes`` and ``onrecord verify`` read them from there.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord.dynamics.experiment._store import load_episodes, save_episodes, write_manifest
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError, SchemaError
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord


class Frames(gym.Env[Any, int]):
    """84×84 RGB observations, as an Atari-style pixel environment produces."""

    observation_space = gym.spaces.Box(0, 255, (84, 84, 3), dtype=np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        return self.observation_space.sample(), 0.0, self.steps >= 4, False, {}


def _play(env: Any, observation: Any, info: Any) -> str:
    while True:
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            return "finished"


def _episode(seed: int) -> EpisodeEvidence:
    return capture_episode(
        Frames,
        _play,
        case=EvalCase("pixels", case_id=f"frames-{seed}"),
        environment_id="frames/v1",
        observer_id="none/v1",
        observe=dict,
        seed=seed,
        max_steps=10,
    )


@pytest.fixture(scope="module")
def episodes() -> list[EpisodeEvidence]:
    captured = [_episode(seed) for seed in (1, 2)]
    assert all(episode.blobs for episode in captured)  # the frames are blobs
    return captured


def test_lines_keep_their_blobs_and_load(episodes: list[EpisodeEvidence], tmp_path: Path) -> None:
    path = save_episodes(tmp_path / "frames.episodes.jsonl", episodes)
    folder = tmp_path / "frames.episodes.jsonl.blobs"
    expected = {digest for episode in episodes for digest in episode.blobs}
    assert {entry.name for entry in folder.iterdir()} == expected
    loaded = load_episodes(path)
    assert [e.digest for e in loaded] == [e.digest for e in episodes]
    first = np.asarray(loaded[0].transitions()[0]["observation"], dtype=np.uint8)
    assert first.shape == (84, 84, 3)
    assert np.array_equal(first, np.asarray(episodes[0].transitions()[0]["observation"]))


def test_verify_reads_the_lines_the_folder_and_a_blob(
    episodes: list[EpisodeEvidence], tmp_path: Path
) -> None:
    path = save_episodes(tmp_path / "frames.episodes.jsonl", episodes)
    blob = next((tmp_path / "frames.episodes.jsonl.blobs").iterdir())
    for target in (path, blob.parent, blob):
        done = onrecord("verify", target)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("ok  ")
    assert "2 records" in onrecord("verify", path).stdout


def test_a_changed_missing_or_added_blob_is_refused(
    episodes: list[EpisodeEvidence], tmp_path: Path
) -> None:
    path = save_episodes(tmp_path / "frames.episodes.jsonl", episodes)
    folder = tmp_path / "frames.episodes.jsonl.blobs"
    blob = sorted(folder.iterdir())[0]
    original = blob.read_bytes()

    blob.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(ConsistencyError, match="does not match its sha256"):
        load_episodes(path)
    done = onrecord("verify", path)
    assert done.returncode == 3
    assert blob.name in done.stderr

    blob.unlink()
    with pytest.raises(SchemaError, match=r"was not found; keep the '\.blobs' folder"):
        load_episodes(path)
    assert onrecord("verify", path).returncode == 3

    blob.write_bytes(original)
    (folder / ("0" * 64)).write_bytes(b"stray")
    with pytest.raises(ConsistencyError, match="is not a blob this evidence references"):
        load_episodes(path)
    assert onrecord("verify", path).returncode == 3


def test_saving_again_keeps_exactly_the_blobs_referenced(
    episodes: list[EpisodeEvidence], tmp_path: Path
) -> None:
    path = tmp_path / "frames.episodes.jsonl"
    folder = tmp_path / "frames.episodes.jsonl.blobs"
    save_episodes(path, episodes)
    save_episodes(path, episodes[:1])
    assert {entry.name for entry in folder.iterdir()} == set(episodes[0].blobs)
    assert [e.digest for e in load_episodes(path)] == [episodes[0].digest]
    save_episodes(path, [])  # no blobs left: no folder either
    assert not folder.exists()
    assert load_episodes(path) == []


def test_an_experiment_directory_pins_the_blobs(
    episodes: list[EpisodeEvidence], tmp_path: Path
) -> None:
    root = tmp_path / "wm"
    save_episodes(root / "data" / "frames.episodes.jsonl", episodes)
    listed = write_manifest(root)
    # The manifest lists every blob of both episodes with its own sha256.
    folder = "data/frames.episodes.jsonl.blobs"
    blobs = {f"{folder}/{digest}" for episode in episodes for digest in episode.blobs}
    assert blobs
    assert blobs <= set(listed)
    for name in blobs:
        assert listed[name].removeprefix("sha256:") == (
            hashlib.sha256((root / name).read_bytes()).hexdigest()
        )
    done = onrecord("verify", root)
    assert done.returncode == 0, done.stderr
    blob = next((root / folder).iterdir())
    done = onrecord("verify", blob)
    assert done.returncode == 0, done.stderr
    # Pinned: one changed byte of a blob and the directory no longer verifies.
    original = blob.read_bytes()
    blob.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    done = onrecord("verify", root)
    assert done.returncode == 3, done.stdout + done.stderr
    assert blob.name in done.stderr
