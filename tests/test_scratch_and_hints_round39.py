"""Scratch directories a killed run leaves in TMPDIR, a populate that commits or never
runs, and the policy's hint for a name spelt apart only by Unicode form or whitespace.

- A ``run`` or ``regrade`` killed with SIGKILL left its worlds' and rebuilt databases in
  TMPDIR for ever; the next run or regrade now removes those whose owner is gone, and
  never a live one's, nor anything without onrecord's marker.
- ``Snapshot.build`` with a generator or ``async`` populate returned an empty snapshot; a
  populate closing the connection, or a schema leaving a transaction open, failed with a
  bare sqlite3 error.
- A requirement ``'café'`` (decomposed) or ``' posted'`` got no hint that the report's
  check differs from it only in Unicode form or whitespace.
"""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._scratch import MARKER, ScratchDirectory, remove_abandoned_scratch
from onrecord.envkit import Snapshot, SnapshotError
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from tests.cli_process import onrecord
from tests.core.test_ci_outputs import make_report

ONRECORD = str(Path(sys.executable).parent / "onrecord")
SCHEMA = "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL);"


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 120  # a bound on a hung child, not an assertion
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.02)


def _sentence(output: str, start: str) -> str:
    """The sentence beginning ``start``, its wrapped lines (indented by two) joined."""
    lines = output.splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith(start))
    rest = itertools.takewhile(lambda line: line.startswith("  "), lines[first + 1 :])
    return " ".join([lines[first], *(line.strip() for line in rest)])


def _scratch(tmp: Path) -> list[str]:
    return sorted(path.name for path in tmp.iterdir())


def _held(episode: object) -> OutcomeVerdict:
    """Says, in a file, that the regrade has rebuilt an episode and reached its checks;
    then holds until the test kills it (a regrade of a few episodes ended in less time
    than a busy CI machine took to see its scratch directory)."""
    Path(os.environ["ROUND39_STARTED"]).touch()
    time.sleep(120)  # a bound on a test that never kills it
    raise RuntimeError("held for 120 s and the test never killed it")


HELD = OutcomeCheck("held", "v1", _held)


def _killed(
    args: list[str], tmp: Path, until: object, what: str, env: dict[str, str] | None = None
) -> None:
    child = subprocess.Popen(
        [ONRECORD, *args, "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(tmp), **(env or {})},
    )
    try:
        _wait_for(lambda: until() or child.poll() is not None, what)  # type: ignore[operator]
        assert child.poll() is None, f"{args[0]} ended before it could be killed"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))  # for the onrecord processes started here
    monkeypatch.setattr(tempfile, "tempdir", str(folder))  # and for this one
    return folder


