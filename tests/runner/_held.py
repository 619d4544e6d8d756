"""The real ``onrecord`` CLI, held at a chosen point of its run, so that a test's signal
lands while the run is in progress every time, and where the test means it (before,
tests polled ``episodes.jsonl`` and raced the run's natural end: 0.5-0.9 s to spare).

Start ``python -c "from tests.runner._held import cli; cli()" ARGS...`` (ARGS as for
``onrecord``) with ``$ONRECORD_TEST_READY`` a path and ``$ONRECORD_TEST_HOLD`` one of:

- ``episodes:N``: once the run has a finished episode beyond the first N to record, it
  waits until those N are committed to ``episodes.jsonl``, creates READY and holds:
  exactly N episodes are committed, the rest not.
- ``commits:K``: the run holds right after its K-th group commit that wrote
  ``episodes.jsonl`` (no episode is queued behind it): every episode recorded so far
  is committed, in exactly K batches, and the commit thread has nothing left to do.

Either way the hold is in the parent process's main thread, in ``RunWriter.append``
before the next finished episode is queued (worker processes keep to themselves), so a
run with a process pool is held too. ``wait_until_held`` is the test's side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

READY = "ONRECORD_TEST_READY"
HOLD = "ONRECORD_TEST_HOLD"
CHILD = "from tests.runner._held import cli; cli()"
"""The ``python -c`` program of a held run; ``spy_cli`` may follow ``install()``."""

_PER_COMMIT = 8
"""``commits:K``: at most this many episodes are queued per commit before the K-th (the
run waits for the commit thread), so the K-th comes long before the run's end."""


def held_env(ready: Path, hold: str) -> dict[str, str]:
    """The environment variables of a run held at ``hold``, creating ``ready``."""
    return {READY: str(ready), HOLD: hold}


def wait_until_held(
    process: subprocess.Popen[Any], ready: Path, timeout: float = 120
) -> dict[str, int]:
    """Wait until the run is held; fail (killing it) if it ended or never got there.
    Returns what the run had committed: ``batches`` (group commits that wrote
    ``episodes.jsonl``) and ``lines`` (episodes) by then."""
    deadline = time.monotonic() + timeout
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if not ready.exists() or process.poll() is not None:
        process.kill()
        raise AssertionError(f"the run never reached its hold: {process.communicate()}")
    held: dict[str, int] = json.loads(ready.read_text())
    return held


def _hold(ready: Path, state: dict[str, int]) -> NoReturn:
    # READY holds what was committed (written whole: the test may read it at once).
    scratch = ready.with_name(ready.name + ".tmp")
    scratch.write_text(json.dumps(state))
    os.replace(scratch, ready)
    # A signal lands here (SIGINT raises KeyboardInterrupt). Short sleeps: a signal the
    # kernel hands to another thread (the pool's) does not wake a long sleep of this one.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.01)
    raise RuntimeError("held for 120 s and the test never signalled")


def _wait(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 60  # the commit thread runs every 0.2 s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited 60 s for {what}")
        time.sleep(0.002)


def install() -> None:
    """Hold this process's runs as ``$ONRECORD_TEST_HOLD`` says (see the module)."""
    from onrecord.runner import _commit, _store

    ready = Path(os.environ[READY])
    mode, _, number = os.environ[HOLD].partition(":")
    target = int(number)
    if mode not in ("episodes", "commits") or target < 1:
        raise ValueError(f"${HOLD}: episodes:N or commits:K, not {os.environ[HOLD]!r}")
    gate = threading.Lock()  # no episode is queued while a batch commits
    state = {"batches": 0, "lines": 0, "queued": 0}
    real_write, real_commit = _commit._write_synced, _commit.GroupCommit._commit
    real_append = _store.RunWriter.append

    def write_synced(fd: int, data: bytes, path: Path) -> None:
        real_write(fd, data, path)
        if Path(path).name == "episodes.jsonl":  # a group commit's commit point
            state["batches"] += 1
            state["lines"] += data.count(b"\n")

    def commit(self: Any) -> None:
        with gate:
            real_commit(self)

    def append(self: Any, result: Any) -> None:
        if result.error is not None:  # not an episode: never committed to episodes.jsonl
            real_append(self, result)
            return
        if mode == "episodes":
            if state["queued"] == target:
                _wait(lambda: state["lines"] >= target, f"{target} committed episodes")
                _hold(ready, state)
            real_append(self, result)
            state["queued"] += 1
            return
        with gate:
            held = state["batches"] >= target
            if not held:
                real_append(self, result)
                state["queued"] += 1
                batches = state["batches"]  # this episode goes into the next batch
        if held:
            _hold(ready, state)
        if state["queued"] >= _PER_COMMIT * (batches + 1):
            _wait(lambda: state["batches"] > batches, "the next group commit")

    _commit._write_synced = write_synced
    _commit.GroupCommit._commit = commit  # type: ignore[method-assign]
    _store.RunWriter.append = append  # type: ignore[method-assign]


def cli() -> None:
    """``python -c CHILD ARGS...``: ``onrecord ARGS...``, held (see the module)."""
    install()
    from onrecord.cli.main import main

    sys.argv = ["onrecord", *sys.argv[1:]]
    sys.exit(main())
