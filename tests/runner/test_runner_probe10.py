"""A demanding CI user's view of "nothing lost": real `onrecord run` processes killed
(kill -9 of the run or of a pool worker), interrupted (SIGINT, SIGTERM, also before any
episode runs), started twice at once, or stopped by a write the system refuses (a full
disk); each time the run resumes to the report of a run never interrupted, and the bytes
committed before are never changed."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest

from onrecord.domains.remittance import ScriptedAgent
from onrecord.runner import AgentContext, RunStore, agent_factory
from tests.runner._held import CHILD, held_env, wait_until_held
from tests.runner.conftest import ROOT, onrecord
from tests.runner.helpers import walker

HERE = "tests.runner.test_runner_probe10"
GATE = "ONRECORD_TEST_GATE"
MARK = "ONRECORD_TEST_MARK"
BLOCK = "ONRECORD_TEST_BLOCK"
BLOCK_AFTER = 2
"""With ``$ONRECORD_TEST_BLOCK``: the episode a worker blocks in comes after this many."""
REMITTANCE = [
    "remittance",
    "--agent",
    f"{HERE}:slow_double_poster",
    "--env-config",
    "size=30",
    "--env-config",
    'kinds=["duplicate", "full_payment"]',
    "--seeds",
    "0-3",
]


_started = 0
"""Episodes this process has started (a pool worker's own count)."""


def _block_one_worker(path: str) -> None:
    """The first process to start its ``BLOCK_AFTER + 1``-th episode writes its pid to
    ``path`` and blocks in that episode until it is killed; any other goes on."""
    global _started
    _started += 1
    if _started != BLOCK_AFTER + 1:
        return
    try:
        os.close(os.open(f"{path}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # one worker blocked already (this one may run its retries)
        return
    scratch = Path(f"{path}.tmp")
    scratch.write_text(str(os.getpid()))
    os.replace(scratch, path)  # whole: the test reads it at once
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.01)
    raise RuntimeError("blocked for 120 s and the test never killed this worker")


@agent_factory
def slow_double_poster(context: AgentContext) -> Any:
    """``double_poster`` (pass and fail verdicts: a reject), 2 ms per tool call. With
    ``$ONRECORD_TEST_BLOCK`` a path, one worker blocks in an episode (``_block_one_worker``)."""
    if BLOCK in os.environ:
        _block_one_worker(os.environ[BLOCK])
    agent = ScriptedAgent("double_poster", context.case.input)

    def act(observation: Any) -> Any:
        time.sleep(0.002)
        return agent(observation)

    return act


def gated_walker(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """``walker`` once the file ``$ONRECORD_TEST_GATE`` exists: the run holds its lock
    until the test opens the gate."""
    while not Path(os.environ[GATE]).exists():
        time.sleep(0.01)
    return walker(env, observation, info)


def hanging_lake(**config: Any) -> gym.Env[Any, Any]:
    """A FrozenLake whose factory marks ``$ONRECORD_TEST_MARK`` and hangs: the run is
    being planned (nothing written yet) for as long as the test wants."""
    Path(os.environ[MARK]).touch()
    time.sleep(120)
    return gym.make("FrozenLake-v1", is_slippery=False, **config)


def _start(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
    held: bool = False,
) -> subprocess.Popen[str]:
    """The real ``onrecord ARGS``; ``held``: run by ``tests.runner._held`` (``env`` says
    where it holds)."""
    command = (
        [sys.executable, "-c", CHILD] if held else [str(Path(sys.executable).parent / "onrecord")]
    )
    return subprocess.Popen(
        [*command, *args, "--no-progress"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec,
    )


def _start_held_at_commit(
    run_dir: Path, executor: list[str], commits: int
) -> tuple[subprocess.Popen[str], bytes]:
    """Start the run, held right after its ``commits``-th group commit (the next finished
    episode not yet queued, the rest still to run); once it is held, the bytes of
    ``episodes.jsonl``. Before, the test polled the log's growth and signalled after it:
    0.75-0.83 s before the run's natural end, too little on a loaded machine."""
    ready = run_dir.parent / "held"
    process = _start(
        ["run", *REMITTANCE, *executor, "--out", str(run_dir)],
        env=held_env(ready, f"commits:{commits}"),
        held=True,
    )
    held = wait_until_held(process, ready)
    assert held["batches"] == commits
    committed = (run_dir / "episodes.jsonl").read_bytes()
    assert committed.count(b"\n") == held["lines"]  # exactly what the commits wrote
    assert committed.endswith(b"\n")
    assert 0 < held["lines"] < 32  # in progress: some episodes committed, not all
    return process, committed


def _wait_for(process: subprocess.Popen[str], condition: Callable[[], bool]) -> None:
    """Wait until ``condition()``; fail (killing the run) if the run ended first."""
    deadline = time.monotonic() + 120
    while not condition() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if not condition() or process.poll() is not None:
        process.kill()
        raise AssertionError(f"the run ended or took 120 s: {process.communicate()}")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the pool's workers, its resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _committed(run: Path) -> bytes:
    data = (run / "episodes.jsonl").read_bytes()
    return data[: data.rfind(b"\n") + 1]


def _graded(run: Path) -> tuple[Any, ...]:
    """The decision and every trial's per-check results, in a stable order."""
    report = orjson.loads((run / "report.json").read_bytes())
    decision = orjson.loads((run / "decision.json").read_bytes())["decision"]
    trials = sorted(
        (trial["case"]["case_id"], trial["repeat"], orjson.dumps(trial["results"]))
        for trial in report["trials"]
    )
    return decision["decision"], decision["requirements"], trials


def _finish_and_check(run: Path, committed: bytes, reference: tuple[Any, ...]) -> None:
    """Resume (when the run is not complete), then: each episode once, verified, the
    committed bytes unchanged, graded as the uninterrupted run."""
    if not (run / "decision.json").exists() or not _complete(run):
        resumed = onrecord("run", "--resume", str(run), "--no-progress")
        assert resumed.returncode == 1, resumed.stderr  # double_poster: reject
    assert onrecord("verify", str(run)).returncode == 0
    store = RunStore.open(run)
    keys = [record.key for record in store.records()]
    assert len(keys) == len(set(keys)) == store.protocol.episodes
    assert (run / "episodes.jsonl").read_bytes().startswith(committed)
    assert _graded(run) == reference


def _complete(run: Path) -> bool:
    return bool(orjson.loads((run / "decision.json").read_bytes())["complete"])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, ...]:
    """The grading of the same run, never interrupted."""
    run = tmp_path_factory.mktemp("reference") / "run"
    done = onrecord("run", *REMITTANCE, "--out", str(run), "--no-progress")
    assert done.returncode == 1, done.stderr
    return _graded(run)


@pytest.mark.parametrize("commits", [1, 2])
@pytest.mark.parametrize("executor", [[], ["--workers", "2"]])
def test_kill_9_at_a_group_commit_then_resume_grades_as_never_interrupted(
    run_dir: Path, reference: tuple[Any, ...], commits: int, executor: list[str]
) -> None:
    process, committed = _start_held_at_commit(run_dir, executor, commits)
    process.kill()
    process.communicate()
    assert (run_dir / "episodes.jsonl").read_bytes() == committed  # nothing after the kill
    _finish_and_check(run_dir, committed, reference)


def test_kill_9_of_a_pool_worker_costs_no_episode(
    run_dir: Path, tmp_path: Path, reference: tuple[Any, ...]
) -> None:
    # One worker blocks in its 3rd episode, so the run cannot end before the kill lands
    # there (before, the test killed every worker after the first group commit, racing
    # the run's end); the other worker goes on.
    pid = tmp_path / "blocked.pid"
    args = ["run", *REMITTANCE, "--workers", "2", "--out", str(run_dir)]
    process = _start(args, env={BLOCK: str(pid)})
    _wait_for(process, pid.exists)
    _wait_for(process, lambda: _committed(run_dir) != b"")  # the run cannot end meanwhile
    worker = int(pid.read_text())
    assert worker in _children(process.pid)  # a worker of this run's pool
    committed = _committed(run_dir)
    os.kill(worker, signal.SIGKILL)
    _, stderr = process.communicate(timeout=120)
    # The episodes the dead worker held run again, in the run itself: none is lost.
    assert process.returncode == 1, stderr  # reject: double_poster, every episode graded
    assert _complete(run_dir)
    _finish_and_check(run_dir, committed, reference)


@pytest.mark.parametrize("executor", [[], ["--workers", "2"]])
def test_ctrl_c_at_a_group_commit_exits_130_and_keeps_what_finished(
    run_dir: Path, reference: tuple[Any, ...], executor: list[str]
) -> None:
    process, _ = _start_held_at_commit(run_dir, executor, 1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert f"`onrecord run --resume --out {run_dir}` continues" in stderr
    committed = (run_dir / "episodes.jsonl").read_bytes()
    assert committed.endswith(b"\n")  # everything that finished was committed whole
    _finish_and_check(run_dir, committed, reference)


def test_sigterm_while_the_run_is_planned_exits_130(run_dir: Path, tmp_path: Path) -> None:
    # Before: SIGTERM was Ctrl-C only while episodes ran; one that came while the run
    # was planned (or its report written) ended the process with 143 and no word.
    mark = tmp_path / "planning"
    process = _start(
        ["run", f"{HERE}:hanging_lake", "--agent", "noop", "--out", str(run_dir)],
        env={MARK: str(mark)},
    )
    deadline = time.monotonic() + 60
    while not mark.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert not run_dir.exists()  # planning writes nothing


def _run_gated_twice(first: list[str], second: list[str], gate: Path) -> tuple[int, str]:
    """Start both at once; the run's episodes wait for ``gate``, so the one that takes
    the directory holds it until the other has given up. Returns the winner's code and
    the loser's stderr."""
    env = {GATE: str(gate)}
    processes = [_start(first, env=env), _start(second, env=env)]
    deadline = time.monotonic() + 120
    while all(process.poll() is None for process in processes) and time.monotonic() < deadline:
        time.sleep(0.01)
    loser = next(process for process in processes if process.poll() is not None)
    _, refused = loser.communicate()
    assert loser.returncode == 3, refused
    gate.touch()
    winner = next(process for process in processes if process is not loser)
    _, stderr = winner.communicate(timeout=120)
    assert winner.returncode == 0, stderr
    return winner.returncode, refused


def test_two_runs_into_one_directory_at_once_one_is_refused(run_dir: Path, tmp_path: Path) -> None:
    args = ["run", "frozenlake", "--agent", f"{HERE}:gated_walker", "--seeds", "0-9"]
    code, refused = _run_gated_twice(
        [*args, "--out", str(run_dir)], [*args, "--out", str(run_dir)], tmp_path / "gate"
    )
    assert code == 0
    assert "already exists and is not empty" in refused or "another onrecord process" in refused
    assert onrecord("verify", str(run_dir)).returncode == 0
    assert len(list(RunStore.open(run_dir).records())) == 10


def test_two_resumes_at_once_one_is_refused_and_neither_corrupts_the_run(
    run_dir: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    args = ["run", "frozenlake", "--agent", f"{HERE}:gated_walker", "--seeds", "0-9"]
    process = _start([*args, "--out", str(run_dir)], env={GATE: str(gate)})
    while not (run_dir / "run.json").exists() and process.poll() is None:
        time.sleep(0.01)
    process.kill()  # nothing recorded yet: run.json and the empty logs
    process.communicate()
    resume = ["run", "--resume", str(run_dir)]
    code, refused = _run_gated_twice(resume, resume, gate)
    assert code == 0
    assert f"another onrecord process is writing to {run_dir}" in refused
    assert onrecord("verify", str(run_dir)).returncode == 0
    keys = [record.key for record in RunStore.open(run_dir).records()]
    assert len(keys) == len(set(keys)) == 10


def _limit_file_size() -> None:
    # Writes past 60 KB fail (EFBIG), as on a full disk: no root or mount needed.
    # Python ignores SIGXFSZ, so the write raises instead of killing the process.
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))


def test_a_refused_write_names_the_file_and_the_run_resumes(run_dir: Path) -> None:
    args = ["run", "frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0-59"]
    process = _start([*args, "--out", str(run_dir)], preexec=_limit_file_size)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 3, stderr
    # Before: "onrecord run: error: OSError: File too large", no file, no way on.
    assert f"{run_dir / 'episodes.jsonl'}: File too large" in stderr, stderr
    assert f"`onrecord run --resume --out {run_dir}` continues" in stderr, stderr
    committed = _committed(run_dir)
    assert 0 < committed.count(b"\n") < 60
    resumed = onrecord("run", "--resume", str(run_dir), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert onrecord("verify", str(run_dir)).returncode == 0
    assert (run_dir / "episodes.jsonl").read_bytes().startswith(committed)
    keys = [record.key for record in RunStore.open(run_dir).records()]
    assert len(keys) == len(set(keys)) == 60
