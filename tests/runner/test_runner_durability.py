"""Durability of run directories, and infinite REALs in tool-world records.

A power loss cannot be simulated, so the tests record what reaches the disk: every
``fsync`` (how many bytes of a file, which names of a directory) and every rename, in
order, in this process or in a real ``onrecord run`` subprocess. From that record they
build the worst directory a power loss at a given moment can leave: every byte written
to ``episodes.jsonl`` on the disk, of every other file only what was fsynced, of a
directory only the names it held when last fsynced. That directory must verify and
resume to a complete run with each episode exactly once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.case import EvalCase
from onrecord.envkit import Snapshot, ToolContext, ToolEpisode, ToolWorld, tool, tool_episode_trial
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.report import Trial
from onrecord.runner import (
    AgentContext,
    EnvironmentProvider,
    EpisodeOutput,
    JobResult,
    Progress,
    RunStore,
    agent_factory,
    plan_run,
    regrade_run,
    resume_run,
    start_run,
)
from onrecord.runner._provider import AgentFactory, EpisodeSpec, SavedEpisode
from onrecord.runner._toolworld import (
    episode_from_evidence,
    rebuild_episode,
    table_layouts,
    tool_evidence,
)
from tests.runner._held import held_env, wait_until_held
from tests.runner.conftest import ROOT, onrecord

CELLS = "tests.runner.test_runner_durability:cells"
PAUSE = "ONRECORD_TEST_PAUSE"
CALLS = "ONRECORD_TEST_AGENT_CALLS"


# -- a tool world whose agent writes one REAL, read from text ("1e999" is +inf) --------
@tool(writes=True, example={"cell": 1, "value": "2.5"})
def put(ctx: ToolContext, cell: int, value: str | None) -> dict[str, Any]:
    """Store ``value`` as a REAL (``"1e999"`` is an infinity, null is NULL)."""
    ctx.execute("UPDATE cells SET v = CAST(? AS REAL) WHERE id = ?", (value, cell))
    return {"cell": cell}


@tool(writes=True, example={"cell": 1, "data": "ff"})
def put_text(ctx: ToolContext, cell: int, data: str) -> dict[str, Any]:
    """Store the bytes ``data`` (hex) as TEXT, UTF-8 or not."""
    ctx.execute("UPDATE cells SET t = CAST(? AS TEXT) WHERE id = ?", (bytes.fromhex(data), cell))
    return {"cell": cell}


def _writes(value: str | None, tool: str = "put", argument: str = "value") -> AgentFactory:
    @agent_factory
    def build(context: AgentContext) -> Callable[[Any], dict[str, Any]]:
        def act(observation: Any) -> dict[str, Any]:
            time.sleep(float(os.environ.get(PAUSE, "0")))
            if os.environ.get(CALLS):
                with open(os.environ[CALLS], "a") as handle:
                    handle.write("call\n")
            return {"tool": tool, "arguments": {"cell": 1, argument: value}}

        return act

    return build


def _end_state_null(episode: ToolEpisode) -> OutcomeVerdict:
    with contextlib.closing(episode.connect()) as conn:
        (value,) = conn.execute("SELECT v FROM cells WHERE id = 1").fetchone()
    return OutcomeVerdict(value is None, "the cell is NULL in the end state", {"v": repr(value)})


def _diff_null(episode: ToolEpisode) -> OutcomeVerdict:
    value = episode.diff["cells"]["changed"][0]["after"].get("v")
    return OutcomeVerdict(value is None, "the diff sets the cell to NULL", {"v": repr(value)})


CHECKS = [
    OutcomeCheck("end_state_null", "v1", _end_state_null),
    OutcomeCheck("diff_null", "v1", _diff_null),
]


class CellsProvider(EnvironmentProvider):
    """One-table tool world; every episode also leaves two side files (one shared)."""

    environment_id = "tests.cells/v1"

    def __init__(self, tasks: int = 2) -> None:
        self._snapshot = Snapshot.build(
            "cells",
            "CREATE TABLE cells (id INTEGER PRIMARY KEY, v REAL, t TEXT);",
            lambda conn, _rng: conn.execute("INSERT INTO cells VALUES (1, 2.5, 'a')"),
        )
        self._world = ToolWorld(self._snapshot, [put, put_text])
        self._tools = self._world.tool_schemas()
        self._layouts = table_layouts(self._world)
        self._cases = [EvalCase({"cell": 1}, case_id=f"cell-{i}") for i in range(tasks)]
        self._workdir = tempfile.TemporaryDirectory(prefix="onrecord-cells-")

    def tasks(self) -> Sequence[EvalCase]:
        return self._cases

    def default_checks(self) -> Sequence[OutcomeCheck]:
        return CHECKS

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        return {
            "infinity": _writes("1e999"),
            "minus_infinity": _writes("-1e999"),
            "null": _writes(None),
            "undecodable_text": _writes("ff", "put_text", "data"),
        }

    def run_episode(self, spec: EpisodeSpec, agent: Any) -> EpisodeOutput:
        self._world.reset(seed=spec.seed, run_id=spec.run_id, case=spec.case)
        call = agent(AgentContext(spec.case, spec.repeat, spec.seed))({"task": spec.case.input})
        self._world.call(call["tool"], call["arguments"])
        evidence = tool_evidence(
            self._world, ending="finished", agent_error=None, tools=self._tools,
            layouts=self._layouts,
        )  # fmt: skip
        events = list(self._world.log.events)
        subject = episode_from_evidence(evidence, events, self._world.path, self._tools)
        note = f"{spec.case.case_id}#{spec.repeat}".encode()
        files = {"note": note, "shared": b"the same side file in every episode"}
        return EpisodeOutput(evidence, subject, events, files)

    def load_subject(self, saved: SavedEpisode) -> ToolEpisode:
        workdir = Path(self._workdir.name)
        return rebuild_episode(
            saved.evidence, saved.action_log, self._snapshot, self._tools, workdir
        )

    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        return tool_episode_trial(subject, checks, repeat)

    def close(self) -> None:
        self._world.close()
        self._workdir.cleanup()


def cells(**config: Any) -> CellsProvider:
    """``module:factory`` environment of these tests (``tasks=N``)."""
    return CellsProvider(**config)


# -- what reaches the disk ------------------------------------------------------------
class DiskLog:
    """Records every fsync and rename under ``root``, in order (optionally to a file as
    JSON lines, flushed at once, for a process that is killed)."""

    def __init__(self, root: Path, log: Path | None = None) -> None:
        self.root = os.path.realpath(root)
        self.events: list[list[Any]] = []
        self.lock = threading.RLock()
        self._log = None if log is None else os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._real = {name: getattr(os, name) for name in ("fsync", "replace", "write")}
        self.on_episodes_write: Callable[[], None] | None = None

    def patches(self) -> dict[str, Callable[..., Any]]:
        """Replacements for ``os.fsync``, ``os.replace`` and ``os.write``."""
        return {"fsync": self._fsync, "replace": self._replace, "write": self._write}

    def _mine(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def _record(self, event: list[Any]) -> None:
        self.events.append(event)
        if self._log is not None:
            self._real["write"](self._log, orjson.dumps(event) + b"\n")

    def _fsync(self, fd: int) -> None:
        path = _path_of(fd)
        with self.lock:
            # What is there when fsync starts is on the disk when it returns.
            event: list[Any] | None = None
            if self._mine(path):
                if os.path.isdir(path):
                    event = ["dir", path, sorted(os.listdir(path))]
                else:
                    event = ["file", path, os.fstat(fd).st_size]
            self._real["fsync"](fd)
            if event is not None:
                self._record(event)

    def _replace(self, source: Any, target: Any, **kwargs: Any) -> None:
        with self.lock:
            self._real["replace"](source, target, **kwargs)
            src, dst = os.path.realpath(source), os.path.realpath(target)
            if self._mine(dst):
                self._record(["replace", src, dst])

    def _write(self, fd: int, data: Any) -> int:
        written: int = self._real["write"](fd, data)
        if self.on_episodes_write is not None:
            path = _path_of(fd)
            if self._mine(path) and os.path.basename(path) == "episodes.jsonl":
                with self.lock:
                    self.on_episodes_write()
        return written


def _path_of(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def power_loss_copy(events: Sequence[Sequence[Any]], run: Path, target: Path) -> Path:
    """``run`` as a power loss now can leave it at worst (see the module docstring)."""
    synced: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for kind, path, info in events:
        if kind == "file":
            synced[path] = info
        elif kind == "dir":
            names[path] = info
        else:  # a rename: the synced bytes follow the file to its new name
            synced[info] = synced.pop(path, 0)
    root = os.path.realpath(run)
    target.mkdir(parents=True)
    for name in names.get(root, []):
        source = Path(root, name)
        if name.startswith(".") or not source.exists():
            continue
        if source.is_dir():
            (target / name).mkdir()
            for inner in names.get(str(source), []):
                if not inner.startswith(".") and (source / inner).exists():
                    data = (source / inner).read_bytes()[: synced.get(str(source / inner), 0)]
                    (target / name / inner).write_bytes(data)
            continue
        data = source.read_bytes()
        if name != "episodes.jsonl":
            data = data[: synced.get(str(source), 0)]
        (target / name).write_bytes(data)
    return target


def _verified(run: Path) -> list[tuple[str, int]]:
    """Keys of every record, each checked with its action log and side files."""
    store = RunStore.open(run)
    keys = []
    for record in store.records():
        store.saved_episode(record)
        keys.append(record.key)
    assert len(keys) == len(set(keys))
    return keys


def _recovers(run: Path, expected: int) -> None:
    """``run`` verifies, and resuming it completes it with each episode exactly once."""
    _verified(run)
    result = resume_run(run)
    assert result.complete
    assert len(_verified(run)) == expected


class _StopAfter(Progress):
    def __init__(self, count: int, error: BaseException | None) -> None:
        self.count, self.error, self.seen = count, error, 0

    def advance(self, result: JobResult) -> None:
        self.seen += 1
        if self.seen == self.count and self.error is not None:
            raise self.error


@pytest.mark.parametrize("ending", ["finished", "ctrl-c", "error"])
def test_every_commit_survives_a_power_loss_and_the_last_batch_is_flushed(
    ending: str, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Finishing: many batches. Stopped: none before the stop, so closing must commit.
    period = 0.005 if ending == "finished" else 3600
    monkeypatch.setattr("onrecord.runner._commit.COMMIT_SECONDS", period)
    monkeypatch.setenv(PAUSE, "0.02")
    protocol = plan_run(CELLS, "null", seeds=[0, 1, 2], environment_config={"tasks": 2})
    disk = DiskLog(run_dir)
    copies: list[Path] = []
    disk.on_episodes_write = lambda: copies.append(
        power_loss_copy(disk.events, run_dir, tmp_path / f"crash-{len(copies)}")
    )
    for name, patch in disk.patches().items():
        monkeypatch.setattr(os, name, patch)
    error = {"finished": None, "ctrl-c": KeyboardInterrupt(), "error": RuntimeError("x")}
    progress = _StopAfter(4, error[ending])
    with contextlib.suppress(KeyboardInterrupt, RuntimeError):
        start_run(run_dir, protocol, progress=progress)
    disk.on_episodes_write = None
    end = power_loss_copy(disk.events, run_dir, tmp_path / "crash-end")
    monkeypatch.undo()
    # The run ended (or stopped) with every finished episode committed and on the disk.
    recorded = 6 if ending == "finished" else 4
    assert progress.seen == recorded
    assert len(_verified(run_dir)) == len(_verified(end)) == recorded
    # Before: a record reached the disk ahead of its action log and side files (never
    # fsynced at all), and the run's own files ahead of the directory's names for them.
    assert copies
    for copy in [*copies, end]:
        _recovers(copy, protocol.episodes)


def test_a_side_file_a_power_loss_left_empty_is_rewritten_when_its_episode_runs_again(
    run_dir: Path,
) -> None:
    start_run(run_dir, plan_run(CELLS, "null", seeds=[0], environment_config={"tasks": 3}))
    episodes = run_dir / "episodes.jsonl"
    lines = episodes.read_bytes().splitlines(keepends=True)
    note = orjson.loads(lines[-1])["files"]["note"]
    # The last batch lost to a power loss (before the run was graded): its record never
    # reached the disk, and its side file's name did but not its bytes.
    episodes.write_bytes(b"".join(lines[:-1]))
    for name in ("report.json", "decision.json"):
        (run_dir / name).unlink()
    (run_dir / "files" / note).write_bytes(b"")
    result = resume_run(run_dir)
    assert result.recorded_now == 1
    assert result.complete
    # Before: the empty file was kept ("content-addressed: already there"), and the
    # record now pointing at it could never be verified.
    assert len(_verified(run_dir)) == 3


def spy_cli() -> None:
    """``python -c '...; spy_cli()' LOG ROOT ARGS...``: the onrecord CLI with every fsync
    and rename under ROOT logged to LOG as it happens."""
    log, root, *args = sys.argv[1:]
    disk = DiskLog(Path(root), Path(log))
    for name, patch in disk.patches().items():
        if name != "write":
            setattr(os, name, patch)
    from onrecord.cli.main import main

    sys.argv = ["onrecord", *args]
    sys.exit(main())


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_kill_9_mid_run_then_power_loss_then_resume_records_each_episode_once(
    run_dir: Path, tmp_path: Path
) -> None:
    log, calls, ready = tmp_path / "disk.log", tmp_path / "calls", tmp_path / "held"
    args = [CELLS, "--agent", "null", "--env-config", "tasks=4", "--seeds", "0-5"]
    # Held once 3 episodes are committed (tests.runner._held), until killed: before, the
    # test polled the log and raced the run's end, with about 0.6 s to spare.
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tests.runner._held import install; install(); "
            "from tests.runner.test_runner_durability import spy_cli; spy_cli()",
            *(str(log), str(run_dir), "run", *args, "--out", str(run_dir), "--no-progress"),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), PAUSE: "0.03", **held_env(ready, "episodes:3")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    held = wait_until_held(process, ready)
    process.send_signal(signal.SIGKILL)
    process.wait()
    episodes = run_dir / "episodes.jsonl"
    committed = _lines(episodes)
    assert committed == held["lines"] == 3
    assert 0 < committed < 24, "the run must be killed midway for this test"
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    lost = power_loss_copy(events, run_dir, tmp_path / "power-loss")
    # Before: the copy's records pointed at action-log bytes and side files that were
    # never fsynced: it could not be verified, so never resumed.
    _verified(lost)
    for directory in (run_dir, lost):
        before = _lines(directory / "episodes.jsonl")
        calls.unlink(missing_ok=True)
        done = onrecord("run", "--resume", str(directory), "--no-progress", env={CALLS: str(calls)})
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(_verified(directory)) == 24
        # Committed episodes are never run again; the others ran exactly once.
        assert calls.read_text().count("call") == 24 - before


# -- infinite REALs -----------------------------------------------------------------
def test_an_infinity_the_agent_writes_is_not_null_and_regrades_identically(
    tmp_path: Path,
) -> None:
    records, results = {}, {}
    for agent in ("infinity", "minus_infinity", "null"):
        protocol = plan_run(CELLS, agent, seeds=[0], environment_config={"tasks": 1})
        results[agent] = start_run(tmp_path / agent, protocol)
        records[agent] = next(iter(RunStore.open(tmp_path / agent).records())).data
    evidence = {agent: record["evidence"] for agent, record in records.items()}
    after = {agent: e["diff"]["cells"]["changed"][0]["after"]["v"] for agent, e in evidence.items()}
    # Before: all three were saved as null, with one table digest: the change was hidden.
    assert after == {
        "infinity": {"$real": "Infinity"},
        "minus_infinity": {"$real": "-Infinity"},
        "null": None,
    }
    digests = {agent: e["changed_tables"]["cells"] for agent, e in evidence.items()}
    assert len(set(digests.values())) == 3
    assert b'{"$real":"Infinity"}' in orjson.dumps(evidence["infinity"]["audit"]["events"])
    assert records["infinity"]["fingerprint"] != records["null"]["fingerprint"]
    # Graded live, the checks saw the infinity (a float) and not NULL ...
    assert results["infinity"].exit_code == results["minus_infinity"].exit_code == 1
    assert results["null"].exit_code == 0
    trial = records["infinity"]["trial"]
    seen = {result["name"]: result["evidence"] for result in trial["results"]}
    assert seen == {"end_state_null": {"v": "inf"}, "diff_null": {"v": "inf"}}
    # ... and re-graded from saved evidence alone (the end state rebuilt from the
    # snapshot and the diff, each changed table matching its digest) they see it again.
    for agent, result in results.items():
        regrade = regrade_run(tmp_path / agent, name="again")
        assert regrade.changes == ()
        assert regrade.exit_code == result.exit_code
        assert [t.to_dict() for t in regrade.report.trials] == [
            t.to_dict() for t in result.report.trials
        ]


def test_text_that_is_not_utf8_is_recorded_and_regrades_identically(tmp_path: Path) -> None:
    protocol = plan_run(CELLS, "undecodable_text", seeds=[0], environment_config={"tasks": 1})
    result = start_run(tmp_path / "run", protocol)
    # Before: reading the changed table for its digest raised "Could not decode to
    # UTF-8": the episode could not be recorded, on every resume again.
    assert result.complete, result.errors
    (record,) = RunStore.open(tmp_path / "run").records()
    assert record.data["evidence"]["diff"]["cells"]["changed"][0]["after"]["t"] == {"$text": "ff"}
    regrade = regrade_run(tmp_path / "run", name="again")
    assert regrade.changes == ()
    assert regrade.exit_code == result.exit_code


def test_close_interrupted_while_a_batch_commits_waits_before_closing_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a Ctrl-C in close()'s join closed the files while the commit thread was
    # still writing them (into a closed, or a reused, file number).
    import threading

    from onrecord.runner._commit import GroupCommit

    started, release = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        if threading.current_thread().name == "onrecord-run-commit":
            started.set()
            release.wait(5)
        real_fsync(fd)

    commit = GroupCommit(tmp_path, period=0.01)
    monkeypatch.setattr(os, "fsync", slow_fsync)
    commit.add(b'{"line": 1}\n', b"", {})
    assert started.wait(5)  # the thread is inside a batch
    real_join = threading.Thread.join
    calls: list[int] = []

    def interrupted_join(self: threading.Thread, timeout: float | None = None) -> None:
        calls.append(1)
        if len(calls) == 1:
            threading.Timer(0.2, release.set).start()  # the batch ends a little later
            raise KeyboardInterrupt
        real_join(self, timeout)

    monkeypatch.setattr(threading.Thread, "join", interrupted_join)
    with pytest.raises(KeyboardInterrupt):
        commit.close()
    assert not commit._thread.is_alive()  # waited for before the files were closed
    assert (tmp_path / "episodes.jsonl").read_bytes() == b'{"line": 1}\n'
