"""Records come out the same when the same thing happens again: a repr we build from an
agent's, environment's, tool's, check's or model's object (``<Thing object at 0x7f...>``)
is kept without its memory address, also when it is cut to a length (cut first, half an
address stayed behind). Each scenario runs twice, in two real processes, and the saved
records are compared with their times removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

SCRIPT = r'''
import json, sys
import gymnasium as gym
from gymnasium import spaces
from onrecord import EvalCase
from onrecord.integrations.gymnasium import capture_episode
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool, save_episode
from onrecord.episode import OutcomeCheck, OutcomeVerdict, evaluate_episode
from onrecord.dynamics import PersistenceModel, capture_forecast, capture_forecasts, get_simulator
from onrecord.dynamics._closed_loop import run_closed_loop


class Thing:  # a default repr: "<__main__.Thing object at 0x...>"
    pass


class Env(gym.Env):
    def __init__(self, mode):
        self.mode = mode
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        if self.mode == "flag":  # a flag whose repr is cut at 80 characters
            return 0, 0.0, [Thing(), Thing()], False, {}
        return 0, 0.0, True, False, {}


def episode(mode):
    def interact(env, observation, info):
        try:
            # an action whose repr is cut at 200 characters
            env.step([Thing()] * 10 if mode == "action" else 0)
        except Exception:
            pass
        return "done"

    def observe():  # a key whose repr is cut at 80 characters in the observer error
        return {(Thing(), Thing(), Thing()): 1} if mode == "observer" else {"s": 1}

    return capture_episode(
        lambda: Env(mode), interact, case=EvalCase("t", case_id="c"),
        environment_id="e", observer_id="o", observe=observe, seed=1, max_steps=5,
    )


@tool
def echo(ctx: ToolContext, x: int) -> dict:
    """Echo."""
    return {"x": x}


def tool_log(folder):
    world = ToolWorld(Snapshot.build("s", "CREATE TABLE t (v);", None, seed=0), [echo])
    world.reset(case=EvalCase("t", case_id="c"), seed=0, run_id="run-1")
    world.call("echo", [Thing()] * 40)  # $unportable, cut at 500 characters
    world.call(Thing(), {})  # an unknown tool named by its repr
    save_episode(world, folder)
    world.close()
    return [json.loads(line) for line in open(f"{folder}/actions.jsonl")]


def raises(evidence):
    raise ValueError(f"cannot read {Thing()!r}")


def report():
    checks = [
        OutcomeCheck("raises", "v1", raises),
        OutcomeCheck("odd_passed", "v1", lambda evidence: OutcomeVerdict(Thing(), "r")),
    ]
    return evaluate_episode(episode("plain"), checks).to_dict()


def forecast():
    holder = {}

    def factory():
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env, observation, info):
        for _ in range(3):
            env.step(0)
        return "done"

    reference = capture_episode(
        factory, interact, case=EvalCase("c", case_id="cp"),
        environment_id="CartPole-v1", observer_id="o",
        observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},
        seed=7, max_steps=3,
    )

    def model(*request):  # one request, or a batch's (states, actions)
        raise RuntimeError(f"no forecast for {Thing()!r}")

    given = dict(
        model_id="m/v1", contract="c/v1",
        coordinates={"x": "m", "v": "m/s", "a": "rad", "w": "rad/s"}, horizons=[1],
    )
    single = capture_forecast(reference, model, planned_actions=[0, 0, 0], **given)
    batched = capture_forecasts([reference], model, planned_actions=[[0, 0, 0]], **given)
    return [single.data, batched[0].data]


class RaisingPlanner:
    budget = 1

    def plan(self, model, simulator, state, rng):
        raise RuntimeError(f"no plan for {Thing()!r}")


def closed_loop():
    cartpole = get_simulator("CartPole-v1")
    runs = run_closed_loop(
        cartpole, PersistenceModel(cartpole), RaisingPlanner(), seeds=[0], max_steps=5
    )
    return runs[0].record


out = {
    "action": episode("action").data,
    "flag": episode("flag").data,
    "observer": episode("observer").data,
    "tools": tool_log(sys.argv[1]),
    "report": report(),
    "forecast": forecast(),
    "closed_loop": closed_loop(),
}
sys.stdout.write(json.dumps(out))
'''

# What differs between two runs of the same thing by design: clocks and what hashes them.
_TIMES = {"digest", "wall_time_ns", "ts", "duration_ns", "created_at", "episode_digest"}


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list):
        return [_timeless(item) for item in value]
    return value


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ...]:
    folder = tmp_path_factory.mktemp("repeat")
    script = folder / "scenarios.py"
    script.write_text(SCRIPT)
    runs = []
    for n in (1, 2):
        done = subprocess.run(
            [sys.executable, str(script), str(folder / f"tools{n}")],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=folder,
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    return tuple(runs)


def _same_and_addressless(runs: tuple[dict[str, Any], ...], name: str) -> str:
    first, second = (json.dumps(_timeless(run[name]), sort_keys=True) for run in runs)
    assert "object at" not in first, first  # an address, or half of one after a cut
    assert first == second
    return first


def test_refused_action_cut_to_200_characters_keeps_no_half_address(
    two_runs: tuple[dict[str, Any], ...],
) -> None:
    text = _same_and_addressless(two_runs, "action")
    assert "action [<__main__.Thing object>, <__main__.Thing object>" in text


def test_malformed_flag_cut_to_80_characters_keeps_no_half_address(
    two_runs: tuple[dict[str, Any], ...],
) -> None:
    text = _same_and_addressless(two_runs, "flag")
    assert "terminated=[<__main__.Thing object>, <__main__.Thing object>], not a bool" in text


def test_observer_error_naming_a_long_key_keeps_no_half_address(
    two_runs: tuple[dict[str, Any], ...],
) -> None:
    text = _same_and_addressless(two_runs, "observer")
    assert "has the key (<__main__.Thing object>, " in text


def test_tool_log_unportable_arguments_and_unknown_tool_are_repeatable(
    two_runs: tuple[dict[str, Any], ...],
) -> None:
    text = _same_and_addressless(two_runs, "tools")
    log = two_runs[0]["tools"]
    assert log[0]["arguments"]["$unportable"].startswith("[<__main__.Thing object>, ")
    assert log[1]["tool"] == "<__main__.Thing object>"
    assert "there is no tool named <__main__.Thing object>;" in text


def test_check_evaluator_errors_in_a_report_are_repeatable(
    two_runs: tuple[dict[str, Any], ...],
) -> None:
    text = _same_and_addressless(two_runs, "report")
    assert "check raised ValueError: cannot read <__main__.Thing object>" in text
    assert "check returned passed=<__main__.Thing object>; use True" in text


def test_forecast_model_error_is_repeatable(two_runs: tuple[dict[str, Any], ...]) -> None:
    _same_and_addressless(two_runs, "forecast")
    for forecast in two_runs[0]["forecast"]:  # capture_forecast, capture_forecasts
        assert forecast["status"] == "model_error"
        # With the model's line in the script (since round 51): the same in both runs.
        line = SCRIPT.splitlines().index(_MODEL_RAISES) + 1
        message = forecast["error"]["message"]
        assert message.startswith(
            "the model raised RuntimeError: no forecast for <__main__.Thing object> (at "
        )
        assert message.endswith(f"{os.sep}scenarios.py:{line} in model)")


_MODEL_RAISES = '        raise RuntimeError(f"no forecast for {Thing()!r}")'
_PLANNER_RAISES = '        raise RuntimeError(f"no plan for {Thing()!r}")'


def test_closed_loop_planner_error_is_repeatable(two_runs: tuple[dict[str, Any], ...]) -> None:
    _same_and_addressless(two_runs, "closed_loop")
    error = two_runs[0]["closed_loop"]["model_error"]
    # The planner's own line is kept (a path and line number, no address).
    assert error["message"].startswith("no plan for <__main__.Thing object> (at "), error
    line = SCRIPT.splitlines().index(_PLANNER_RAISES) + 1
    assert error["message"].endswith(f"{os.sep}scenarios.py:{line} in plan)"), error
    assert error["type"] == "builtins.RuntimeError"


def test_a_raising_str_in_a_check_is_an_evaluator_error_not_a_crash() -> None:
    from onrecord.episode import OutcomeCheck
    from onrecord.episode._evaluate import run_check

    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    def check(evidence: object) -> None:
        raise Broken

    result = run_check(OutcomeCheck("broken", "v1", check), None)
    assert result.status == "evaluator_error"
    assert "raised Broken: <str() of this exception raised RuntimeError>" in result.reason


def test_shown_repr_removes_addresses_before_cutting() -> None:
    from onrecord._exceptions import shown_repr

    class Thing:
        pass

    class Unshowable:
        def __repr__(self) -> str:
            raise ValueError

    cut = shown_repr([Thing()] * 5, 60)
    assert " at 0" not in cut
    assert len(cut) == 60
    assert shown_repr(Unshowable(), 80) == "<a Unshowable whose repr() raised>"
    assert shown_repr("plain text", 80) == "'plain text'"
