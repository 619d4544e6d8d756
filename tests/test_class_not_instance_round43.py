"""A class where an instance was meant (``LinearDelta`` for ``LinearDelta(...)``), a dot
where the colon of ``module:name`` goes, and similar slips: refused up front, naming the
argument and the fix, instead of being accepted and failing every forecast or episode."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord.dynamics import (
    BayesianLinearModel,
    ExhaustivePlanner,
    PersistenceModel,
    capture_forecast,
    capture_forecasts,
    capture_plan,
    get_simulator,
    random_plan,
    request_predictor,
    run_closed_loop,
)
from onrecord.errors import InputError
from tests.cli_process import onrecord

CARTPOLE = {"x": "m", "velocity": "m/s", "angle": "rad", "angular_velocity": "rad/s"}


@pytest.fixture(scope="module")
def cartpole_episodes() -> list[Any]:
    cartpole = get_simulator("CartPole-v1")
    rng = np.random.default_rng(0)
    return [
        capture_plan(cartpole, random_plan(cartpole, 12, rng), case_id=f"cp-{s}", seed=s)
        for s in range(2)
    ]


def _forecast_kwargs() -> dict[str, Any]:
    return {
        "model_id": "persistence/v1",
        "contract": "cartpole-vector/v1",
        "coordinates": CARTPOLE,
        "horizons": [1, 4],
    }


@pytest.mark.parametrize("model_class", [PersistenceModel, BayesianLinearModel])
def test_capture_forecasts_refuses_a_model_class(
    cartpole_episodes: list[Any], model_class: type
) -> None:
    # Before: accepted; the class was called as predict(states, actions) and every row
    # became a model_error.
    with pytest.raises(
        InputError, match=rf"predict is the class {model_class.__name__}, not a model"
    ):
        capture_forecasts(cartpole_episodes, model_class, **_forecast_kwargs())


def test_capture_forecast_refuses_a_model_class(cartpole_episodes: list[Any]) -> None:
    with pytest.raises(InputError, match=r"pass an instance \(PersistenceModel\(\.\.\.\)\)"):
        capture_forecast(cartpole_episodes[0], PersistenceModel, **_forecast_kwargs())


def test_an_instance_still_forecasts(cartpole_episodes: list[Any]) -> None:
    model = PersistenceModel(get_simulator("CartPole-v1"))
    forecasts = capture_forecasts(cartpole_episodes, model, **_forecast_kwargs())
    assert [f.status for f in forecasts] == ["ok", "ok"]
    one = capture_forecast(cartpole_episodes[0], model, **_forecast_kwargs())
    assert one.status == "ok"


def test_request_predictor_refuses_a_model_class() -> None:
    with pytest.raises(InputError, match=r"model is the class PersistenceModel"):
        request_predictor(PersistenceModel)  # type: ignore[arg-type]


def test_run_closed_loop_refuses_a_model_or_planner_class() -> None:
    cartpole = get_simulator("CartPole-v1")
    model = PersistenceModel(cartpole)
    with pytest.raises(InputError, match=r"model is the class PersistenceModel"):
        run_closed_loop(cartpole, PersistenceModel, ExhaustivePlanner(2), seeds=[0], max_steps=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"planner is the class ExhaustivePlanner, not a planner"):
        run_closed_loop(cartpole, model, ExhaustivePlanner, seeds=[0], max_steps=5)  # type: ignore[arg-type]
    runs = run_closed_loop(cartpole, model, ExhaustivePlanner(2), seeds=[0], max_steps=5)
    assert not runs[0].failed


USER_MODULE = """
import gymnasium as gym
from gymnasium.envs.classic_control import CartPoleEnv
from onrecord.episode import OutcomeCheck, OutcomeVerdict


class GymAgent:  # instances are the agent: named without parentheses, it is no agent
    def __call__(self, env, observation, info):
        while True:
            _, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                return "ended"


AGENT = GymAgent()


def make_class():
    return CartPoleEnv  # forgot the parentheses


def make():
    return CartPoleEnv()


MAKE = gym.make


def lasted(episode):
    return OutcomeVerdict(True, "ran", {})


