"""A researcher's own models on Gymnasium environments other than CartPole: Box actions,
angles, discrete states, particles, and the docs' own-model examples. Real environments,
no mocks."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord.dynamics import (
    OracleModel,
    PersistenceModel,
    Prediction,
    Transitions,
    capture_forecast,
    capture_forecasts,
    capture_pairs,
    capture_plan,
    get_simulator,
    random_plan,
    run_closed_loop,
)
from onrecord.dynamics._planners import ExhaustivePlanner
from onrecord.dynamics_metrics import aggregate_metrics, forecast_metrics
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode

DOCS = Path(__file__).resolve().parents[2] / "docs" / "world-models.md"
PENDULUM = get_simulator("Pendulum-v1")


def torque_plan(seed: int, length: int) -> list[Any]:
    """Continuous torques as float32 arrays, the dtype of Pendulum's action space."""
    rng = np.random.default_rng(seed)
    return list(rng.uniform(-2, 2, (length, 1)).astype(np.float32))


def pendulum_forecast(episode: Any, predict: Any, plan: list[Any]) -> Any:
    return capture_forecast(
        episode,
        predict,
        model_id="probe/v1",
        contract=PENDULUM.contract,
        coordinates=PENDULUM.coordinates,
        horizons=[1, len(plan)],
        planned_actions=plan,
    )


def persistence(request: dict[str, Any]) -> dict[str, Any]:
    return {"states": [request["initial_state"]] * len(request["actions"])}


# --- Box actions ----------------------------------------------------------------------


def test_capture_plan_refuses_a_torque_that_float32_would_round() -> None:
    # Executed as float32, 0.1 is recorded as 0.10000000149011612: the plan would no
    # longer match what ran, and capture_forecast(planned_actions=plan) refused it later
    # with a mismatch the researcher never caused.
    with pytest.raises(InputError, match=r"action 1 of the plan.*float32"):
        capture_plan(PENDULUM, [[0.5], [0.1]], case_id="rounded", seed=0)


def test_a_float64_plan_that_float32_holds_exactly_runs_and_matches() -> None:
    # float64 arrays were sent as they are, refused by the float32 Box, and the episode
    # ended before its first step (every horizon censored).
    plan = [np.array([0.5]), np.array([-1.25]), np.array([2.0])]
    episode = capture_plan(PENDULUM, plan, case_id="float64", seed=0)
    assert episode.ended != "interact_error"
    assert episode.actions() == [[0.5], [-1.25], [2.0]]
    forecast = pendulum_forecast(episode, persistence, plan)
    assert forecast.status == "ok"
    assert forecast_metrics(forecast).measured.all()


def test_closed_loop_sends_box_actions_gymnasium_accepts_without_a_warning() -> None:
    # Planned torques were sent as lists: Gymnasium warned on every step, and where
    # warnings are errors the recorder refused the action and the run ended at once.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (run,) = run_closed_loop(
            PENDULUM, PersistenceModel(PENDULUM), ExhaustivePlanner(2), seeds=[0], max_steps=3
        )
    assert not run.failed
    assert run.episode.ended != "interact_error"
    assert len(run.episode.transitions()) == 3


def test_the_oracle_is_exact_for_any_float32_torque() -> None:
    # The oracle stepped float64 torques through Pendulum's float32 arithmetic while the
    # reference stepped float32 ones: errors of ~1e-8 rad for a model documented exact.
    plans = [torque_plan(seed, 30) for seed in range(3)]
    episodes = [capture_plan(PENDULUM, p, case_id=f"o{i}", seed=i) for i, p in enumerate(plans)]
    forecasts = capture_forecasts(
        episodes,
        OracleModel(PENDULUM),
        model_id="oracle",
        contract=PENDULUM.contract,
        coordinates=PENDULUM.coordinates,
        horizons=[1, 10, 30],
        planned_actions=plans,
    )
    assert [f.status for f in forecasts] == ["ok"] * 3
    assert aggregate_metrics(forecasts).mae.max() == 0.0


def test_changing_a_plan_leaves_the_simulators_action_set_alone() -> None:
    # random_plan, capture_pairs and the planners handed out Pendulum's own [2.0] lists:
    # halving one action of a plan halved a planning action of every later user.
    plan = random_plan(PENDULUM, 6, np.random.default_rng(0))
    for action in plan:
        action[0] *= 0.5
    (pair,) = capture_pairs(
        PENDULUM, [[0.1, 0.0]], kind="offset", length=2, seed=0, offset=[0.1, 0]
    )
    pair.base_plan[0][0] = 1.0
    choice = ExhaustivePlanner(1).plan(
        PersistenceModel(PENDULUM), PENDULUM, np.zeros(2), np.random.default_rng(0)
    )
    choice.action[0] = 0.0
    assert PENDULUM.actions == ([-2.0], [2.0])
    assert get_simulator("Pendulum-v1").actions == ([-2.0], [2.0])
    assert pair.variant_plan[0] == [-2.0]


