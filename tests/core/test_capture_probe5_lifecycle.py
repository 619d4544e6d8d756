"""Probe 5: lifecycles of real Gymnasium environments that capture recorded wrongly or
lost: a reset wrapper that steps (Stable-Baselines3's ``NoopResetEnv``), an infinite
action in an unbounded Box, and a terminal step whose reward JSON cannot hold followed
by a refused step."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.errors import CaptureError, InvalidActionError
from onrecord.integrations.gymnasium import capture_episode, decode_sample


def _capture(factory: Any, interact: Any, max_steps: int = 600, **kwargs: Any) -> EpisodeEvidence:
    return capture_episode(
        factory,
        interact,
        case=EvalCase("probe", case_id="probe5", completion="either"),
        environment_id="probe5/v1",
        observer_id="none/v1",
        observe=kwargs.pop("observe", dict),
        seed=kwargs.pop("seed", 0),
        max_steps=max_steps,
    )


class NoopReset(gym.Wrapper[Any, Any, Any, Any]):
    """Stable-Baselines3's ``NoopResetEnv``: after each reset, a few no-op steps."""

    def __init__(self, env: gym.Env[Any, Any], noops: int = 3) -> None:
        super().__init__(env)
        self.noops = noops

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        for _ in range(self.noops):
            observation, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                observation, info = self.env.reset(**kwargs)
        return observation, info


def _balance(env: Any, observation: Any, info: Any) -> str:
    while True:
        observation, _, terminated, truncated, _ = env.step(int(observation[2] > 0))
        if terminated or truncated:
            return "finished"


@pytest.mark.parametrize("noops", [1, 3, 40])
def test_a_reset_wrapper_that_steps_is_not_read_as_a_bypass(noops: int) -> None:
    # Before: the TimeLimit's count included the no-ops of the wrapper's own reset, so
    # every honest episode read "something stepped the environment without
    # capture_episode" and was never complete.
    episode = _capture(lambda: NoopReset(gym.make("CartPole-v1"), noops), _balance)
    assert episode.data["events"] == []
    assert episode.ended == "terminated"
    assert episode.coverage_issues == ()
    # the recorded steps are what a bare replay of the same seed and actions returns
    bare = NoopReset(gym.make("CartPole-v1"), noops)
    observation, _ = bare.reset(seed=0)
    assert decode_sample(bare.observation_space, episode.initial["observation"]).tolist() == (
        observation.tolist()
    )
    for step in episode.transitions():
        observation, reward, terminated, truncated, _ = bare.step(step["action"])
        assert step["observation"] == observation.tolist()
        assert (step["reward"], step["terminated"], step["truncated"]) == (
            reward,
            terminated,
            truncated,
        )


def test_a_bypass_below_a_reset_wrapper_that_steps_is_still_detected() -> None:
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = NoopReset(gym.make("CartPole-v1"), 3)
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)
        holder["env"].env.step(0)  # around capture, into the TimeLimit

    episode = _capture(factory, interact, max_steps=5)
    assert any("TimeLimit counted 2 steps" in issue for issue in episode.coverage_issues)


class _Unbounded(gym.Env[Any, Any]):
    """A point mass with an unbounded action space; it clips the force itself."""

    observation_space = spaces.Box(-10, 10, (2,), np.float32)
    action_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.position = np.zeros(2, np.float32)
        return self.position.copy(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        force = np.clip(np.nan_to_num(action, posinf=1.0, neginf=-1.0), -1, 1)
        self.position = (self.position + force).astype(np.float32)
        return self.position.copy(), 1.0, False, False, {}


@pytest.mark.parametrize(
    "bad", [np.array([np.inf, 0], np.float32), [0.0, -np.inf], np.array([np.nan, 0], np.float32)]
)
def test_an_infinite_action_in_an_unbounded_box_is_refused_not_lost(
    bad: Any, tmp_path: Path
) -> None:
    # Before: Box.contains accepted the infinity, the environment ran it, and sealing
    # then raised PortabilityError: the whole episode was lost.
    sent = [np.array([1, 2], np.float32), np.array([0.5, -1], np.float32)]

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(sent[0])
        with pytest.raises(InvalidActionError, match="NaN or an infinity"):
            env.step(bad)
        env.step(sent[1])

    episode = _capture(_Unbounded, interact, max_steps=5)
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
    assert [a["status"] for a in loaded.attempts()] == ["ok", "invalid_action", "ok"]
    assert [t["action"] for t in loaded.transitions()] == [a.tolist() for a in sent]
    assert [t["observation"] for t in loaded.transitions()] == [[1.0, 1.0], [1.5, 0.0]]


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (np.array([0.5]), r"dtype float64 does not cast safely .*astype\(np\.float32\)"),
        (np.array([3.0], np.float32), r"outside the space's bounds: clip it"),
        (np.array([0.5, 0.5], np.float32), r"its shape is \(2,\), the space's is \(1,\)"),
        (["left"], r"holds <U4 values, not numbers"),
    ],
)
def test_an_invalid_box_action_says_why_and_the_fix(action: Any, reason: str) -> None:
    # Before: "action array([0.5]) is not in the action space Box(-2.0, 2.0, (1,),
    # float32)" for a float64 policy output, with nothing saying that only the dtype
    # was wrong.
    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(action)

    episode = _capture(lambda: gym.make("Pendulum-v1"), interact, max_steps=3)
    (attempt,) = episode.attempts()
    assert attempt["status"] == "invalid_action"
    assert "is not in the action space" in attempt["error"]["message"]
    assert re.search(reason, attempt["error"]["message"])
    assert not episode.transitions()  # the refusal reached nothing