CLASSES = [OutcomeCheck]
FUNCTIONS = [lasted]
CHECKS = [OutcomeCheck("lasted", "v1", lasted)]
"""


@pytest.fixture
def user_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "r43_user.py").write_text(textwrap.dedent(USER_MODULE))
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("r43_user", None)


def _run(user_dir: Path, *args: str) -> str:
    shutil.rmtree(user_dir / "out", ignore_errors=True)
    done = onrecord(
        "run",
        *args,
        "--seeds",
        "0",
        "--out",
        str(user_dir / "out"),
        cwd=user_dir,
        pythonpath=user_dir,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # Before: every episode failed, "interact raised TypeError: GymAgent() takes no
        # arguments".
        (
            ["CartPole-v1", "--agent", "r43_user:GymAgent"],
            "agent 'r43_user:GymAgent' is the class GymAgent, and GymAgent() cannot be called "
            "the way an agent is",
        ),
        # Before: "returned type".
        (
            ["r43_user:make_class", "--agent", "random"],
            "r43_user:make_class returned the class CartPoleEnv, not an instance: return "
            "CartPoleEnv(...)",
        ),
        # Before: "does not accept the config []: missing a required argument: 'id'".
        (
            ["r43_user:MAKE", "--agent", "random"],
            "r43_user:MAKE is gymnasium.make itself; give the Gymnasium id instead",
        ),
        # Before: "must be an OutcomeCheck, a list of them, or a function returning ...".
        (
            ["CartPole-v1", "--agent", "random", "--checks", "r43_user:CLASSES"],
            "checks 'r43_user:CLASSES' holds the class OutcomeCheck, not an OutcomeCheck",
        ),
        (
            ["CartPole-v1", "--agent", "random", "--checks", "r43_user:FUNCTIONS"],
            "holds the function lasted, not an OutcomeCheck: wrap it as "
            "OutcomeCheck('lasted', 'v1', lasted)",
        ),
        # Before: "the check factory raised TypeError: ... missing 3 required arguments".
        (
            ["CartPole-v1", "--agent", "random", "--checks", "r43_user:OutcomeCheck"],
            "checks 'r43_user:OutcomeCheck' is the class OutcomeCheck, not an OutcomeCheck",
        ),
    ],
)
def test_run_refuses_a_class_for_an_instance(
    user_dir: Path, args: list[Any], expected: str
) -> None:
    output = _run(user_dir, *args)
    assert expected in " ".join(output.split()), output
    assert not (user_dir / "out").exists()


@pytest.mark.parametrize(
    ("args", "spelled"),
    [
        (["CartPole-v1", "--agent", "r43_user.AGENT"], "r43_user:AGENT"),
        (["r43_user.make", "--agent", "random"], "r43_user:make"),
        (["CartPole-v1", "--agent", "random", "--checks", "r43_user.CHECKS"], "r43_user:CHECKS"),
    ],
)
def test_a_dot_for_the_colon_is_spelled_out(user_dir: Path, args: list[Any], spelled: str) -> None:
    output = " ".join(_run(user_dir, *args).split())
    assert f"did you mean {spelled!r}? (a colon, not a dot, goes before the name)" in output


def test_the_right_spellings_still_run(user_dir: Path) -> None:
    output = _run(
        user_dir, "r43_user:make", "--agent", "r43_user:AGENT", "--checks", "r43_user:CHECKS"
    )
    assert "every requirement met" in output, output
    # A class that needs no arguments is a factory; gymnasium's own agents still resolve.
    assert "every requirement met" in _run(user_dir, "r43_user:CartPoleEnv", "--agent", "random")


def test_worldmodel_model_with_a_dot_is_spelled_out(tmp_path: Path) -> None:
    (tmp_path / "r43_models.py").write_text("def LinearDelta(simulator):\n    return None\n")
    done = onrecord(
        "worldmodel",
        "run",
        "--smoke",
        "--model",
        "r43_models.LinearDelta",
        "--output-dir",
        str(tmp_path / "wm"),
        cwd=tmp_path,
        pythonpath=tmp_path,
    )
    assert done.returncode == 3
    assert "did you mean 'r43_models:LinearDelta'?" in " ".join(done.stderr.split())
    assert not (tmp_path / "wm").exists()


def test_register_environment_with_a_dot_is_spelled_out(user_dir: Path) -> None:
    from onrecord.runner import register_environment

    with pytest.raises(InputError, match=r"did you mean 'r43_user:make'\?"):
        register_environment("r43-mine", "r43_user.make")


def test_an_agent_class_called_the_way_an_agent_is_is_still_accepted() -> None:
    from onrecord.runner._slips import agent_class_problem

    class Builder:  # a tool world's agent: built with the task's input
        def __init__(self, brief: object) -> None:
            self.brief = brief

    assert agent_class_problem("m:Builder", Builder) is None
    assert agent_class_problem("m:env", gym.Env) is not None
