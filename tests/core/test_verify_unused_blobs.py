"""``onrecord verify FILE`` of evidence whose ``.blobs`` folder holds whole blobs the
record does not use (an interrupted save's): they verify, as documented, and are now
said, so a reviewer counting files knows why there are more and that they may go."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from tests.cli_process import onrecord
from tests.core.envs import GenericEnv, capture_generic

IMAGE = spaces.Box(0, 255, (24, 24, 3), np.uint8)  # 1,728 bytes a frame: kept as a blob


def _saved(path: Path) -> Path:
    frame = np.full(IMAGE.shape, 7, np.uint8)
    env = GenericEnv(
        lambda e, a: (frame, 1.0, e.steps_taken == 2, False, {}), observation_space=IMAGE
    )

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(2):
            env.step(1)

    episode = capture_generic(env, interact, max_steps=10)
    return episode.save_json(path)


def test_unused_whole_blobs_verify_with_a_note_until_the_next_save(tmp_path: Path) -> None:
    path = _saved(tmp_path / "episode.json")
    folder = tmp_path / "episode.json.blobs"
    clean = onrecord("verify", path)
    assert clean.returncode == 0, clean.stderr
    assert "note" not in clean.stderr
    for payload in (b"left by a save killed midway", b"and another"):
        (folder / hashlib.sha256(payload).hexdigest()).write_bytes(payload)
    noted = onrecord("verify", path)
    assert noted.returncode == 0, noted.stderr
    assert noted.stdout.startswith(f"ok  {path}  EpisodeEvidence")
    assert f"note: {folder} holds 2 blob files the evidence does not use" in noted.stderr
    assert f"the next save to {path} removes them" in noted.stderr
    _saved(path)  # saving again, as the note says, removes them
    assert "note" not in onrecord("verify", path).stderr
    assert len(list(folder.iterdir())) >= 1  # the evidence's own blobs stay