class _NanAtTheEnd(gym.Env[Any, Any]):
    """Walks a line and reports a NaN reward on its terminal step."""

    observation_space = spaces.Discrete(10)
    action_space = spaces.Discrete(2)

    def __init__(self, length: int) -> None:
        self.length = length

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.t = 0
        return 0, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.t += 1
        done = self.t >= self.length
        return self.t, float("nan") if done else 1.0, done, False, {}


def _agent(plan: list[str]) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for move in plan:
            try:
                env.step(2 if move == "invalid" else 0)
            except CaptureError:
                continue  # an agent that swallows the refusal and goes on

    return interact


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    length=st.integers(1, 4),
    plan=st.lists(st.sampled_from(["step", "invalid"]), max_size=8),
    max_steps=st.integers(1, 6),
)
def test_every_captured_episode_loads_after_a_terminal_step_kept_as_an_error(
    length: int, plan: list[str], max_steps: int
) -> None:
    # Before: with the terminal step kept as an environment error (its flags went with
    # it), the refused steps after it read as out of order past max_steps, and
    # EpisodeEvidence.from_dict refused what capture had just written.
    episode = _capture(lambda: _NanAtTheEnd(length), _agent(plan), max_steps=max_steps)
    loaded = EpisodeEvidence.from_dict(episode.data)
    assert loaded == episode
    assert loaded.attempts() == episode.attempts()


def test_a_terminal_nan_reward_then_a_step_past_max_steps_loads(tmp_path: Path) -> None:
    episode = _capture(lambda: _NanAtTheEnd(1), _agent(["step", "step", "step"]), max_steps=1)
    assert [a["status"] for a in episode.attempts()] == ["env_error", "lifecycle", "lifecycle"]
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
    assert loaded == episode
    assert "not a finite real number" in loaded.attempts()[0]["error"]["message"]


def test_interact_gets_the_native_reset_info() -> None:
    # Before: interact got the recorded copy, its arrays tagged for JSON, so Taxi's
    # action_mask at reset was {"$ndarray": {...}}, while every step's info was native.
    seen: dict[str, Any] = {}

    def interact(env: Any, observation: Any, info: Any) -> None:
        seen["reset"] = info
        seen["step"] = env.step(int(np.flatnonzero(info["action_mask"])[0]))[4]

    episode = _capture(lambda: gym.make("Taxi-v4"), interact, max_steps=3, seed=5)
    _, bare = gym.make("Taxi-v4").reset(seed=5)
    assert isinstance(seen["reset"]["action_mask"], np.ndarray)
    assert seen["reset"]["action_mask"].dtype == bare["action_mask"].dtype
    assert np.array_equal(seen["reset"]["action_mask"], bare["action_mask"])
    assert type(seen["step"]["action_mask"]) is type(seen["reset"]["action_mask"])
    assert episode.initial["info"]["action_mask"] == {
        "$ndarray": {"dtype": "|i1", "shape": [6], "data": bare["action_mask"].tolist()}
    }


class _StampsTheEnd(gym.Wrapper[Any, Any, Any, Any]):
    """Puts a timestamp (which JSON cannot hold without stringifying) in the terminal
    step's info, and counts the steps the environment receives after its end."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.after_end = 0
        self.ended = False

    def step(self, action: Any) -> Any:
        self.after_end += self.ended
        observation, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.ended = True
            info = {**info, "finished_at": datetime.date(2026, 1, 1)}
        return observation, reward, terminated, truncated, info


def test_a_terminal_step_whose_info_cannot_be_kept_still_ends_the_episode(
    tmp_path: Path,
) -> None:
    # Before: the step was kept as an environment error, but capture did not see the
    # end, so an agent that went on reached the environment past its end, again and
    # again, each step recorded as if the episode were still running.
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = _StampsTheEnd(gym.make("CartPole-v1"))
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(40):  # always left: CartPole falls within 40 steps
            try:
                env.step(0)
            except CaptureError:
                continue

    episode = _capture(factory, interact, max_steps=60)
    assert holder["env"].after_end == 0
    statuses = [a["status"] for a in episode.attempts()]
    end = statuses.index("env_error")
    assert set(statuses[:end]) == {"ok"}
    assert set(statuses[end + 1 :]) == {"lifecycle"}
    assert "finished_at" in episode.attempts()[end]["error"]["message"]
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
    assert loaded == episode


class _Opaque:
    """An agent's own action type whose repr() fails."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_an_invalid_action_whose_repr_raises_is_still_recorded() -> None:
    # Before: building the refusal message raised, so the attempt was never recorded
    # and the agent got a RuntimeError instead of InvalidActionError.
    def interact(env: Any, observation: Any, info: Any) -> None:
        with pytest.raises(InvalidActionError, match="_Opaque whose repr"):
            env.step(_Opaque())

    episode = _capture(lambda: gym.make("CartPole-v1"), interact, max_steps=3)
    assert [a["status"] for a in episode.attempts()] == ["invalid_action"]
