"""A Ctrl-C that code in onrecord's own process swallowed still stops it. sqlite3 reports
a KeyboardInterrupt raised in an authorizer (the environment kit's statement guard is
one) as the statement being "not authorized": a Ctrl-C while the remittance environment
was being planned ended `onrecord run` with exit 3 and a bogus DatabaseError, and one
during an in-process episode was lost, the run going on and recording an episode whose
tool call had failed because of it."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.runner import (
    InProcessExecutor,
    JobResult,
    ProcessPoolExecutor,
    Progress,
    RunStore,
    plan_run,
    regrade_run,
    resume_run,
    start_run,
)
from onrecord.runner._interrupts import interrupts_kept

HERE = "tests.runner.test_swallowed_interrupts"
CTRL_C_AT: set[str] = set()
"""Where the next Ctrl-C lands: "make" (building the environment), "seed 1" (the episode
of seed 1), "check"."""


def _statement_taking_ctrl_c() -> str:
    """A statement prepared while Ctrl-C comes, as when it lands in the statement guard:
    sqlite3 swallows the KeyboardInterrupt and the statement fails."""
    conn = sqlite3.connect(":memory:")

    def authorizer(*_: Any) -> int:
        signal.raise_signal(signal.SIGINT)  # its handler raises KeyboardInterrupt here
        return sqlite3.SQLITE_OK

    conn.set_authorizer(authorizer)
    try:
        conn.execute("SELECT 1")
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    return "no error"


def lake(**config: Any) -> gym.Env[Any, Any]:
    """``module:factory``: FrozenLake, whose making takes the Ctrl-C when asked to."""
    if "make" in CTRL_C_AT:
        CTRL_C_AT.discard("make")
        _statement_taking_ctrl_c()
    return gym.make("FrozenLake-v1", is_slippery=False, **config)


def _reaches_goal(evidence: Any) -> OutcomeVerdict:
    if "check" in CTRL_C_AT:  # reading a database, as a tool world's checks do
        CTRL_C_AT.discard("check")
        raise sqlite3.DatabaseError(_statement_taking_ctrl_c())
    return OutcomeVerdict(True, "walked", {})


CHECKS = [OutcomeCheck("reaches_goal", "v1", _reaches_goal)]


def walks(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """To the goal; on seed 1 a tool-like statement takes the Ctrl-C and fails first."""
    if env.np_random_seed == 1 and "seed 1" in CTRL_C_AT:
        CTRL_C_AT.discard("seed 1")
        if _statement_taking_ctrl_c() != "not authorized":
            raise AssertionError("sqlite3 no longer swallows it: simplify this test")
        return "gave up: the database refused"  # into the record, as a failure
    for action in (1, 1, 2, 2, 1, 2):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"
    return "gave up"


@pytest.fixture(autouse=True)
def _no_ctrl_c_left() -> Any:
    CTRL_C_AT.clear()
    yield
    CTRL_C_AT.clear()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_swallowing_is_real() -> None:
    # Without interrupts_kept the interrupt is simply gone.
    assert _statement_taking_ctrl_c() == "not authorized"


def test_a_ctrl_c_swallowed_while_planning_is_an_interrupt_not_bad_input() -> None:
    CTRL_C_AT.add("make")
    # Before: lost (here the factory handles the failed statement); the remittance
    # environment failed instead, "failed while planning the run: DatabaseError: not
    # authorized", exit 3.
    with pytest.raises(KeyboardInterrupt):
        plan_run(f"{HERE}:lake", f"{HERE}:walks", seeds=[0])


def test_a_ctrl_c_swallowed_in_an_episode_stops_the_run_and_that_episode_is_not_recorded(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    protocol = plan_run("frozenlake", f"{HERE}:walks", seeds=range(3))
    CTRL_C_AT.add("seed 1")
    # Before: the run went on and recorded seed 1 as the agent failing (exit 1, reject).
    with pytest.raises(KeyboardInterrupt):
        start_run(run_dir, protocol)
    assert sorted(record.key[1] for record in RunStore.open(run_dir).records()) == [0]
    result = resume_run(run_dir)
    assert result.complete
    assert result.exit_code == 0


def test_a_ctrl_c_swallowed_while_regrading_stops_it_and_saves_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    start_run(run_dir, plan_run("frozenlake", f"{HERE}:walks", seeds=range(2)))
    CTRL_C_AT.add("check")
    # Before: the check's error was saved as a changed verdict (a Ctrl-C while a tool
    # world was rebuilt read as "the run directory was edited").
    with pytest.raises(KeyboardInterrupt):
        regrade_run(run_dir, [f"{HERE}:CHECKS"], name="v2")
    assert not (run_dir / "regrades" / "v2").exists()


def test_interrupts_kept_leaves_other_handlers_and_threads_alone() -> None:
    noted: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, _frame: noted.append(number))
    try:
        with interrupts_kept():  # a handler of the caller's: Ctrl-C means what it says
            assert _statement_taking_ctrl_c() == "no error"
        assert noted == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
    with pytest.raises(KeyboardInterrupt), interrupts_kept():
        signal.raise_signal(signal.SIGINT)  # not swallowed: raised as it always was
    with pytest.raises(KeyboardInterrupt) as raised, interrupts_kept():
        _statement_taking_ctrl_c()
    assert raised.value.__cause__ is None  # it returned normally; raised on leaving


class _SwallowsOnce(Progress):
    """A progress display that takes the Ctrl-C and swallows it (here in sqlite3's
    authorizer; a weakref callback or ``__del__`` it lands in does the same)."""

    def __init__(self) -> None:
        self.advanced = 0

    def advance(self, result: JobResult) -> None:
        self.advanced += 1
        if self.advanced == 1:
            assert _statement_taking_ctrl_c() == "not authorized"


@pytest.mark.parametrize("where", ["inprocess", "pool"])
def test_a_ctrl_c_swallowed_between_episodes_stops_the_run_there(
    where: str, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    protocol = plan_run("frozenlake", f"{HERE}:walks", seeds=range(4))
    executor = InProcessExecutor() if where == "inprocess" else ProcessPoolExecutor(1)
    progress = _SwallowsOnce()
    # Before: the run went on to its end and returned, as though nothing had happened.
    with executor, pytest.raises(KeyboardInterrupt):
        start_run(run_dir, protocol, executor=executor, progress=progress)
    assert progress.advanced == 1
    assert len(list(RunStore.open(run_dir).records())) == 1  # the one it had recorded
    assert resume_run(run_dir).complete
