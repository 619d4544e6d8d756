"""``episode_timeout``: an episode still running after the limit is stopped and not
recorded (a resume retries it), whatever the executor, while the other episodes of the
run, those of the same chunk included, are recorded. Agents here hang for real: sleeping,
spinning, catching ``Exception``, catching ``BaseException``."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest

from onrecord.errors import InputError
from onrecord.runner import (
    ProcessPoolExecutor,
    RunProtocol,
    RunResult,
    RunStore,
    plan_run,
    resume_run,
    start_run,
)
from tests.runner._ray_cluster import local_ray_cluster
from tests.runner.conftest import onrecord

FAST = "ONRECORD_TIMEOUT_TEST_FAST"
"""When set, the agents here never hang (a fixed agent, for resumes)."""
HERE = __file__
POOL_LIMIT = 4.0
"""The limit in fresh worker processes: it covers loading (docs/runs.md), and a new
worker imports the agent's module, Gymnasium and onrecord inside its first episode, which
took more than 0.5 s on a loaded 2-core machine (an episode that never hangs timed out
too). Only the hung episodes wait for it."""
POOL = f"{POOL_LIMIT:g} s"


def _walk(env: Any) -> str:
    for action in (1, 1, 2, 2, 1, 2):  # FrozenLake 4x4: to the goal
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"
    return "gave up"


def _hangs(env: Any, seed: int = 1) -> bool:
    return env.np_random_seed == seed and not os.environ.get(FAST)


def sleeps(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Sleeps for an hour on seed 1."""
    if _hangs(env):
        time.sleep(3600)
    return _walk(env)