def test_a_killed_run_and_regrade_leave_scratch_the_next_ones_remove(
    tmp_path: Path, tmp: Path
) -> None:
    done = onrecord(
        "run",
        "remittance",
        "--agent",
        "careful",
        "--tasks",
        "full-01",
        "--seeds",
        "0",
        "--out",
        tmp_path / "small",
        "--no-progress",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _scratch(tmp) == []  # a run that ends removes its own
    big = tmp_path / "big"
    episodes = big / "episodes.jsonl"
    _killed(
        [
            "run",
            "remittance",
            "--agent",
            "careful",
            "--tasks",
            "full-01",
            "--seeds",
            "0-100000",
            "--out",
            str(big),
        ],
        tmp,
        lambda: episodes.is_file() and episodes.stat().st_size > 0,
        "a recorded episode",
    )
    left = _scratch(tmp)
    assert [name[: len("onrecord-world-")] for name in left] == ["onrecord-world-"], left
    assert (tmp / left[0] / "world.db").is_file()  # a whole database, kept for ever before
    # A regrade killed while it grades a rebuilt episode leaves its rebuilt database too.
    started = tmp_path / "started"
    _killed(
        ["regrade", str(big), "--name", "killed", "--checks", f"{__name__}:HELD"],
        tmp,
        started.exists,
        "the regrade's checks",
        env={"PYTHONPATH": str(Path(__file__).parents[1]), "ROUND39_STARTED": str(started)},
    )
    # Marked, or (killed in the microseconds between making one and marking it) named
    # with the pid of a process now gone: all the killed ones' to remove.
    leftover = _scratch(tmp)
    assert any(name.startswith("onrecord-toolworld-") for name in leftover)
    # A directory named like ours but without the marker, and a file so named, stay.
    (tmp / "onrecord-world-abcdefgh").mkdir()
    (tmp / "onrecord-ledger-abcdefgh").write_text("not ours")
    again = onrecord("regrade", tmp_path / "small", "--name", "sweep", "--no-progress")
    assert again.returncode == 0, again.stdout + again.stderr
    # The killed regrade swept the killed run's database, and left its rebuilt episodes
    # and, when killed late enough to have made it, its own world: this one removes all.
    notice = _sentence(again.stdout, "repaired:")
    assert all(name in notice for name in leftover), (leftover, notice)
    assert f"removed {len(leftover)} scratch director" in notice, notice
    assert _scratch(tmp) == ["onrecord-ledger-abcdefgh", "onrecord-world-abcdefgh"]


def test_a_live_owner_keeps_its_directory_and_a_dead_pid_is_not_asked(tmp: Path) -> None:
    # A live process holding one (here another process, blocked reading stdin).
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from onrecord._scratch import ScratchDirectory as S\n"
            "s = S('world'); print(s.name, flush=True); sys.stdin.read(); s.cleanup()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert holder.stdout is not None
    assert holder.stdin is not None
    live = Path(holder.stdout.readline().strip())
    try:
        assert remove_abandoned_scratch(tmp) == []
        assert (live / MARKER).is_file()
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
    assert not live.exists()  # its owner removed it on the way out
    # Liveness is the marker's lock, not a pid: a marker naming this (live) process
    # that nobody holds is a dead owner's (its pid reused by this process).
    dead = tmp / "onrecord-timeouts-deadbeef"
    dead.mkdir()
    (dead / MARKER).write_text(f"{os.getpid()}\n")
    (tmp / "onrecord-world-linkedto").symlink_to(dead)
    notices = remove_abandoned_scratch(tmp)
    assert notices == [
        f"removed 1 scratch directory a killed onrecord left in {tmp}: onrecord-timeouts-deadbeef"
    ]
    assert _scratch(tmp) == ["onrecord-world-linkedto"]  # a link is never followed


def test_a_forked_child_exiting_leaves_its_parents_directory(tmp: Path) -> None:
    script = (
        "import os, sys\n"
        "from onrecord._scratch import ScratchDirectory\n"
        "s = ScratchDirectory('world')\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"  # a normal exit runs the finalizers it inherited
        "os.waitpid(pid, 0)\n"
        "print(os.path.isdir(s.name))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert done.stdout.strip() == "True", done.stdout + done.stderr
    assert _scratch(tmp) == []


def test_scratch_directory_is_removed_by_cleanup_once(tmp: Path) -> None:
    with ScratchDirectory("ledger") as name:
        assert Path(name).parent == tmp
        assert (Path(name) / MARKER).is_file()
    assert _scratch(tmp) == []


# -- Snapshot.build ----------------------------------------------------------------------
def _insert(conn: sqlite3.Connection, value: str) -> None:
    conn.execute("INSERT INTO t(v) VALUES (?)", (value,))


def test_a_populate_that_commits_midway_keeps_every_row_or_none() -> None:
    def commits_then_continues(conn: sqlite3.Connection, _rng: object) -> None:
        _insert(conn, "a")
        conn.commit()
        _insert(conn, "b")

    built = Snapshot.build("x", SCHEMA, commits_then_continues)
    assert built.connection.execute("SELECT v FROM t").fetchall() == [("a",), ("b",)]

    def commits_then_raises(conn: sqlite3.Connection, _rng: object) -> None:
        _insert(conn, "a")
        conn.commit()
        raise ValueError("the data generator broke")

    with pytest.raises(ValueError, match="the data generator broke"):
        Snapshot.build("x", SCHEMA, commits_then_raises)


@pytest.mark.parametrize("kind", ["generator", "coroutine"])
def test_a_populate_that_never_runs_is_refused(kind: str) -> None:
    def generator(conn: sqlite3.Connection, _rng: object):  # type: ignore[no-untyped-def]
        yield _insert(conn, "a")

    async def coroutine(conn: sqlite3.Connection, _rng: object) -> None:
        _insert(conn, "a")

    populate = generator if kind == "generator" else coroutine
    with pytest.raises(SnapshotError, match=f"populate returned a {kind} without running"):
        Snapshot.build("x", SCHEMA, populate)  # type: ignore[arg-type]


def test_a_populate_closing_the_connection_or_an_open_schema_transaction_is_named() -> None:
    with pytest.raises(SnapshotError, match="'x': populate closed the connection"):
        Snapshot.build("x", SCHEMA, lambda conn, _rng: conn.close())
    with pytest.raises(SnapshotError, match="left a transaction open"):
        Snapshot.build("x", "BEGIN; " + SCHEMA)
    # A bad binding is still the populate's SQL, not a closed connection.
    with pytest.raises(SnapshotError, match="fix the SQL your populate function runs"):
        Snapshot.build("x", SCHEMA, lambda conn, _rng: conn.execute("INSERT INTO t VALUES (?)"))


# -- the policy's hint ---------------------------------------------------------------------
COMPOSED = unicodedata.normalize("NFC", "café_ok")


def _why(requirement: str) -> str:
    report = make_report({COMPOSED: ["pass"] * 3, "posted once": ["pass"] * 3})
    decision = AcceptancePolicy((CheckRequirement(requirement),)).evaluate(report)
    assert decision.decision == "indeterminate"
    (reason,) = decision.reasons
    return reason


def test_a_requirement_spelt_apart_only_by_unicode_form_or_whitespace_gets_a_hint() -> None:
    decomposed = unicodedata.normalize("NFD", COMPOSED)
    assert _why(decomposed) == (
        f"no check in the report matches {decomposed!r}; did you mean {COMPOSED!r}? They "
        "differ only in Unicode normalization (NFC or NFD: the requirement is "
        "'cafe\\u0301_ok', the check 'caf\\xe9_ok'), and names match exactly: write it as "
        "the check spells it"
    )
    for spaced in (" posted once", "posted  once\t", "posted\u00a0once"):
        assert _why(spaced) == (
            f"no check in the report matches {spaced!r}; did you mean 'posted once'? They "
            "differ only in whitespace, and names match exactly: write it as the check "
            "spells it"
        )
    # Any other unmatched name keeps the sentence saved decisions hold.
    assert _why("posted_once") == "no check in the report matches 'posted_once'"
