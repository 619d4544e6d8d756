"""Large observations (images) are stored beside the evidence by sha256, not as JSON
lists, and verified like everything else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError, SchemaError
from onrecord.integrations.gymnasium import capture_episode
from tests.core.envs import GenericEnv, capture_generic

IMAGE = spaces.Box(0, 255, (24, 24, 3), np.uint8)  # 1,728 bytes per frame


def _frames(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, IMAGE.shape, dtype=np.uint8) for _ in range(count)]


@pytest.fixture(scope="module")
def pixels() -> tuple[EpisodeEvidence, list[np.ndarray]]:
    frames = _frames(5)
    env = GenericEnv(
        lambda e, a: (frames[e.steps_taken - 1], 1.0, e.steps_taken == 5, False, {}),
        observation_space=IMAGE,
    )

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(5):
            env.step(1)

    episode = capture_episode(
        lambda: env,
        interact,
        case=EvalCase("pixels"),
        environment_id="pixels/v1",
        observer_id="none",
        observe=dict,
        seed=3,
        max_steps=10,
    )
    return episode, frames


def test_large_observations_are_blobs_not_json_lists(pixels: Any) -> None:
    episode, frames = pixels
    record = episode.to_bytes()
    assert len(record) < 5 * IMAGE.shape[0] * IMAGE.shape[1]  # far below the pixel count
    blob = episode.data["steps"]["observation"]["$blob"]
    assert blob["dtype"] == "|u1"
    assert blob["shape"] == [5, 24, 24, 3]
    assert set(episode.blobs) == {
        blob["sha256"],
        episode.data["initial"]["observation"]["$blob"]["sha256"],
    }
    for transition, frame in zip(episode.transitions(), frames, strict=True):
        assert np.array_equal(np.asarray(transition["observation"], dtype=np.uint8), frame)
    assert np.asarray(episode.initial["observation"]).shape == (24, 24, 3)


def test_blobs_round_trip_through_files(pixels: Any, tmp_path: Path) -> None:
    episode, _ = pixels
    episode.save_json(tmp_path / "episode.json")
    assert sorted(p.name for p in (tmp_path / "episode.json.blobs").iterdir()) == sorted(
        episode.blobs
    )
    loaded = EpisodeEvidence.load(tmp_path / "episode.json")
    assert loaded == episode
    assert loaded.transitions()[2]["observation"] == episode.transitions()[2]["observation"]


def test_a_changed_blob_fails_verification(pixels: Any, tmp_path: Path) -> None:
    episode, _ = pixels
    episode.save_json(tmp_path / "episode.json")
    digest = episode.data["steps"]["observation"]["$blob"]["sha256"]
    blob = tmp_path / "episode.json.blobs" / digest
    data = bytearray(blob.read_bytes())
    data[100] ^= 0xFF
    blob.write_bytes(bytes(data))
    with pytest.raises(ConsistencyError, match="does not match its sha256"):
        EpisodeEvidence.load(tmp_path / "episode.json")


def test_missing_blobs_are_named(pixels: Any) -> None:
    episode, _ = pixels
    with pytest.raises(SchemaError, match=r"keep the '\.blobs' folder next to the evidence"):
        EpisodeEvidence.from_dict(episode.data)
    assert EpisodeEvidence.from_dict(episode.data, episode.blobs) == episode


def test_small_observations_stay_inline() -> None:
    env = GenericEnv(lambda e, a: (e.observation_space.sample(), 0.0, True, False, {}))
    episode = capture_generic(env, lambda e, o, i: e.step(0))
    assert episode.blobs == {}
    assert isinstance(episode.data["steps"]["observation"], list)
