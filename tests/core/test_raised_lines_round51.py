"""What capture_episode keeps when the user's own code raises (the factory, a custom
Env's reset or step, the observer) names the line that raised it, `` (at FILE:LINE in
FUNCTION)``, so a developer can go there from the record; so does a world model's
``predict`` raising in ``capture_forecast``. onrecord's own refusals are worded as before.

The place is repeatable: capturing the same episode again gives the same evidence (the
same digest, where no wall time is recorded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import OrderEnforcing, TimeLimit

from onrecord import EvalCase
from onrecord.dynamics import capture_forecast
from onrecord.episode import EpisodeEvidence
from onrecord.integrations.gymnasium import capture_episode

CASE = EvalCase("Keep the tank level", case_id="tank:1", source_id="round51")


def _line_of(text: str) -> int:
    """The number of the one line of this file that starts with ``text`` (indentation
    aside): the recorded place is the line that raised, found in the source, not pinned."""
    with open(__file__, encoding="utf-8") as source:
        lines = source.read().splitlines()
    found = [n for n, line in enumerate(lines, 1) if line.strip().startswith(text)]
    assert len(found) == 1, found
    return found[0]


def _at(text: str, function: str) -> str:
    return f" (at {__file__}:{_line_of(text)} in {function})"


class TankEnv(gym.Env[np.ndarray, Any]):
    """A tiny custom environment: its valve sticks at the second step, or its reset
    fails reading a calibration (a helper of its own, one frame deeper)."""

    def __init__(self, *, broken_reset: bool = False) -> None:
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(0.0, 10.0, (1,), np.float64)
        self.broken_reset = broken_reset
        self.level = 5.0
        self.steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.level, self.steps = 5.0 + self._calibration(), 0
        return np.array([self.level]), {}

    def _calibration(self) -> float:
        if self.broken_reset:
            raise ValueError("calibration table is empty")  # the reset's line
        return 0.0

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        if self.steps == 2:
            raise RuntimeError("valve stuck")  # the step's line
        self.level += 1.0 if action else -1.0
        return np.array([self.level]), 0.0, False, False, {}


def _wrapped(env: TankEnv) -> gym.Env[Any, Any]:
    # Gymnasium's own wrappers sit between capture and the user's env, as after gym.make:
    # their frames (an installed package) are passed over for the user's line.
    return TimeLimit(OrderEnforcing(env), max_episode_steps=10)


def _two_steps(env: Any, observation: Any, info: Any) -> None:
    env.step(1)
    env.step(1)  # raises: the agent stops here


def _nothing(env: Any, observation: Any, info: Any) -> None:
    return None


def _capture(factory: Any, interact: Any = _two_steps, observe: Any = None) -> EpisodeEvidence:
    return capture_episode(
        factory,
        interact,
        case=CASE,
        environment_id="tank-v1",
        observer_id="tank-level/v1",
        observe=observe or (lambda: {"state": [1.0]}),
        seed=3,
        max_steps=5,
    )


def _timeless(value: Any) -> Any:
    """The record without what differs between two runs by design: step wall times, and
    the digest that hashes them."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("wall_time_ns", "digest")}
    if isinstance(value, list):
        return [_timeless(item) for item in value]
    return value


def test_a_custom_env_whose_step_raises_names_its_line_past_gymnasium_wrappers(
    tmp_path: Path,
) -> None:
    episode = _capture(lambda: _wrapped(TankEnv()))
    failed = [a for a in episode.attempts() if a["status"] == "env_error"]
    assert len(failed) == 1
    assert failed[0]["error"] == {
        "type": "builtins.RuntimeError",
        "message": "valve stuck" + _at('raise RuntimeError("valve stuck")', "step"),
    }
    again = _capture(lambda: _wrapped(TankEnv()))
    assert _timeless(again.data) == _timeless(episode.data)
    episode.save_json(tmp_path / "episode.json")  # verifies on the way back in
    assert EpisodeEvidence.load(tmp_path / "episode.json").data == episode.data


def test_a_reset_that_raises_names_the_innermost_line_of_the_env() -> None:
    episode = _capture(lambda: _wrapped(TankEnv(broken_reset=True)), _nothing)
    assert episode.data["initial"]["reset_error"] == {
        "type": "builtins.ValueError",
        "message": "calibration table is empty"
        + _at('raise ValueError("calibration table is empty")', "_calibration"),
    }
    # No step ran, so no wall time: the same bug gives the very same evidence.
    assert _capture(lambda: _wrapped(TankEnv(broken_reset=True)), _nothing).digest == (
        episode.digest
    )


def _factory() -> gym.Env[Any, Any]:
    raise OSError("simulator licence file not found")


def test_a_factory_that_raises_is_a_setup_error_naming_its_line() -> None:
    episode = _capture(_factory)
    (event,) = episode.data["events"]
    assert event == {
        "phase": "factory",
        "index": 0,
        "type": "builtins.OSError",
        "message": "simulator licence file not found"
        + _at('raise OSError("simulator licence file not found")', "_factory"),
    }
    assert _capture(_factory).digest == episode.digest


