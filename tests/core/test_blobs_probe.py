"""Evidence files and their blobs folder: every tampering is refused with an onrecord
error naming the file at fault, and nothing legitimate is (a re-save, a symlink, a
move together with the folder)."""

from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord._canonical import content_digest
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError, EvidenceError, SchemaError
from onrecord.integrations.gymnasium import capture_episode


class CameraEnv(gym.Env[Any, Any]):
    """84x84 RGB frames, float arrays in ``info``: a small Atari-like environment."""

    def __init__(self, steps: int) -> None:
        self.observation_space = spaces.Box(0, 255, (84, 84, 3), np.uint8)
        self.action_space = spaces.Discrete(3)
        self.steps, self.t = steps, 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {"depth": np.linspace(0, 1, 300)}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        info = {"depth": np.full(200, self.t, np.float32)}
        return self.observation_space.sample(), 1.0, self.t >= self.steps, False, info


def _capture(seed: int, steps: int = 3) -> EpisodeEvidence:
    holder: dict[str, CameraEnv] = {}

    def factory() -> CameraEnv:
        holder["env"] = CameraEnv(steps)
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(steps):
            env.step(0)

    return capture_episode(
        factory,
        interact,
        case=EvalCase("camera"),
        environment_id="camera/v1",
        observer_id="o",
        observe=lambda: {"heat": np.full(300, holder["env"].t, np.float32)},
        seed=seed,
        max_steps=steps,
    )


@pytest.fixture(scope="module")
def camera() -> EpisodeEvidence:
    return _capture(0)


@pytest.fixture(scope="module")
def other_camera() -> EpisodeEvidence:
    return _capture(1)


def _saved(episode: EpisodeEvidence, tmp_path: Path) -> tuple[Path, list[Path]]:
    path = tmp_path / "episode.json"
    episode.save_json(path)
    return path, sorted(Path(f"{path}.blobs").iterdir())


def _refused(path: Path, named: Path) -> EvidenceError:
    with pytest.raises(EvidenceError) as caught:
        EpisodeEvidence.load(path)
    assert str(named) in str(caught.value)
    return caught.value


def test_a_missing_blob_names_the_file_looked_for(camera: Any, tmp_path: Path) -> None:
    path, blobs = _saved(camera, tmp_path)
    blobs[0].unlink()
    assert isinstance(_refused(path, blobs[0]), SchemaError)


@pytest.mark.parametrize("change", ["truncate", "swap", "replace"])
def test_a_changed_blob_names_the_file(camera: Any, tmp_path: Path, change: str) -> None:
    path, blobs = _saved(camera, tmp_path)
    first, second = (blob.read_bytes() for blob in blobs)
    if change == "truncate":
        blobs[0].write_bytes(first[:-7])
    elif change == "swap":
        blobs[0].write_bytes(second)
        blobs[1].write_bytes(first)
    else:  # another valid blob of the same record in its place
        blobs[0].write_bytes(second)
    assert isinstance(_refused(path, blobs[0]), ConsistencyError)


def test_a_blob_that_is_a_folder_is_an_evidence_error(camera: Any, tmp_path: Path) -> None:
    path, blobs = _saved(camera, tmp_path)
    blobs[0].unlink()
    blobs[0].mkdir()
    assert isinstance(_refused(path, blobs[0]), SchemaError)


@pytest.mark.parametrize("name", ["notes.txt", "0" * 64])
def test_an_added_file_in_the_blobs_folder_is_refused(
    camera: Any, tmp_path: Path, name: str
) -> None:
    path, blobs = _saved(camera, tmp_path)
    extra = blobs[0].parent / name
    extra.write_bytes(b"x")
    assert isinstance(_refused(path, extra), ConsistencyError)


def test_a_blobs_folder_replaced_by_a_file_is_refused(camera: Any, tmp_path: Path) -> None:
    path, blobs = _saved(camera, tmp_path)
    shutil.rmtree(blobs[0].parent)
    blobs[0].parent.write_bytes(b"not a folder")
    _refused(path, blobs[0].parent)


def test_moving_the_file_without_its_blobs_is_named(camera: Any, tmp_path: Path) -> None:
    path, _ = _saved(camera, tmp_path)
    moved = tmp_path / "moved.json"
    path.rename(moved)
    _refused(moved, tmp_path / "moved.json.blobs")
    Path(f"{path}.blobs").rename(tmp_path / "moved.json.blobs")
    assert EpisodeEvidence.load(moved) == camera


def test_a_record_of_another_schema_version_names_the_file(camera: Any, tmp_path: Path) -> None:
    data = camera.data
    data["schema"] = "onrecord.episode/v2"
    data["digest"] = content_digest(data)
    path = tmp_path / "future.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n")
    error = _refused(path, path)
    assert isinstance(error, SchemaError)
    assert "onrecord.episode/v2" in str(error)


def test_saving_again_repairs_a_damaged_blob(camera: Any, tmp_path: Path) -> None:
    path, blobs = _saved(camera, tmp_path)
    blobs[0].write_bytes(b"damaged")
    camera.save_json(path)
    assert EpisodeEvidence.load(path) == camera


