"""Capture under hostile exceptions and values: a broken ``__str__``, lone surrogates,
interrupts an agent swallows, cycles, NaN observations. The evidence must still be
built, verify on save and load, and say what happened."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord._canonical import state_bytes
from onrecord.episode import EpisodeEvidence
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode
from tests.core.envs import GenericEnv, capture_from, capture_generic


class StrRaises(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")


class StrNotText(Exception):
    def __str__(self) -> Any:
        return 42


def _go(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    return env.observation_space.sample(), 1.0, False, False, {}


def _reloaded(episode: EpisodeEvidence, tmp_path: Path) -> EpisodeEvidence:
    episode.save_json(tmp_path / "episode.json")
    loaded = EpisodeEvidence.load(tmp_path / "episode.json")
    assert loaded.data == episode.data
    return loaded


def _raiser(exc: BaseException) -> Any:
    def raise_it(*args: Any) -> Any:
        raise exc

    return raise_it


def _line_of(text: str) -> int:
    """The number of the line of this file that is ``text``: a failure of the user's code
    is recorded with the line that raised it (since round 51), found here, not pinned."""
    with open(__file__, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


def _run_with_failure_in(phase: str, exc: Exception) -> EpisodeEvidence:
    """One episode in which ``phase`` raises ``exc`` (an agent that keeps going)."""

    def interact(env: Any, observation: Any, info: Any) -> None:
        with contextlib.suppress(Exception):
            env.step(0)
        if phase == "interact":
            raise exc

    env = GenericEnv(
        _raiser(exc) if phase == "step" else _go,
        close=_raiser(exc) if phase == "close" else None,
    )
    factory = _raiser(exc) if phase == "factory" else (lambda: env)
    observe = _raiser(exc) if phase == "observe" else dict
    return capture_from(factory, interact, observe=observe)


PHASES = ["step", "interact", "observe", "close", "factory"]


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("kind", [StrRaises, StrNotText], ids=["str-raises", "str-not-text"])
def test_an_exception_whose_str_is_broken_is_still_recorded(
    phase: str, kind: type[Exception], tmp_path: Path
) -> None:
    # Before: the ValueError/TypeError from str(exc) escaped capture_episode, or replaced
    # the environment's exception and lost the attempt.
    episode = _run_with_failure_in(phase, kind("x"))
    raised = "ValueError" if kind is StrRaises else "TypeError"
    failure = f"<str() of this exception raised {raised}>"
    assert any(failure in issue for issue in episode.coverage_issues)
    if phase == "step":
        attempt = episode.attempts()[0]
        assert attempt["status"] == "env_error"
        at = f" (at {__file__}:{_line_of('        raise exc')} in raise_it)"
        assert attempt["error"] == {
            "type": f"{__name__}.{kind.__qualname__}",
            "message": failure + at,
        }
    _reloaded(episode, tmp_path)


@pytest.mark.parametrize("phase", PHASES)
def test_a_lone_surrogate_in_an_error_message_is_kept_escaped(phase: str, tmp_path: Path) -> None:
    # Before: "str is not valid UTF-8: surrogates not allowed" escaped capture_episode.
    episode = _run_with_failure_in(phase, RuntimeError("bad byte \udcff in the reply"))
    assert any("bad byte \\udcff in the reply" in issue for issue in episode.coverage_issues)
    _reloaded(episode, tmp_path)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_an_interrupted_step_that_the_agent_swallows_is_still_recorded(
    interrupt: type[BaseException], tmp_path: Path
) -> None:
    # Before: the interrupted step ran but vanished from the evidence.
    calls = {"n": 0}

    def step(env: GenericEnv, action: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise interrupt("stop")
        return _go(env, action)

    def interact(env: Any, observation: Any, info: Any) -> None:
        with contextlib.suppress(BaseException):  # a sloppy agent: a bare except
            env.step(1)
        env.step(0)

    episode = capture_generic(GenericEnv(step), interact, observe=lambda: dict(calls))
    attempts = episode.attempts()
    assert [a["status"] for a in attempts] == ["env_error", "ok"]
    assert attempts[0]["action"] == 1
    assert attempts[0]["error"]["type"] == f"builtins.{interrupt.__name__}"
    assert episode.states() == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 2}]
    _reloaded(episode, tmp_path)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupted_observer_read_that_the_agent_swallows_keeps_the_step(
    interrupt: type[BaseException], tmp_path: Path
) -> None:
    # Before: the step had reached the environment, but its record was never written.
    reads = {"n": 0}

    def observe() -> dict[str, int]:
        reads["n"] += 1
        if reads["n"] == 2:  # the read after the first step
            raise interrupt("stop")
        return {"read": reads["n"]}

    def interact(env: Any, observation: Any, info: Any) -> None:
        with contextlib.suppress(BaseException):
            env.step(1)
        env.step(0)

    env = GenericEnv(_go)
    episode = capture_generic(env, interact, observe=observe)
    assert env.steps_taken == 2
    assert [a["action"] for a in episode.attempts()] == [1, 0]
    assert episode.states() == [{"read": 1}, None, {"read": 3}, {"read": 4}]
    assert f"observer failed after step 0: {interrupt.__name__}: stop" in episode.coverage_issues
    _reloaded(episode, tmp_path)


@pytest.mark.parametrize("where", ["step", "observe", "close", "interact"])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_unhandled_interrupt_propagates_after_cleanup(
    where: str, interrupt: type[BaseException]
) -> None:
    reads = {"n": 0}

    def observe() -> dict[str, int]:
        reads["n"] += 1
        if where == "observe" and reads["n"] == 2:
            raise interrupt()
        return {}

    def close() -> None:
        if where == "close":
            raise interrupt()

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)
        if where == "interact":
            raise interrupt()

    env = GenericEnv(_raiser(interrupt()) if where == "step" else _go, close=close)
    with pytest.raises(interrupt):
        capture_generic(env, interact, observe=observe)
    assert env.closed


def test_a_return_value_that_contains_itself_is_noted_not_an_interact_error() -> None:
    # Before: the RecursionError was recorded as interact raising, and ended=interact_error.
    cycle: list[Any] = []
    cycle.append(cycle)
    episode = capture_generic(GenericEnv(_go), lambda env, observation, info: cycle)
    assert episode.data["interact"]["error"] is None
    assert episode.data["interact"]["returned"]["unportable"] == "list"
    assert "RecursionError" not in " ".join(episode.coverage_issues)
    assert episode.ended == "returned"


def test_an_info_that_contains_itself_keeps_the_executed_step(tmp_path: Path) -> None:
    # Before: the RecursionError left step() with the step executed but unrecorded. A
    # cycle is an unportable info: the step is kept as an environment error.
    def step(env: GenericEnv, action: Any) -> Any:
        info: dict[str, Any] = {}
        info["self"] = info
        return env.observation_space.sample(), 1.0, False, False, info

    raised: list[BaseException] = []

    def interact(env: Any, observation: Any, info: Any) -> None:
        try:
            env.step(1)
        except PortabilityError as exc:
            raised.append(exc)

    episode = capture_generic(GenericEnv(step), interact)
    assert len(raised) == 1
    attempt = episode.attempts()[0]
    assert (attempt["status"], attempt["action"]) == ("env_error", 1)
    assert "(or contains itself)" in attempt["error"]["message"]
    _reloaded(episode, tmp_path)


def test_a_nan_observation_mid_episode_keeps_the_episode(tmp_path: Path) -> None:
    # Before: capture_episode raised PortabilityError at the end and every step was lost.
    observations = iter(
        [np.zeros(2, np.float32), np.array([np.nan, 0], np.float32), np.ones(2, np.float32)]
    )

    def step(env: GenericEnv, action: Any) -> Any:
        return next(observations), 1.0, False, False, {}

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(3):
            env.step(0)

    episode = capture_generic(GenericEnv(step), interact, max_steps=3)
    attempts = episode.attempts()
    assert [a["status"] for a in attempts] == ["ok", "env_error", "ok"]
    assert "observation at attempt 1 that JSON cannot hold" in attempts[1]["error"]["message"]
    assert "np.float32(nan)" in attempts[1]["error"]["message"]
    assert [t["observation"] for t in episode.transitions()] == [[0.0, 0.0], [1.0, 1.0]]
    assert episode.measures == {"return": 2.0, "steps": 2}
    _reloaded(episode, tmp_path)


def test_an_infinite_observation_on_the_last_step_takes_its_end_flags_with_it() -> None:
    def step(env: GenericEnv, action: Any) -> Any:
        return np.array([np.inf, 0], np.float32), 1.0, True, False, {}

    episode = capture_generic(GenericEnv(step), lambda env, observation, info: env.step(0))
    assert episode.transitions() == []
    assert episode.ended == "returned"
    assert any("np.float32(inf)" in issue for issue in episode.coverage_issues)


class _InterruptedOnce(np.ndarray):
    """The first read of its dtype raises KeyboardInterrupt, later reads work: what one
    Ctrl-C that lands while orjson's ``default`` hook runs looks like."""

    fired = False

    @property  # type: ignore[override]
    def dtype(self) -> Any:
        if not _InterruptedOnce.fired:
            _InterruptedOnce.fired = True
            raise KeyboardInterrupt
        return np.ndarray.dtype.__get__(self, np.ndarray)  # type: ignore[attr-defined]


def test_a_ctrl_c_inside_the_serializer_hook_is_not_taken_for_a_bad_value() -> None:
    """orjson turns what its hook raises into a TypeError: the interrupt must come back
    out as itself, after cleanup, not become an observer error while capture goes on."""
    interrupted = np.zeros(3).view(_InterruptedOnce)
    _InterruptedOnce.fired = False
    closed: list[bool] = []

    class Closing(gym.Wrapper[Any, Any, Any, Any]):
        def close(self) -> None:
            closed.append(True)
            super().close()

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(1)

    with pytest.raises(KeyboardInterrupt):
        capture_episode(
            lambda: Closing(gym.make("FrozenLake-v1")),
            interact,
            case=EvalCase("interrupt"),
            environment_id="frozenlake/v1",
            observer_id="interrupted/v1",
            observe=lambda: {"tile": 0, "frame": interrupted},
            seed=0,
            max_steps=3,
        )
    assert closed == [True]
    _InterruptedOnce.fired = False
    with pytest.raises(KeyboardInterrupt):
        state_bytes({"frame": interrupted})
