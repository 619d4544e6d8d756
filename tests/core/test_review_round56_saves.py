"""Review round 56 of saves: re-saving evidence with blobs onto its own path is
crash-safe (a SIGKILL at any point leaves the earlier or the new record, loadable) and a
reader meanwhile gets the old or the new record whole; a whole blob an interrupted save
left is no tampering, anything else in the folder still is; a save onto a directory is
refused before anything is written; a failed write names the file, not its temporary
file. Real processes, killed with SIGKILL, throughout."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from onrecord import EvalCase
from onrecord._canonical import atomic_write_bytes
from onrecord.episode import EpisodeEvidence, evaluate_episode
from onrecord.errors import ConsistencyError, InputError
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord

ROOT = Path(__file__).resolve().parents[2]


class Frames(gym.Env[Any, Any]):
    """400 float32 a sample (1,600 bytes): every observation column is a blob."""

    observation_space = spaces.Box(-1, 1, (400,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.random(400).astype(np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self.np_random.random(400).astype(np.float32), 1.0, self.t >= 4, False, {}


def _capture(seed: int) -> EpisodeEvidence:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(4):
            env.step(0)

    return capture_episode(
        Frames,
        interact,
        case=EvalCase("frames", case_id="c"),
        environment_id="frames/v1",
        observer_id="none/v1",
        observe=dict,
        seed=seed,
        max_steps=4,
    )


@pytest.fixture(scope="module")
def old() -> EpisodeEvidence:
    return _capture(1)


@pytest.fixture(scope="module")
def new() -> EpisodeEvidence:
    return _capture(2)


def _folder(path: Path) -> set[str]:
    return {entry.name for entry in Path(f"{path}.blobs").iterdir()}


def _loads_whole(path: Path, *choices: EpisodeEvidence) -> EpisodeEvidence:
    """The record at ``path``, which must be one of ``choices``, with all its blobs."""
    loaded = EpisodeEvidence.load(path)
    assert loaded in choices
    (expected,) = [choice for choice in choices if choice == loaded]
    assert loaded.blobs == expected.blobs
    return loaded


def _in_child(body: Callable[[], None]) -> int:
    """Fork a real process running ``body`` (it never returns into pytest: it exits 0
    when ``body`` returns, 1 when it raises); its pid. Only files are written there."""
    with warnings.catch_warnings():  # Python 3.12 warns of fork() beside threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            body()
            code = 0
        finally:
            os._exit(code)
    return pid


def _saving_in_turns(save: Callable[[bool], None]) -> int:
    """A child process calling ``save(True)``, ``save(False)``, ``save(True)``... until it
    is killed (``_killed``); its pid."""

    def forever() -> None:
        turn = 0
        while True:
            save(turn % 2 == 0)
            turn += 1

    return _in_child(forever)


def _killed(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _saving_steps(episode: EpisodeEvidence, path: Path) -> int:
    """How many renames and removals re-saving ``episode`` to ``path`` makes."""
    calls = [0]
    real_replace, real_unlink, real_rmdir = os.replace, os.unlink, os.rmdir

    def count(real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return real(*args, **kwargs)

        return counted

    os.replace, os.unlink, os.rmdir = count(real_replace), count(real_unlink), count(real_rmdir)
    try:
        episode.save_json(path)
    finally:
        os.replace, os.unlink, os.rmdir = real_replace, real_unlink, real_rmdir
    return calls[0]


def test_a_resave_killed_before_any_of_its_steps_leaves_a_loadable_record(
    old: EpisodeEvidence, new: EpisodeEvidence, tmp_path: Path
) -> None:
    """A child re-saving other evidence (other blobs) onto a saved record is SIGKILLed
    just before each rename or removal the save makes, in turn: every state a kill can
    leave is tried, and each one loads as the old or the new record whole; the next
    completed save leaves exactly its own blobs."""
    assert set(old.blobs).isdisjoint(new.blobs)
    assert old.blobs
    assert new.blobs
    scratch = tmp_path / "count" / "e.json"
    old.save_json(scratch)
    steps = _saving_steps(new, scratch)
    # Its blobs renamed into place, then the record, then the old blobs removed.
    assert steps == len(new.blobs) + 1 + len(old.blobs)
    seen = set()
    for kill_at in range(steps + 1):
        path = tmp_path / str(kill_at) / "e.json"
        old.save_json(path)

        def save_and_die(kill_at: int = kill_at, path: Path = path) -> None:
            calls = [0]

            def dying(real: Callable[..., Any]) -> Callable[..., Any]:
                def call(*args: Any, **kwargs: Any) -> Any:
                    if calls[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    calls[0] += 1
                    return real(*args, **kwargs)

                return call

            os.replace, os.unlink, os.rmdir = dying(os.replace), dying(os.unlink), dying(os.rmdir)
            new.save_json(path)

        pid = _in_child(save_and_die)
        _, status = os.waitpid(pid, 0)
        if kill_at < steps:
            assert os.WIFSIGNALED(status)
            assert os.WTERMSIG(status) == signal.SIGKILL
        else:
            assert os.WIFEXITED(status)
            assert os.WEXITSTATUS(status) == 0
        seen.add(_loads_whole(path, old, new).digest)
        old.save_json(path)  # a completed save prunes what the killed one left
        assert _folder(path) == set(old.blobs)
        assert EpisodeEvidence.load(path) == old
    assert seen == {old.digest, new.digest}


def test_a_resave_loop_killed_at_random_moments_never_breaks_the_record(
    old: EpisodeEvidence, new: EpisodeEvidence, tmp_path: Path
) -> None:
    path = tmp_path / "e.json"
    rng = random.Random(56)
    for _ in range(12):
        shutil.rmtree(tmp_path, ignore_errors=True)
        old.save_json(path)

        pid = _saving_in_turns(lambda first: (new if first else old).save_json(path))
        time.sleep(rng.uniform(0.001, 0.06))
        _killed(pid)
        _loads_whole(path, old, new)


def test_a_reader_during_resaves_gets_the_old_or_the_new_record_whole(
    old: EpisodeEvidence, new: EpisodeEvidence, tmp_path: Path
) -> None:
    """One process re-saves two records (each with its own blobs) onto one path for a
    second and a half while this one loads it: every load returns one of them whole."""
    path = tmp_path / "e.json"
    old.save_json(path)

    pid = _saving_in_turns(lambda first: (new if first else old).save_json(path))
    loads, failures, seen = 0, [], set()
    try:
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            try:
                seen.add(_loads_whole(path, old, new).digest)
            except Exception as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
            loads += 1
    finally:
        _killed(pid)
    assert not failures, f"{len(failures)} of {loads} loads failed: {failures[:3]}"
    assert seen == {old.digest, new.digest}  # the file did change under the reader


def test_a_whole_blob_left_over_loads_and_anything_else_is_still_refused(
    old: EpisodeEvidence, new: EpisodeEvidence, tmp_path: Path
) -> None:
    path = tmp_path / "e.json"
    old.save_json(path)
    folder = Path(f"{path}.blobs")
    other, other_bytes = next(iter(new.blobs.items()))
    (folder / other).write_bytes(other_bytes)  # what a killed re-save leaves
    (folder / f".{other}.x1y2z3.tmp").write_bytes(other_bytes[:5])  # a cut-off write
    assert EpisodeEvidence.load(path) == old
    verified = onrecord("verify", path)
    assert verified.returncode == 0, verified.stderr

    # Not a blob onrecord wrote: a sha256 name holding other bytes, a link (even to the
    # right bytes), another name. Each is refused and named, as before.
    wrong = folder / ("0" * 64)
    wrong.write_bytes(b"stray")
    with pytest.raises(ConsistencyError, match=f"{wrong}.*not a blob this evidence references"):
        EpisodeEvidence.load(path)
    assert onrecord("verify", path).returncode == 3
    wrong.unlink()
    outside = tmp_path / "outside"
    (folder / other).rename(outside)
    (folder / other).symlink_to(outside)
    with pytest.raises(ConsistencyError, match=str(folder / other)):
        EpisodeEvidence.load(path)
    (folder / other).unlink()
    notes = folder / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(ConsistencyError, match=str(notes)):
        EpisodeEvidence.load(path)
    notes.unlink()

    # A referenced blob whose bytes changed is tampering, whatever else is there.
    mine = folder / next(iter(old.blobs))
    original = mine.read_bytes()
    mine.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(ConsistencyError, match="does not match its sha256"):
        EpisodeEvidence.load(path)
    mine.write_bytes(original)

    old.save_json(path)  # a completed save removes the leftovers
    assert _folder(path) == set(old.blobs)


def test_saving_onto_a_directory_is_refused_before_anything_is_written(
    old: EpisodeEvidence, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("kept")
    with pytest.raises(InputError, match=f"cannot save to {target}: it is a directory"):
        old.save_json(target)
    assert sorted(os.listdir(tmp_path)) == ["target"]  # no target.blobs, no temporary
    assert os.listdir(target) == ["keep"]

    report = evaluate_episode(old, [])
    with pytest.raises(InputError, match=f"cannot save to {target}: it is a directory"):
        report.save_json(target)
    assert sorted(os.listdir(tmp_path)) == ["target"]

    blocker = tmp_path / "afile"
    blocker.write_text("a file")
    with pytest.raises(InputError, match=f"a file is where its folder {blocker}"):
        old.save_json(blocker / "e.json")
    with pytest.raises(InputError, match="a file is where its folder"):
        atomic_write_bytes(blocker / "deeper" / "x.json", b"{}")
    assert blocker.read_text() == "a file"
    assert sorted(os.listdir(tmp_path)) == ["afile", "target"]


_FULL = """
import errno, os, resource, signal, sys
from pathlib import Path
from onrecord._canonical import atomic_write_bytes
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
target = Path(sys.argv[1])
try:
    atomic_write_bytes(target, b"x" * 10000)
except OSError as exc:
    print(errno.errorcode[exc.errno], exc.filename, sorted(os.listdir(target.parent)))
"""


def test_a_write_that_fails_midway_names_the_file_not_its_temporary(tmp_path: Path) -> None:
    """A real failed write (the file size limit: EFBIG, as a full disk's ENOSPC comes
    from the same write) named no file at all; it names the file being saved, and no
    temporary file is left."""
    target = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", _FULL, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.split() == ["EFBIG", str(target), "[]"], done.stdout + done.stderr


def test_a_read_only_folder_names_the_file_not_its_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EROFS (a read-only file system) when the temporary file is created named that
    ``.report.html.XXXXXXXX.tmp``; it names the file being saved."""
    real = os.open

    def read_only(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.path.basename(os.fsdecode(path)).startswith(".report.html."):
            raise OSError(30, os.strerror(30), os.fsdecode(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    target = tmp_path / "report.html"
    with pytest.raises(OSError, match="Read-only file system") as caught:
        atomic_write_bytes(target, b"<html>")
    assert caught.value.filename == str(target)
    assert caught.value.errno == 30
    assert os.listdir(tmp_path) == []