def test_saving_other_evidence_to_the_same_path_leaves_no_stale_blob(
    camera: Any, other_camera: Any, tmp_path: Path
) -> None:
    path, _ = _saved(camera, tmp_path)
    other_camera.save_json(path)
    folder = Path(f"{path}.blobs")
    assert sorted(entry.name for entry in folder.iterdir()) == sorted(other_camera.blobs)
    assert EpisodeEvidence.load(path) == other_camera
    small = EpisodeEvidence.from_dict(_small_episode().data)
    small.save_json(path)
    assert not folder.exists()
    assert EpisodeEvidence.load(path) == small


def _small_episode() -> EpisodeEvidence:
    return capture_episode(
        lambda: gym.make("CartPole-v1"),
        lambda env, observation, info: env.step(0),
        case=EvalCase("small"),
        environment_id="cartpole",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=3,
    )


def test_legitimate_places_load(
    camera: Any, other_camera: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nested = tmp_path / "not" / "yet" / "there.json"
    camera.save_json(nested)
    assert EpisodeEvidence.load(nested) == camera
    beside = tmp_path / "not" / "yet" / "beside.json"  # two files share a folder
    other_camera.save_json(beside)
    assert EpisodeEvidence.load(nested) == camera
    assert EpisodeEvidence.load(beside) == other_camera
    link = tmp_path / "link.json"  # a symlink to the file: its blobs are beside the target
    link.symlink_to(nested)
    assert EpisodeEvidence.load(link) == camera
    linked_dir = tmp_path / "linked"
    linked_dir.symlink_to(nested.parent, target_is_directory=True)
    assert EpisodeEvidence.load(linked_dir / "there.json") == camera
    monkeypatch.chdir(nested.parent)
    assert EpisodeEvidence.load("there.json") == camera
    assert EpisodeEvidence.load(Path(os.curdir) / "beside.json") == other_camera


def _forged(camera: EpisodeEvidence, change: Any) -> dict[str, Any]:
    """The record with ``change`` applied and its digest recomputed (a hand-made record)."""
    data = camera.data
    change(data)
    data["digest"] = content_digest(data)
    return data


_MALFORMED = "malformed blob reference"
_LAYOUT = "steps.observation must hold one sample per successful step"


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        # Not a blob reference at all: a plain mapping where the layout wants a batch.
        (lambda d: d["steps"]["observation"].update({"$blob": "x"}), ConsistencyError, _LAYOUT),
        (lambda d: d["steps"]["observation"]["$blob"].update(sha256=5), SchemaError, _MALFORMED),
        (lambda d: d["steps"]["observation"]["$blob"].update(dtype="zz"), SchemaError, _MALFORMED),
        (lambda d: d["steps"]["observation"]["$blob"].update(dtype="|O"), SchemaError, _MALFORMED),
        (
            lambda d: d["steps"]["observation"]["$blob"].update(shape="ab"),
            SchemaError,
            _MALFORMED,  # named as what it is, not read as a wrong length
        ),
        (
            lambda d: d["steps"]["observation"]["$blob"].update(shape=[-1, 84, 84, 3]),
            SchemaError,
            _MALFORMED,  # named as what it is, not read as a wrong length
        ),
        # 3 * 4 * (2**62 + 5292) wraps around 64 bits to exactly the blob's 63,504 bytes
        (
            lambda d: d["steps"]["observation"]["$blob"].update(shape=[3, 4, 2**62 + 5292]),
            ConsistencyError,
            "holds 63504 bytes, its dtype and shape say 55340232221128718352",
        ),
        (
            lambda d: d["steps"]["observation"]["$blob"].update(dtype="<f4,<i4"),
            SchemaError,
            _MALFORMED,
        ),
    ],
)
def test_a_malformed_blob_reference_is_refused_by_the_check_that_names_it(
    camera: Any, change: Any, error: type[EvidenceError], message: str
) -> None:
    # The record is resealed, so a digest mismatch (or any other evidence error) would
    # mean the reference itself went unchecked.
    with pytest.raises(error, match=re.escape(message)):
        EpisodeEvidence.from_dict(_forged(camera, change), camera.blobs)


@pytest.mark.parametrize("column", ["observation", "action"])
def test_a_column_of_the_wrong_length_is_refused(camera: Any, column: str) -> None:
    def shorten(data: dict[str, Any]) -> None:
        steps = data["steps"]
        if column == "observation":  # the same bytes read as 2 taller frames, not 3
            steps["observation"]["$blob"]["shape"] = [2, 126, 84, 3]
        else:
            steps["action"] = steps["action"][:-1]

    with pytest.raises(ConsistencyError, match=f"steps.{column} must hold one sample per"):
        EpisodeEvidence.from_dict(_forged(camera, shorten), camera.blobs)


def test_blobs_given_as_bytearrays_are_copied(camera: Any) -> None:
    given = {digest: bytearray(blob) for digest, blob in camera.blobs.items()}
    rebuilt = EpisodeEvidence.from_dict(camera.data, given)
    for blob in given.values():
        blob[:] = bytes(len(blob))
    assert rebuilt.transitions() == camera.transitions()
    assert pickle.loads(pickle.dumps(rebuilt)) == camera