READINGS: dict[str, float] = {"level": 1.0}


def _observer() -> Any:
    return {"state": [READINGS["pressure"]]}


def test_an_observer_that_raises_names_its_line_at_every_read() -> None:
    expected = "KeyError: 'pressure'" + _at('return {"state": [READINGS["pressure"]]}', "_observer")
    episode = _capture(lambda: TankEnv(), _nothing, _observer)
    assert episode.data["initial"]["observer_error"] == expected
    assert episode.data["final_observer_error"] == expected
    assert _capture(lambda: TankEnv(), _nothing, _observer).digest == episode.digest
    # The read after a step is kept the same way.
    stepped = _capture(lambda: TankEnv(), lambda env, o, i: env.step(0), _observer)
    assert stepped.data["steps"]["observer_error"] == [expected]


def test_onrecords_own_refusals_and_gymnasiums_lone_frames_are_worded_as_before() -> None:
    # An unportable state is onrecord's refusal: no place of onrecord's is named.
    refused = _capture(lambda: TankEnv(), _nothing, lambda: {"state": {1, 2}})
    assert refused.data["initial"]["observer_error"].startswith("PortabilityError: ")
    assert " (at " not in refused.data["initial"]["observer_error"]
    # A malformed step result and a refused action: onrecord's own, as before.
    malformed = _capture_generic_step(lambda: None)
    (attempt,) = malformed.attempts()
    assert attempt["error"]["type"] == "onrecord.errors.MalformedStepError"
    assert " (at " not in attempt["error"]["message"]
    invalid = _capture(lambda: TankEnv(), lambda env, o, i: env.step(7))
    (attempt,) = invalid.attempts()
    assert attempt["status"] == "invalid_action"
    assert " (at " not in attempt["error"]["message"]
    # A factory returning no environment is onrecord's refusal too.
    (event,) = _capture(lambda: object()).data["events"]
    assert event["message"] == "factory returned object, not a gymnasium.Env"


def _capture_generic_step(result: Any) -> EpisodeEvidence:
    class Odd(TankEnv):
        def step(self, action: int) -> Any:
            return result()

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    return _capture(lambda: Odd(), interact)


def _forecast(predict: Any) -> Any:
    actions = [0, 1, 0, 1]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in actions:
            env.step(action)

    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    reference = capture_episode(
        factory,
        interact,
        case=EvalCase("Predict CartPole", case_id="cartpole:7", source_id="seed:7"),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=lambda: {"state": [float(x) for x in holder["env"].unwrapped.state]},
        seed=7,
        max_steps=4,
    )
    return capture_forecast(
        reference,
        predict,
        model_id="m/v1",
        contract="cartpole-vector/v1",
        coordinates={"x": "m", "velocity": "m/s", "angle": "rad", "angular_velocity": "rad/s"},
        horizons=[1, 4],
        planned_actions=actions,
    )


def _load_weights(name: str) -> Any:
    raise FileNotFoundError(f"no checkpoint {name}")


def _predict(request: dict[str, Any]) -> Any:
    return _load_weights("tank.pt")


def test_a_world_model_whose_predict_raises_names_its_line() -> None:
    forecast = _forecast(_predict)
    assert forecast.status == "model_error"
    assert forecast.error == {
        "type": "ModelError",
        "message": "the model raised FileNotFoundError: no checkpoint tank.pt"
        + _at('raise FileNotFoundError(f"no checkpoint {name}")', "_load_weights"),
    }
    # The forecast record holds no wall time: the same failure, the same record.
    assert _forecast(_predict).error == forecast.error


class LeakyTankEnv(TankEnv):
    """Its close fails flushing a log."""

    def close(self) -> None:
        raise OSError("log not flushed")  # the close's line


def _reads_a_missing_key(env: Any, observation: Any, info: Any) -> None:
    env.step(0)
    readings: dict[str, float] = {"level": 5.0}
    readings["pressure"]


def test_the_agents_loop_and_the_envs_close_name_their_lines() -> None:
    episode = _capture(LeakyTankEnv, _reads_a_missing_key)
    assert episode.data["interact"]["error"] == {
        "type": "builtins.KeyError",
        "message": "'pressure'" + _at('readings["pressure"]', "_reads_a_missing_key"),
    }
    assert episode.data["cleanup"] == {
        "ok": False,
        "error": {
            "type": "builtins.OSError",
            "message": "log not flushed" + _at('raise OSError("log not flushed")', "close"),
        },
    }
    # A step the agent took past the step limit is onrecord's refusal: no line of ours.
    limited = _capture(
        lambda: gym.make("CartPole-v1"), lambda env, o, i: [env.step(0) for _ in range(9)]
    )
    message = limited.data["interact"]["error"]["message"]
    assert "max_steps" in message or "step limit" in message, message
    assert " (at " not in message
