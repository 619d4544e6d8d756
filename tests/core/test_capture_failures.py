"""What capture keeps when the environment, the factory, the observer or interact
misbehave: the evidence is never lost, the misbehaviour is recorded where it happened,
and the episode is left incomplete (a coverage issue) rather than wrong."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, evaluate_episode
from onrecord.errors import InputError, MalformedStepError
from onrecord.integrations.gymnasium import capture_episode
from tests.core.envs import GenericEnv, capture_from, capture_generic

ALWAYS = OutcomeCheck("always", "v1", lambda e: OutcomeVerdict(True, "ok", {}))
POLICY = AcceptancePolicy((CheckRequirement("always"),))


def _line_of(text: str) -> int:
    """The number of the line of this file that is ``text``: a failure of the user's code
    is recorded with the line that raised it (since round 51), found here, not pinned."""
    with open(__file__, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


def _walk(count: int) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(count):
            env.step(0)

    return interact


@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), -float("inf"), np.float64("nan"), None, "1.5", [1.0]]
)
def test_a_reward_json_cannot_hold_keeps_the_episode(bad: Any, tmp_path: Path) -> None:
    rewards = iter([1.0, bad, 2.0])
    env = GenericEnv(lambda env, action: (env.observation_space.sample(), next(rewards), *_GO))
    episode = capture_generic(env, _walk(3), max_steps=3)
    attempts = episode.attempts()
    assert [a["status"] for a in attempts] == ["ok", "env_error", "ok"]
    assert attempts[1]["action"] == 0  # it was executed
    assert repr(bad) in attempts[1]["error"]["message"]
    assert "not a finite real number" in attempts[1]["error"]["message"]
    assert [t["reward"] for t in episode.transitions()] == [1.0, 2.0]
    assert episode.measures["return"] == 3.0
    assert any("env error" in issue for issue in episode.coverage_issues)
    decision = POLICY.evaluate(evaluate_episode(episode, [ALWAYS]))
    assert decision.decision == "indeterminate"
    episode.save_json(tmp_path / "episode.json")
    assert EpisodeEvidence.load(tmp_path / "episode.json").data == episode.data


_GO = (False, False, {})


def test_an_invalid_reward_on_the_last_step_takes_its_end_flags_with_it() -> None:
    # The step that ended the episode is kept as an error, so no earlier step may
    # appear to have ended it.
    outcomes = iter([(1.0, False), (float("nan"), True)])

    def step(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        reward, done = next(outcomes)
        return env.observation_space.sample(), reward, done, False, {}

    episode = capture_generic(GenericEnv(step), _walk(2), max_steps=5)
    assert [t["terminated"] for t in episode.transitions()] == [False]
    assert episode.ended != "terminated"
    assert episode.coverage_issues


def test_a_factory_that_returns_no_environment_is_a_setup_error() -> None:
    closed: list[bool] = []

    class NotAnEnv:
        def close(self) -> None:
            closed.append(True)
            raise RuntimeError("and closing fails too")  # must not hide the real problem

    episode = capture_from(NotAnEnv, _walk(1), max_steps=1)
    assert closed == [True]
    assert episode.ended == "setup_error"
    assert episode.data["events"][0]["message"] == "factory returned NotAnEnv, not a gymnasium.Env"
    assert episode.attempts() == []


def test_a_reset_that_raises_is_recorded_and_interact_never_runs() -> None:
    class BrokenReset(GenericEnv):
        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            raise ConnectionError("simulator not reachable")

    called: list[bool] = []
    env = BrokenReset(lambda env, action: (0, 0.0, False, False, {}))
    episode = capture_generic(env, lambda *args: called.append(True), observe=lambda: {"up": 0})
    assert called == []
    assert episode.ended == "setup_error"
    line = _line_of('            raise ConnectionError("simulator not reachable")')
    assert episode.initial["reset_error"] == {
        "type": "builtins.ConnectionError",
        "message": f"simulator not reachable (at {__file__}:{line} in reset)",
    }
    assert episode.states() == [{"up": 0}, {"up": 0}]  # still observed, before and at cleanup
    assert episode.data["cleanup"]["ok"] is True
    assert env.closed
    assert (
        f"reset failed: builtins.ConnectionError: simulator not reachable (at {__file__}:{line} "
        "in reset)" in episode.coverage_issues
    )


def test_an_unportable_return_from_interact_is_noted_not_fatal() -> None:
    env = GenericEnv(lambda env, action: (env.observation_space.sample(), 0.0, True, False, {}))

    def interact(wrapped: Any, observation: Any, info: Any) -> object:
        wrapped.step(0)
        return {"handle": object()}

    episode = capture_generic(env, interact)
    returned = episode.data["interact"]["returned"]
    assert returned["unportable"] == "dict"
    assert "$.interact.returned.handle holds a builtins.object" in returned["reason"]
    assert episode.ended == "terminated"


def test_an_observer_value_orjson_cannot_write_is_an_observer_error_at_that_step() -> None:
    values = iter([{"ok": 1}, {"ok": 2}, {"tags": {"a", "b"}}, {"ok": 4}, {"ok": 5}])
    env = GenericEnv(lambda env, action: (env.observation_space.sample(), 0.0, False, False, {}))
    episode = capture_generic(env, _walk(3), observe=lambda: next(values), max_steps=3)
    assert episode.states() == [{"ok": 1}, {"ok": 2}, None, {"ok": 4}, {"ok": 5}]
    errors = episode.data["steps"]["observer_error"]
    assert errors[0] is None
    assert errors[2] is None
    assert "$.state.tags holds a builtins.set" in errors[1]
    assert any("observer" in issue for issue in episode.coverage_issues)


def test_spec_arguments_that_are_not_portable_are_named() -> None:
    env_id = "onrecord-test/WithCallback-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=_with_callback, max_episode_steps=3)
    episode = capture_from(lambda: gym.make(env_id, callback=print, label="kept"), _walk(1))
    spec = episode.environment["spec"]
    assert spec["id"] == env_id
    assert spec["kwargs"] == {"label": "kept"}
    assert spec["unportable_kwargs"] == ["callback"]
    assert spec["max_episode_steps"] == 3


def _with_callback(callback: Any = None, label: str = "") -> gym.Env[Any, Any]:
    return GenericEnv(lambda env, action: (env.observation_space.sample(), 0.0, False, False, {}))


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        (lambda obs: (obs, 1.0, False, {}), "a tuple of 4"),  # the old Gym API
        (lambda obs: None, "None"),
        (lambda obs: (obs, 1.0, False, False, ["x"]), "an info of type list"),
        (lambda obs: (obs, 1.0, "no", False, {}), "terminated='no', not a bool"),
        (lambda obs: (obs, 1.0, False, 2, {}), "truncated=2, not a bool"),
        (lambda obs: (obs, 1.0, None, False, {}), "terminated=None, not a bool"),
        (lambda obs: (obs, 1.0, False, "", {}), "truncated='', not a bool"),
        (lambda obs: (obs, 1.0, False, 0.0, {}), "truncated=0.0, not a bool"),
        (
            lambda obs: (obs, 1.0, np.array([False, True]), False, {}),
            "terminated=array([False,  True]), not a bool",
        ),
        (
            lambda obs: (obs, 1.0, False, False, np.ones(3)),
            "a result whose parts could not be read (ValueError: The truth value",
        ),
    ],
    ids=[
        "four-tuple",
        "none",
        "info-list",
        "terminated-str",
        "truncated-2",
        "terminated-none",
        "truncated-empty",
        "truncated-zero-float",
        "flags",
        "info",
    ],
)
def test_a_malformed_step_result_is_an_environment_error_at_its_step(
    result: Any, problem: str, tmp_path: Path
) -> None:
    raised: list[Exception] = []
    counter = {"state": 0}

    def step(env: GenericEnv, action: Any) -> Any:
        counter["state"] += 1  # the step ran: the world changed
        return result(env.observation_space.sample())

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        try:
            wrapped.step(1)
        except MalformedStepError as exc:
            raised.append(exc)

    episode = capture_generic(GenericEnv(step), interact, observe=lambda: dict(counter))
    assert len(raised) == 1
    assert str(raised[0]).startswith(f"step() returned {problem}")
    attempt = episode.attempts()[0]
    assert attempt["status"] == "env_error"
    assert attempt["action"] == 1
    assert attempt["error"]["type"] == "onrecord.errors.MalformedStepError"
    assert episode.states() == [{"state": 0}, {"state": 1}, {"state": 1}]  # observed after it
    assert episode.transitions() == []
    episode.save_json(tmp_path / "episode.json")
    assert EpisodeEvidence.load(tmp_path / "episode.json").data == episode.data


@pytest.mark.parametrize(
    ("terminated", "info"), [(np.True_, None), (1, {}), (True, None)], ids=["numpy", "int", "bool"]
)
def test_lenient_forms_gymnasium_environments_use_are_accepted(terminated: Any, info: Any) -> None:
    env = GenericEnv(lambda env, action: (env.observation_space.sample(), 1.0, terminated, 0, info))
    episode = capture_generic(env, lambda wrapped, o, i: wrapped.step(0))
    assert episode.ended == "terminated"
    transition = episode.transitions()[0]
    assert (transition["terminated"], transition["truncated"], transition["info"]) == (
        True,
        False,
        {},
    )


@pytest.mark.parametrize("falsy", [np.False_, 0], ids=["numpy", "int"])
def test_lenient_false_flags_do_not_end_the_episode(falsy: Any) -> None:
    calls = {"n": 0}

    def step(env: GenericEnv, action: Any) -> Any:
        calls["n"] += 1
        return env.observation_space.sample(), 1.0, falsy, calls["n"] == 3 or falsy, None

    episode = capture_generic(
        GenericEnv(step), lambda wrapped, o, i: [wrapped.step(0) for _ in range(3)], max_steps=3
    )
    assert [t["truncated"] for t in episode.transitions()] == [False, False, True]
    assert episode.ended == "truncated"
    assert all(a["status"] == "ok" for a in episode.attempts())


@pytest.mark.parametrize(
    ("returned", "shape"),
    [
        (np.zeros(2, dtype=np.float32), "ndarray"),  # the old Gym API: the observation alone
        ((np.zeros(2, dtype=np.float32), {}, "extra"), "a tuple of 3"),
        ((np.zeros(2, dtype=np.float32), ["info"]), "a tuple of 2"),
    ],
    ids=["observation-alone", "three", "info-list"],
)
def test_a_malformed_reset_result_is_a_reset_error(returned: Any, shape: str) -> None:
    class OldReset(GenericEnv):
        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            return returned

    called: list[bool] = []
    episode = capture_generic(
        OldReset(lambda env, action: (0, 0.0, False, False, {})),
        lambda *args: called.append(True),
    )
    assert called == []
    assert episode.ended == "setup_error"
    error = episode.initial["reset_error"]
    assert error["type"] == "onrecord.errors.MalformedStepError"
    assert error["message"].startswith(f"reset() returned {shape};")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"observe": None}, "observe must be a function that takes no arguments"),
        ({"interact": "agent"}, "interact must be your agent loop"),
        ({"factory": gym.make("CartPole-v1")}, "factory must be a function"),
        ({"case": "x"}, "case must be an onrecord.EvalCase"),
        ({"environment_id": " "}, "environment_id must be a non-empty version label"),
        ({"observer_id": None}, "observer_id must be a non-empty version label"),
        ({"seed": -1}, "seed must be a non-negative int"),
        ({"seed": 1.0}, "seed must be a non-negative int"),
        ({"seed": 2**64}, "seed must be a non-negative int below 2**64"),
        ({"max_steps": 0}, "max_steps must be a positive int"),
        ({"options": [("a", 1)]}, "options must be a mapping"),
        ({"options": {"handle": object()}}, "$.options.handle holds a builtins.object"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(
    change: dict[str, Any], message: str
) -> None:
    made: list[bool] = []

    def factory() -> gym.Env[Any, Any]:
        made.append(True)
        return gym.make("CartPole-v1")

    arguments: dict[str, Any] = {
        "factory": factory,
        "interact": _walk(1),
        "case": EvalCase("x"),
        "environment_id": "e",
        "observer_id": "o",
        "observe": dict,
        "seed": 0,
        "max_steps": 1,
    }
    arguments.update(change)
    with pytest.raises(InputError, match=re.escape(message)):
        capture_episode(**arguments)
    assert made == []


@pytest.mark.parametrize("without", ["action_space", "observation_space", "both"])
def test_an_environment_without_its_spaces_is_a_recorded_setup_error(without: str) -> None:
    class Spaceless(gym.Env[int, int]):
        def __init__(self) -> None:
            if without != "action_space" and without != "both":
                self.action_space = gym.spaces.Discrete(2)
            if without != "observation_space" and without != "both":
                self.observation_space = gym.spaces.Discrete(2)

        def reset(
            self, *, seed: int | None = None, options: Any = None
        ) -> tuple[int, dict[str, Any]]:
            super().reset(seed=seed)
            return 0, {}

        def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
            return 0, 0.0, True, False, {}

    episode = capture_episode(
        Spaceless,
        lambda env, observation, info: env.step(0),
        case=EvalCase("spaces"),
        environment_id="spaceless/v1",
        observer_id="none/v1",
        observe=dict,
        seed=0,
        max_steps=3,
    )
    assert episode.ended == "setup_error"
    names = ["action_space", "observation_space"] if without == "both" else [without]
    assert all(f"no {name}" in episode.coverage_issues[0] for name in names)