# --- answers that are not real numbers ------------------------------------------------


def test_complex_predictions_are_model_errors_not_silently_made_real() -> None:
    # A DMD/Koopman model built on np.linalg.eig returns complex arrays; NumPy dropped the
    # imaginary part with only a warning and the forecast was scored as "ok".
    plan = torque_plan(5, 4)
    episode = capture_plan(PENDULUM, plan, case_id="complex", seed=5)

    def single(request: dict[str, Any]) -> dict[str, Any]:
        states = np.array([request["initial_state"]] * len(request["actions"]))
        return {"states": states + 0.5j}

    def batched(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        return {"mean": np.repeat(initial[:, None], actions.shape[1], axis=1) + 0.5j}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        one = pendulum_forecast(episode, single, plan)
        (many,) = capture_forecasts(
            [episode],
            batched,
            model_id="probe/v1",
            contract=PENDULUM.contract,
            coordinates=PENDULUM.coordinates,
            horizons=[1, 4],
            planned_actions=[plan],
        )
    for forecast in (one, many):
        assert forecast.status == "model_error"
        assert forecast.error is not None
        assert "complex" in forecast.error["message"]


def test_booleans_beside_numbers_are_model_errors_not_ones() -> None:
    # NumPy turns [[0.1, True]] into [[0.1, 1.0]] without a word: the docs say booleans
    # are a model error, and a lone True beside numbers slipped through as 1.0.
    plan = torque_plan(5, 4)
    episode = capture_plan(PENDULUM, plan, case_id="bools", seed=5)

    def answer(hidden: Any) -> Any:
        def model(request: dict[str, Any]) -> dict[str, Any]:
            states = [list(map(float, request["initial_state"])) for _ in request["actions"]]
            states[-1][0] = hidden
            return {"states": states}

        return model

    for hidden in (True, np.bool_(False)):
        forecast = pendulum_forecast(episode, answer(hidden), plan)
        assert forecast.status == "model_error"
        assert forecast.error is not None
        assert "booleans" in forecast.error["message"]
    assert pendulum_forecast(episode, answer(1.0), plan).status == "ok"


# --- discrete states and particles ----------------------------------------------------


def frozenlake_reference(plan: list[int], seed: int) -> Any:
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("FrozenLake-v1", is_slippery=False)
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in plan:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                return "ended"
        return "plan complete"

    def observe() -> dict[str, Any]:
        cell = int(holder["env"].unwrapped.s)
        return {"state": [cell // 4, cell % 4]}  # row, column: differences mean something

    return capture_episode(
        factory,
        interact,
        case=EvalCase("walk the lake", case_id=f"lake-{seed}"),
        environment_id="FrozenLake-v1/not-slippery",
        observer_id="row-col/v1",
        observe=observe,
        seed=seed,
        max_steps=len(plan),
    )


def test_particles_that_agree_exactly_keep_their_mean() -> None:
    # A deterministic grid world: every particle of a tabular ensemble lands in the same
    # cell, the sample deviation is 0, and the whole forecast was a model_error saying
    # "standard_deviation must be positive", which the model never returned.
    plan = [2, 2, 1, 1]  # right, right, down, down
    episode = frozenlake_reference(plan, seed=0)
    moves = {0: (0, -1), 1: (1, 0), 2: (0, 1), 3: (-1, 0)}

    def tabular(initial: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        steps = np.array([[moves[int(a)] for a in row] for row in actions], dtype=float)
        path = initial[:, None, :] + np.cumsum(steps, axis=1)
        return {"samples": np.repeat(path[:, None], 3, axis=1)}  # [N, S, H, d]

    (forecast,) = capture_forecasts(
        [episode],
        tabular,
        model_id="tabular/v1",
        contract="frozenlake-row-col/v1",
        coordinates={"row": "cell", "col": "cell"},
        horizons=[1, 4],
        planned_actions=[plan],
    )
    assert forecast.status == "ok", forecast.error
    assert forecast.std is None
    assert forecast_metrics(forecast).abs_error.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_negative_deviations_with_particles_are_still_model_errors() -> None:
    plan = torque_plan(6, 3)
    episode = capture_plan(PENDULUM, plan, case_id="negative", seed=6)

    def broken(initial: np.ndarray, actions: np.ndarray) -> Prediction:
        samples = np.repeat(initial[:, None, None], 2, axis=1).repeat(actions.shape[1], axis=2)
        return Prediction(samples.mean(axis=1), -np.ones_like(samples[:, 0]), samples)

    (forecast,) = capture_forecasts(
        [episode],
        broken,
        model_id="broken/v1",
        contract=PENDULUM.contract,
        coordinates=PENDULUM.coordinates,
        horizons=[1, 3],
        planned_actions=[plan],
    )
    assert forecast.status == "model_error"


# --- angles ---------------------------------------------------------------------------


def test_acrobot_angles_at_plus_and_minus_pi_are_the_same_angle() -> None:
    acrobot = get_simulator("Acrobot-v1")
    episode = capture_plan(acrobot, [1], case_id="pi", seed=0, start_state=[np.pi, 0, 0, 0])

    def opposite(request: dict[str, Any]) -> dict[str, Any]:
        return {"states": [[-np.pi, *request["initial_state"][1:]]]}

    errors = {}
    for angular in (acrobot.angular, ()):
        forecast = capture_forecast(
            episode,
            opposite,
            model_id="opposite/v1",
            contract=acrobot.contract,
            coordinates=acrobot.coordinate_units,
            angular=angular,
            horizons=[1],
            planned_actions=[1],
        )
        errors[angular] = forecast_metrics(forecast).abs_error[0, 0]
    assert errors[acrobot.angular] < 1e-12
    assert errors[()] == pytest.approx(2 * np.pi)


# --- messages a researcher meets first ------------------------------------------------


def test_transitions_of_episodes_that_never_ran_say_why() -> None:
    def factory() -> Any:
        return gym.make("Taxi-v3")  # deprecated: the factory raises

    episode = capture_episode(
        factory,
        lambda env, observation, info: "nothing",
        case=EvalCase("taxi", case_id="taxi-0"),
        environment_id="Taxi-v3",
        observer_id="decoded/v1",
        observe=lambda: {"state": [0]},
        seed=0,
        max_steps=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        message = ""
        try:
            Transitions.from_episodes([episode])
        except InputError as exc:
            message = str(exc)
    assert "hold no transition" in message
    assert "setup_error" in message


def test_a_model_object_missing_describe_is_named() -> None:
    class NoDescribe:
        model_id = "nodescribe/v1"

        def fit(self, transitions: Any) -> None:
            pass

        def predict(self, initial: Any, actions: Any, *, uncertainty: bool = True) -> Any:
            return Prediction(np.repeat(initial[:, None], actions.shape[1], axis=1))

    episode = capture_plan(PENDULUM, torque_plan(1, 2), case_id="nd", seed=1)
    with pytest.raises(InputError, match=r"needs \['describe'\]"):
        capture_forecasts(
            [episode],
            NoDescribe(),  # type: ignore[arg-type]
            model_id="nodescribe/v1",
            contract=PENDULUM.contract,
            coordinates=PENDULUM.coordinates,
            horizons=[1],
        )


# --- the docs' own-model examples -----------------------------------------------------


def test_the_own_model_examples_in_the_docs_run_and_print_what_they_say(
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    names = ("LeastSquares", "mountain_car", "balanced_500")
    own = [block for block in blocks if any(name in block for name in names)]
    assert len(own) == 3
    namespace: dict[str, Any] = {"__name__": "own-model"}
    for index, block in enumerate(own):
        exec(compile(block, f"docs/world-models.md own-model block {index}", "exec"), namespace)
    lines = capsys.readouterr().out.splitlines()
    theta = np.array(lines[0].strip("[]").split(), dtype=float)
    assert (theta < 1e-8).all()
    assert lines[1] == "accept"
    steps = {line.split()[0]: float(line.split()[1]) for line in lines[2:6]}
    assert steps["bayes-linear/v1"] < 200
    assert steps["oracle/MountainCar-v0"] < 200
    assert steps["bayes-linear-blind/v1"] == steps["random-walk/v1"] == 200
    # Accurate next-step angles, useless to the planner: usefulness rejects it.
    assert lines[6:] == ["bayes-linear/v1 accept", "bayes-linear-blind/v1 reject"]


def test_a_run_cut_by_the_environments_time_limit_reached_the_cap() -> None:
    # Pendulum truncates at 200 steps: with max_steps above that, every run lasts as long
    # as it can, yet "reached cap" read 0 because it only compared with max_steps.
    from onrecord.dynamics._closed_loop_stats import closed_loop_summary

    runs = run_closed_loop(
        PENDULUM, PersistenceModel(PENDULUM), ExhaustivePlanner(1), seeds=[0, 1], max_steps=250
    )
    assert [len(run.episode.transitions()) for run in runs] == [200, 200]
    assert all(run.episode.ended == "truncated" for run in runs)
    model = runs[0].record["model_id"]  # its own scale: the rows are all this test reads
    (row,) = closed_loop_summary(runs, random_model=model, oracle_model=model, draws=10)
    assert row["reached_cap"] == 2
