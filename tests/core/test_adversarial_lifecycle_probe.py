"""Capture under agents and observers that step around the rules: an observer that
steps or resets, two threads stepping at once, a kept reference stepping after capture
returned, and stepping the inner environment directly (``env.env``, ``env.unwrapped``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord.episode import EpisodeEvidence
from onrecord.errors import LifecycleError
from tests.core.envs import GenericEnv, capture_from, capture_generic


def _reloaded(episode: EpisodeEvidence, tmp_path: Path) -> EpisodeEvidence:
    episode.save_json(tmp_path / "episode.json")
    loaded = EpisodeEvidence.load(tmp_path / "episode.json")
    assert loaded.data == episode.data
    return loaded


def _counting_env() -> tuple[GenericEnv, dict[str, Any]]:
    world: dict[str, Any] = {"actions": []}

    def step(env: GenericEnv, action: Any) -> Any:
        world["actions"].append(int(action))
        return env.observation_space.sample(), float(action), False, False, {"a": int(action)}

    return GenericEnv(step), world


def test_an_observer_that_steps_is_refused_and_the_history_stays_in_order(
    tmp_path: Path,
) -> None:
    # Before: the observer's step ran and was recorded *before* the step that triggered
    # it, with that step's info misfiled: the evidence reversed the real order.
    env, world = _counting_env()
    held: dict[str, Any] = {}

    def observe() -> dict[str, Any]:
        if "env" in held:
            held["env"].step(1)  # a "read" that acts
        return {"actions": list(world["actions"])}

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        held["env"] = wrapped
        wrapped.step(0)
        wrapped.step(0)

    episode = capture_generic(env, interact, observe=observe)
    assert world["actions"] == [0, 0]  # the observer's steps never reached the environment
    assert [(t["action"], t["info"]) for t in episode.transitions()] == [(0, {"a": 0})] * 2
    errors = episode.data["steps"]["observer_error"]
    assert all(e and "LifecycleError: step() was called while a step" in e for e in errors)
    assert episode.data["final_observer_error"]  # the read before cleanup was refused too
    _reloaded(episode, tmp_path)


def test_an_observer_that_resets_is_refused_and_named(tmp_path: Path) -> None:
    env, _ = _counting_env()
    held: dict[str, Any] = {}

    def observe() -> dict[str, Any]:
        if "env" in held:
            held.pop("env").reset()
        return {}

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        held["env"] = wrapped
        wrapped.step(0)

    episode = capture_generic(env, interact, observe=observe)
    assert episode.data["steps"]["observer_error"][0].startswith(
        "LifecycleError: reset() was called while a step or an observer read was in progress"
    )
    assert episode.data["events"][0]["phase"] == "reset"
    _reloaded(episode, tmp_path)


def test_two_threads_stepping_at_once_never_pass_max_steps(tmp_path: Path) -> None:
    # Before: both threads passed the max_steps check before either was recorded: the
    # environment ran more than max_steps steps, and the record failed verification.
    def step(env: GenericEnv, action: Any) -> Any:
        time.sleep(0.0002)  # releases the GIL inside the step, as real simulators do
        return env.observation_space.sample(), 1.0, False, False, {"n": env.steps_taken}

    env = GenericEnv(step)
    refused: list[BaseException] = []

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        def loop() -> None:
            for _ in range(40):
                try:
                    wrapped.step(0)
                except LifecycleError as exc:
                    refused.append(exc)
                except Exception:
                    return

        threads = [threading.Thread(target=loop) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    episode = capture_generic(env, interact, max_steps=30)
    assert env.steps_taken == 30
    assert episode.ended == "step_limit"
    assert [t["info"]["n"] for t in episode.transitions()] == list(range(1, 31))
    assert refused  # the collisions were refused, and are in the record
    assert len([e for e in episode.data["events"] if e["phase"] == "step"]) == len(refused)
    _reloaded(episode, tmp_path)


def test_a_kept_reference_cannot_step_or_reset_after_capture_returned(tmp_path: Path) -> None:
    # Before: the step went to the closed environment and returned a normal result.
    env, world = _counting_env()
    kept: dict[str, Any] = {}

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        kept["env"] = wrapped
        wrapped.step(0)

    episode = capture_generic(env, interact)
    before = episode.data
    with pytest.raises(LifecycleError, match="after interact returned"):
        kept["env"].step(0)
    with pytest.raises(LifecycleError, match="after interact returned"):
        kept["env"].reset()
    assert world["actions"] == [0]
    assert episode.data == before
    _reloaded(episode, tmp_path)


def test_a_thread_left_running_by_interact_cannot_step_during_cleanup() -> None:
    env, world = _counting_env()
    started, stop = threading.Event(), threading.Event()
    outcomes: list[str] = []
    threads: list[threading.Thread] = []

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        def late() -> None:
            started.set()
            stop.wait(5)
            try:
                wrapped.step(1)
                outcomes.append("stepped")
            except LifecycleError:
                outcomes.append("refused")

        threads.append(threading.Thread(target=late, daemon=True))
        threads[0].start()
        started.wait(5)

    reads: list[int] = []

    def observe() -> dict[str, Any]:
        reads.append(1)
        if len(reads) == 2:  # the read before cleanup: let the thread try now
            stop.set()
            time.sleep(0.01)
        return {}

    episode = capture_generic(env, interact, observe=observe)
    stop.set()
    # Joined, not polled for 1 s: a loaded machine may not run the thread that soon.
    threads[0].join(60)
    assert outcomes == ["refused"]
    assert world["actions"] == []
    assert episode.attempts() == []


def _cartpole() -> tuple[Any, dict[str, Any]]:
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    return factory, holder


@pytest.mark.parametrize(
    ("bypass", "message"),
    [
        (lambda wrapped: wrapped.env.step(0), "counted 3 steps since the reset, but capture"),
        (lambda wrapped: wrapped.env.reset(seed=1), "something reset the environment"),
    ],
    ids=["inner-step", "inner-reset"],
)
def test_stepping_or_resetting_the_inner_environment_is_detected_by_its_time_limit(
    bypass: Any, message: str, tmp_path: Path
) -> None:
    # Before: the bypass left no trace but a jump in the observer's states.
    factory, _ = _cartpole()

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        wrapped.step(0)
        bypass(wrapped)
        wrapped.step(0)

    episode = capture_from(factory, interact, max_steps=5)
    assert [a["status"] for a in episode.attempts()] == ["ok", "ok"]
    issues = [issue for issue in episode.coverage_issues if "TimeLimit" in issue]
    assert len(issues) == 1
    assert message in issues[0]
    _reloaded(episode, tmp_path)


def test_stepping_env_unwrapped_is_not_detected_by_capture_itself() -> None:
    # A documented limit: below the TimeLimit nothing counts steps; only the observer's
    # states, read after each recorded step, show the jump.
    factory, holder = _cartpole()

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        wrapped.step(0)
        wrapped.unwrapped.step(0)
        wrapped.step(0)

    def observe() -> dict[str, Any]:
        return {"x_dot": float(holder["env"].unwrapped.state[1])}

    episode = capture_from(factory, interact, observe=observe, max_steps=5)
    assert not any("TimeLimit" in issue for issue in episode.coverage_issues)
    assert len(episode.transitions()) == 2
    # three pushes to the left, two recorded: the cart's speed shows the third
    speeds = [state["x_dot"] for state in episode.states()]
    assert speeds[2] - speeds[1] < 1.5 * (speeds[1] - speeds[0])