def stubborn(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Spins on seed 1; on seed 2 sleeps in a loop that catches every Exception."""
    if _hangs(env):
        count = 0
        while True:
            count += 1
    if _hangs(env, 2):
        while True:
            try:
                time.sleep(10)
            except Exception:
                continue
    return _walk(env)


def shrugs_off(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """On seed 1 catches whatever stops its sleep, then finishes as if nothing happened."""
    if _hangs(env):
        with contextlib.suppress(BaseException):
            time.sleep(10)
    return _walk(env)


def never_stops(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """On seed 1 catches every BaseException, forever: only ending its process stops it."""
    if _hangs(env):
        while True:
            try:
                time.sleep(10)
            except BaseException:
                continue
    return _walk(env)


def naps(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Takes 1.5 s on seed 1."""
    if _hangs(env):
        time.sleep(1.5)
    return _walk(env)


def interrupted(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Ctrl-C lands during seed 1."""
    if _hangs(env):
        raise KeyboardInterrupt
    return _walk(env)


_SLOW_COLLECTIONS: list[float] = []


def _slow_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and _SLOW_COLLECTIONS:  # the limit expires in here
        time.sleep(_SLOW_COLLECTIONS.pop())


def collected(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """On seed 1 the limit expires in a garbage-collector callback (where Python ignores
    an exception), then the agent naps for 5 s."""
    if _hangs(env):
        _SLOW_COLLECTIONS[:] = [1.5]
        gc.callbacks.append(_slow_collection)
        try:
            gc.collect()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            gc.callbacks.remove(_slow_collection)
    return _walk(env)


OPENED: list[int] = []
CLOSED: list[int] = []


class _Counted(gym.Wrapper[Any, Any, Any, Any]):
    def close(self) -> None:
        CLOSED.append(1)
        super().close()


def counted_lake(**config: Any) -> gym.Env[Any, Any]:
    """``module:factory``: FrozenLake, counting the environments made and closed."""
    OPENED.append(1)
    return _Counted(gym.make("FrozenLake-v1", is_slippery=False, **config))


def _plan(agent: str, seeds: str = "0-3") -> RunProtocol:
    low, high = map(int, seeds.split("-"))
    return plan_run(
        "frozenlake", f"tests.runner.test_episode_timeout:{agent}", seeds=range(low, high + 1)
    )


def _keys(run_dir: Path) -> list[int]:
    return sorted(record.key[1] for record in RunStore.open(run_dir).records())


def _errors(run_dir: Path) -> dict[int, str]:
    lines = (run_dir / "errors.jsonl").read_bytes().splitlines()
    return {orjson.loads(line)["repeat"]: orjson.loads(line)["error"] for line in lines}


def _timed_out(result: RunResult, repeat: int, limit: str = "0.5 s") -> str:
    [error] = [e for e in result.errors if e.split(": ", 1)[0].endswith(f"#{repeat}")]
    assert f"timed out: the episode exceeded its time limit of {limit}" in error, error
    assert error.endswith("a resume retries it"), error
    return error


def _outer_handler(signum: int, frame: Any) -> None:
    raise AssertionError("the caller's own SIGALRM timer fired during the test")


@pytest.fixture(autouse=True)
def _no_long_collection() -> None:
    """A long-lived test worker holds a big heap: in CI a full collection of it outlasted
    the 0.5 s limit of an episode that never hangs. Frozen, the heap is not scanned (the
    suite's conftest unfreezes and collects it every ``FREEZE_EVERY`` tests)."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def caller_alarm() -> Iterator[None]:
    """A SIGALRM handler and a (distant) timer of the caller's own, as pytest-timeout
    would set: an in-process run must put both back."""
    previous = signal.signal(signal.SIGALRM, _outer_handler)
    signal.setitimer(signal.ITIMER_REAL, 1000)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _assert_caller_alarm_intact() -> None:
    assert signal.getsignal(signal.SIGALRM) is _outer_handler
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    assert 900 < left <= 1000
    assert interval == 0


def test_in_process_a_hung_episode_is_stopped_and_resume_keeps_the_limit(
    run_dir: Path, caller_alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = start_run(run_dir, _plan("sleeps"), episode_timeout=0.5)
    # Before: the run slept for an hour.
    error = _timed_out(result, 1)
    assert f"stuck at {HERE}:" in error  # the agent's time.sleep line
    assert _keys(run_dir) == [0, 2, 3]
    assert list(_errors(run_dir)) == [1]
    assert not result.complete
    assert result.exit_code == 2  # the others accept; an incomplete run never does
    _assert_caller_alarm_intact()
    assert RunStore.open(run_dir).episode_timeout == 0.5
    # Resumed without a limit: the run's own applies (the agent still hangs).
    again = resume_run(run_dir)
    _timed_out(again, 1)
    assert again.episode_timeout == 0.5
    assert _keys(run_dir) == [0, 2, 3]
    monkeypatch.setenv(FAST, "1")
    fixed = resume_run(run_dir)
    assert fixed.complete
    assert not fixed.errors
    assert fixed.exit_code == 0
    assert _keys(run_dir) == [0, 1, 2, 3]
    _assert_caller_alarm_intact()


def test_the_stopped_episodes_environment_is_closed(run_dir: Path) -> None:
    OPENED.clear()
    CLOSED.clear()
    protocol = plan_run(
        "tests.runner.test_episode_timeout:counted_lake",
        "tests.runner.test_episode_timeout:sleeps",
        seeds=range(3),
    )
    result = start_run(run_dir, protocol, episode_timeout=0.5)
    _timed_out(result, 1)
    assert _keys(run_dir) == [0, 2]
    assert len(OPENED) >= 3
    assert len(CLOSED) == len(OPENED)


def test_a_busy_loop_and_an_agent_catching_exception_are_stopped_too(run_dir: Path) -> None:
    before = signal.getsignal(signal.SIGALRM)
    result = start_run(run_dir, _plan("stubborn"), episode_timeout=0.5)
    assert f"stuck at {HERE}:" in _timed_out(result, 1)
    assert f"stuck at {HERE}:" in _timed_out(result, 2)
    assert _keys(run_dir) == [0, 3]
    assert result.exit_code == 2
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_timeout_python_ignored_in_a_gc_callback_is_raised_again(run_dir: Path) -> None:
    hook = sys.unraisablehook
    result = start_run(run_dir, _plan("collected"), episode_timeout=0.5)
    # Before: ignored there ("Exception ignored in ..."), and the episode napped on to
    # its end: "it caught the timeout and went on".
    error = _timed_out(result, 1)
    assert "caught the timeout" not in error
    assert f"stuck at {HERE}:" in error
    assert _keys(run_dir) == [0, 2, 3]
    assert sys.unraisablehook is hook  # put back


def test_an_episode_that_swallows_the_timeout_is_not_recorded(run_dir: Path) -> None:
    result = start_run(run_dir, _plan("shrugs_off"), episode_timeout=0.5)
    # Before the check that the limit fired: recorded as a finished, passing episode.
    assert "caught the timeout and went on" in _timed_out(result, 1)
    assert _keys(run_dir) == [0, 2, 3]


def test_ctrl_c_during_a_limited_episode_leaves_no_handler_or_timer(run_dir: Path) -> None:
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(KeyboardInterrupt):
        start_run(run_dir, _plan("interrupted"), episode_timeout=5)
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert _keys(run_dir) == [0]


def test_an_explicit_limit_on_resume_replaces_the_runs_for_that_resume(run_dir: Path) -> None:
    start_run(run_dir, _plan("naps"), episode_timeout=0.5)
    assert list(_errors(run_dir)) == [1]
    result = resume_run(run_dir, episode_timeout=10)
    assert result.complete
    assert result.exit_code == 0
    assert RunStore.open(run_dir).episode_timeout == 0.5  # run.json is never rewritten


def test_process_pool_records_the_hung_episodes_chunk_mates(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ProcessPoolExecutor(2, chunk_size=4) as pool:  # every episode in one chunk
        result = start_run(run_dir, _plan("stubborn"), executor=pool, episode_timeout=POOL_LIMIT)
    for repeat in (1, 2):
        error = _timed_out(result, repeat, POOL)
        assert "was stopped" in error
        assert f"stuck at {HERE}:" in error
    assert _keys(run_dir) == [0, 3]
    assert result.exit_code == 2
    monkeypatch.setenv(FAST, "1")  # before the pool spawns its workers
    with ProcessPoolExecutor(2) as pool:
        assert resume_run(run_dir, executor=pool).exit_code == 0
    assert _keys(run_dir) == [0, 1, 2, 3]


def test_a_worker_stuck_catching_baseexception_is_ended_and_reported_as_timed_out(
    run_dir: Path,
) -> None:
    with ProcessPoolExecutor(2, chunk_size=3) as pool:
        result = start_run(
            run_dir, _plan("never_stops", "0-2"), executor=pool, episode_timeout=POOL_LIMIT
        )
    # Before: the worker (and the run) never ended.
    error = _timed_out(result, 1, POOL)
    assert "its worker process was ended" in error, error
    assert "worker process running this episode died" not in error
    assert f"stuck at {HERE}:" in error
    assert _keys(run_dir) == [0, 2]  # its chunk mates ran again and were recorded


def test_cli_flag_config_file_exit_code_and_resume(tmp_path: Path) -> None:
    run_dir, config = tmp_path / "run", tmp_path / "run.toml"
    config.write_text(f"episode_timeout = {POOL_LIMIT}\n")
    agent = "tests.runner.test_episode_timeout:sleeps"
    pool = ["--executor", "process", "--workers", "2"]
    args = ["frozenlake", "--agent", agent, "--seeds", "0-3", *pool, "--no-progress"]
    done = onrecord("run", *args, "--config", str(config), "--out", str(run_dir), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr  # an incomplete run, never accept
    summary = _words(done.stdout)
    assert f"{POOL} per episode" in summary
    assert (
        "not recorded: frozenlake/goal#1: timed out: the episode exceeded its time limit of "
        f"{POOL} and was stopped (stuck at {HERE}:"
    ) in summary
    assert "incomplete: 1 episodes are missing" in summary
    # The run's limit applies on resume; a flag replaces it.
    again = onrecord("run", "--resume", str(run_dir), *pool, "--no-progress", timeout=60)
    assert again.returncode == 2
    assert f"{POOL} per episode" in _words(again.stdout)
    fixed = onrecord(
        "run", "--resume", str(run_dir), "--episode-timeout", "30", "--no-progress",
        env={FAST: "1"},
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "30 s per episode" in _words(fixed.stdout)
    assert _keys(run_dir) == [0, 1, 2, 3]


def _words(text: str) -> str:
    """The summary with its long lines unwrapped (they wrap at spaces)."""
    return " ".join(text.split())


def test_the_limit_changes_neither_the_lock_nor_what_is_recorded(tmp_path: Path) -> None:
    protocol = _plan("sleeps", "2-3")  # seeds that never hang
    limited = start_run(tmp_path / "a", protocol, episode_timeout=30)
    free = start_run(tmp_path / "b", protocol)
    assert limited.report.lock == free.report.lock
    assert (tmp_path / "a" / "report.json").exists()

    def prints(path: Path) -> list[str]:
        return [r.data["fingerprint"] for r in RunStore.open(path).records()]

    assert prints(tmp_path / "a") == prints(tmp_path / "b")
    assert RunStore.open(tmp_path / "b").episode_timeout is None


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf, "2", True, 1e10])
def test_bad_limits_are_refused_before_anything_is_written(run_dir: Path, value: Any) -> None:
    with pytest.raises(InputError, match="episode_timeout must be a"):
        start_run(run_dir, _plan("sleeps"), episode_timeout=value)
    assert not run_dir.exists()


def test_bad_limits_on_resume_and_on_the_command_line(tmp_path: Path) -> None:
    start_run(tmp_path / "run", _plan("sleeps", "2-2"))
    with pytest.raises(InputError, match="episode_timeout must be a positive"):
        resume_run(tmp_path / "run", episode_timeout=-2)
    base = ["run", "frozenlake", "--agent", "walks_to_goal", "--no-progress"]
    for text in ("0", "-1", "nan", "inf", "soon"):
        done = onrecord(*base, "--episode-timeout", text, "--out", str(tmp_path / "x"))
        assert done.returncode == 3, done.stdout + done.stderr
        assert "--episode-timeout must be a" in done.stderr
    config = tmp_path / "bad.toml"
    for line in ('episode_timeout = "2"', "episode_timeout = 0", "episode_timeout = nan"):
        config.write_text(line + "\n")
        done = onrecord(*base, "--config", str(config), "--out", str(tmp_path / "x"))
        assert done.returncode == 3, done.stdout + done.stderr
        assert f"{config}: episode_timeout must be a" in done.stderr
    assert not (tmp_path / "x").exists()


def test_in_process_off_the_main_thread_is_refused(run_dir: Path) -> None:
    raised: list[BaseException] = []

    def start() -> None:
        try:
            start_run(run_dir, _plan("sleeps"), episode_timeout=1)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    # Before: the limit was silently not kept (a signal only reaches the main thread).
    assert len(raised) == 1
    assert isinstance(raised[0], InputError)
    assert "main thread" in str(raised[0])
    assert not run_dir.exists()


@pytest.mark.ray
def test_ray_stops_hung_episodes_and_records_the_rest(run_dir: Path) -> None:
    ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
    from onrecord.runner import RayExecutor

    if ray.is_initialized():
        pytest.skip("a Ray cluster is already connected")
    with local_ray_cluster():
        # One task: seed 1 sleeps (the signal stops it), seed 2 catches every
        # BaseException (the watchdog ends the worker; its chunk mates run again).
        protocol = plan_run("frozenlake", "tests.runner.test_episode_timeout:mixed", seeds=range(4))
        with RayExecutor(chunk_size=4) as executor:
            result = start_run(run_dir, protocol, executor=executor, episode_timeout=POOL_LIMIT)
    assert "was stopped" in _timed_out(result, 1, POOL)
    assert "its worker process was ended" in _timed_out(result, 2, POOL)
    assert _keys(run_dir) == [0, 3]
    assert result.exit_code == 2


def mixed(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """Sleeps on seed 1; catches every BaseException, forever, on seed 2."""
    if _hangs(env, 2):
        while True:
            try:
                time.sleep(10)
            except BaseException:
                continue
    return sleeps(env, observation, info)
