"""Third probe of the world-model tools: infinities in tables, overflow in means, batch
independence of the ensemble, failed forecasts that are not censoring, Box actions
planned as NumPy arrays, answers that only look numeric, a wrong ``state_key``, paired
arms of different lengths, coverage at the interval bound and a protocol missing a field.
Real Gymnasium environments throughout."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import canonical_bytes
from onrecord.cli.main import main
from onrecord.dynamics import (
    BootstrapEnsembleModel,
    PersistenceModel,
    RandomModel,
    Simulator,
    Transitions,
    capture_forecast,
    capture_forecasts,
    capture_pairs,
    effect_table,
    get_simulator,
    request_predictor,
)
from onrecord.dynamics._metrics import Z_SCORES
from onrecord.dynamics._references import capture_plan, random_plan
from onrecord.dynamics.experiment import build_protocol
from onrecord.dynamics.experiment._store import write_json, write_manifest
from onrecord.dynamics_metrics import (
    aggregate_metrics,
    forecast_metrics,
    forecast_report,
)
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode
from tests.dynamics.test_capture import ACTIONS, COORDS, capture, seed_reference

HORIZONS = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def episodes() -> list[Any]:
    return [seed_reference(seed=s) for s in range(6)]


def batch(episodes: list[Any], predict: Any, **kwargs: Any) -> list[Any]:
    options: dict[str, Any] = {
        "model_id": "m/v1",
        "contract": "c/v1",
        "coordinates": COORDS,
        "horizons": HORIZONS,
        "planned_actions": [ACTIONS] * len(episodes),
    }
    options.update(kwargs)
    return capture_forecasts(episodes, predict, **options)


def steady(states: np.ndarray) -> np.ndarray:
    """``[N, 4, d]``: the initial states held for the four planned actions."""
    return np.repeat(states[:, None, :], len(ACTIONS), axis=1)


# --- infinities are text, never null ----------------------------------------------------


def test_an_infinite_nll_is_written_as_infinity_not_null(episodes: list[Any]) -> None:
    # A deviation of 1e-200 around an error of 0.5 has a log density beyond any float.
    forecasts = batch(
        episodes,
        lambda states, actions: {
            "mean": steady(states) + 0.5,
            "standard_deviation": np.full((len(states), 4, 4), 1e-200),
        },
    )
    metrics = forecast_metrics(forecasts[0])
    assert np.isposinf(metrics.nll).all()
    cell = metrics.to_dict()["coordinates"]["x"]["horizons"]["h1"]
    assert cell["nll"] == "Infinity"
    assert b'"nll":"Infinity"' in canonical_bytes(metrics.to_dict())

    rows = aggregate_metrics(forecasts).rows()
    assert {row["nll"] for row in rows} == {"Infinity"}
    # Finite numbers stay numbers, and nothing measured stays null.
    assert all(isinstance(row["crps"], float) for row in rows)
    assert b'"nll":null' not in canonical_bytes(aggregate_metrics(forecasts).to_dict())


def test_unmeasured_cells_stay_null_beside_infinite_ones(episodes: list[Any]) -> None:
    # Horizon 4 is censored for a reference that stopped after two steps.
    short = seed_reference(seed=1, max_steps=2)
    forecasts = batch(
        [short],
        lambda states, actions: {
            "mean": steady(states) + 0.5,
            "standard_deviation": np.full((1, 4, 4), 1e-200),
        },
    )
    rows = {(r["coordinate"], r["horizon"]): r for r in aggregate_metrics(forecasts).rows()}
    assert rows[("x", 1)]["nll"] == "Infinity"
    assert rows[("x", 4)]["nll"] is None
    assert rows[("x", 4)]["measured"] == 0


# --- means of huge but finite errors ----------------------------------------------------


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    exponents=st.lists(st.floats(150.0, 307.0), min_size=6, max_size=6),
    signs=st.lists(st.sampled_from([-1.0, 1.0]), min_size=6, max_size=6),
)
def test_rmse_and_mae_of_huge_errors_are_finite_and_right(
    episodes: list[Any], exponents: list[float], signs: list[float]
) -> None:
    offsets = np.array([s * 10.0**e for s, e in zip(signs, exponents, strict=True)])
    forecasts = batch(
        episodes,
        lambda states, actions: {"mean": steady(states) + offsets[:, None, None]},
    )
    agg = aggregate_metrics(forecasts)
    for i in range(len(HORIZONS)):
        for j in range(4):
            errors = [float(f.mean[i, j] - f.truth[i, j]) for f in forecasts]
            # math.hypot and math.fsum never overflow on the way to a finite answer.
            expected_rmse = math.hypot(*errors) / math.sqrt(len(errors))
            expected_mae = math.fsum(abs(e) / len(errors) for e in errors)
            assert math.isfinite(agg.rmse[i, j])
            assert agg.rmse[i, j] == pytest.approx(expected_rmse, rel=1e-12)
            assert agg.mae[i, j] == pytest.approx(expected_mae, rel=1e-12)
            assert agg.bias[i, j] == pytest.approx(
                math.fsum(e / len(errors) for e in errors), rel=1e-9, abs=1e-9 * expected_mae
            )


def test_a_report_of_huge_errors_is_made_and_its_measure_is_their_mean(
    reference: Any,
) -> None:
    huge = 1.7e308
    forecasts = [
        capture(reference, lambda request: {"states": [[huge, -huge, 0.0, 0.0]] * 4}),
        capture(reference, lambda request: {"states": [[huge, -huge, 0.0, 0.0]] * 4}),
    ]
    report = forecast_report(forecasts, {"x": 1.0, "velocity": 1.0})
    trial = report.trials[0]
    truth = forecasts[0].truth
    measured = np.abs(huge - truth[[0, 3], 0])
    assert trial.measures["dynamics/x/mean_abs_error"] == pytest.approx(
        math.fsum(measured / 2), rel=1e-15
    )
    assert {r.status for r in trial.results} == {"fail"}


@pytest.fixture(scope="module")
def reference() -> Any:
    return seed_reference()


# --- the ensemble's forecast of a reference does not depend on its batch ---------------


@pytest.fixture(scope="module")
def cartpole_refs() -> tuple[Simulator, list[Any], list[Any]]:
    simulator = get_simulator("CartPole-v1")
    plans = [random_plan(simulator, 16, np.random.default_rng(s)) for s in range(6)]
    refs = [capture_plan(simulator, plan, case_id=f"r{s}", seed=s) for s, plan in enumerate(plans)]
    return simulator, refs, plans


def _batched_and_alone(
    model: Any, simulator: Simulator, refs: list[Any], plans: list[Any]
) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """``model`` fitted on ``refs``, then their forecasts in one batch and one by one."""
    model.fit(Transitions.from_episodes(refs))
    options: dict[str, Any] = {
        "model_id": model.model_id,
        "contract": simulator.contract,
        "coordinates": simulator.coordinates,
        "horizons": [1, 4, 8],
    }
    together = capture_forecasts(refs, model, planned_actions=plans, **options)
    alone = [
        capture_forecasts([ref], model, planned_actions=[plan], **options)[0]
        for ref, plan in zip(refs, plans, strict=True)
    ]
    return together, alone, options


def test_the_ensemble_forecast_of_a_reference_does_not_depend_on_its_batch(
    cartpole_refs: tuple[Simulator, list[Any], list[Any]],
) -> None:
    simulator, refs, plans = cartpole_refs
    model = BootstrapEnsembleModel(simulator, members=3, particles=2)
    together, alone, options = _batched_and_alone(model, simulator, refs, plans)
    backwards = capture_forecasts(refs[::-1], model, planned_actions=plans[::-1], **options)
    single = capture_forecast(
        refs[2], request_predictor(model), planned_actions=plans[2], **options
    )
    assert [f.digest for f in together] == [f.digest for f in alone]
    assert [f.digest for f in together] == [f.digest for f in backwards[::-1]]
    assert np.array_equal(single.mean, together[2].mean)
    assert np.array_equal(single.std, together[2].std)  # type: ignore[arg-type]
    # Still a spread of particles, not a collapsed one.
    assert (together[0].std > 0).all()  # type: ignore[operator]


def test_the_random_walk_forecast_of_a_reference_does_not_depend_on_its_batch(
    cartpole_refs: tuple[Simulator, list[Any], list[Any]],
) -> None:
    simulator, refs, plans = cartpole_refs
    model = RandomModel(simulator, seed=4)
    together, alone, _ = _batched_and_alone(model, simulator, refs, plans)
    assert [f.digest for f in together] == [f.digest for f in alone]
    # Different references still get different noise.
    steps = [f.mean[0] - f.initial_state for f in together]
    assert len({tuple(step) for step in steps}) == len(steps)


# --- a failed forecast is not a censored one --------------------------------------------


def test_a_model_error_is_not_reported_as_censoring(reference: Any) -> None:
    forecast = capture(reference, lambda request: 1 / 0)
    assert forecast.status == "model_error"
    metrics = forecast_metrics(forecast)
    assert not metrics.censored.any()  # the reference reached horizons 1 and 4
    assert "censored" not in str(metrics)
    assert "model error" in str(metrics)
    cell = metrics.to_dict()["coordinates"]["x"]["horizons"]["h4"]
    assert cell == {"censored": False, "measured": False}


def test_a_failed_forecast_is_still_censored_after_the_observed_prefix() -> None:
    short = seed_reference(seed=1, max_steps=2)
    forecast = capture(short, lambda request: 1 / 0)
    assert forecast_metrics(forecast).censored.tolist() == [False, True]


# --- Box actions planned as NumPy arrays -----------------------------------------------


def pendulum_reference(actions: list[Any]) -> Any:
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("Pendulum-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in actions:
            env.step(action)
        return "done"

    return capture_episode(
        factory,
        interact,
        case=EvalCase("swing", case_id="pendulum:3"),
        environment_id="Pendulum-v1",
        observer_id="state/v1",
        observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},
        seed=3,
        max_steps=len(actions),
    )


def test_numpy_box_actions_are_the_plan_the_reference_ran() -> None:
    actions = [np.array([v], dtype=np.float32) for v in (0.1, -1.3, 2.0, 0.7)]
    reference = pendulum_reference(actions)
    seen: list[Any] = []

    def predict(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["actions"])
        return {"states": [request["initial_state"]] * len(request["actions"])}

    options: dict[str, Any] = {
        "model_id": "p/v1",
        "contract": "pendulum/v1",
        "coordinates": {"theta": "rad", "theta_dot": "rad/s"},
        "horizons": [1, 4],
        "planned_actions": actions,
    }
    forecast = capture_forecast(reference, predict, **options)
    assert forecast.status == "ok"
    assert forecast.action_scope == "planned"
    # The model sees numbers, exactly as the episode recorded them.
    assert seen[0] == [a.tolist() for a in actions] == reference.actions()
    batched = capture_forecasts(
        [reference],
        PersistenceModel(get_simulator("Pendulum-v1")),
        **options | {"planned_actions": [actions]},
    )
    assert batched[0].status == "ok"


# --- answers that only look numeric ----------------------------------------------------


@pytest.mark.parametrize(
    "states",
    [
        [["0.1", "0.2", "0.3", "0.4"]] * 4,
        [[b"1", b"2", b"3", b"4"]] * 4,
        [[True, False, True, False]] * 4,
        np.full((4, 4), np.datetime64(1, "s")),
    ],
    ids=["text", "bytes", "booleans", "dates"],
)
def test_text_booleans_and_dates_are_not_predictions(reference: Any, states: Any) -> None:
    forecast = capture(reference, lambda request: {"states": states})
    assert forecast.status == "model_error"
    assert "not numeric" in (forecast.error or {})["message"]

    deviations = capture(
        reference,
        lambda request: {"states": [[0.0] * 4] * 4, "standard_deviation": states},
    )
    assert deviations.status == "model_error"


@pytest.mark.parametrize("field", ["mean", "standard_deviation", "samples"])
def test_batched_text_answers_are_model_errors(episodes: list[Any], field: str) -> None:
    def predict(states: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        shape = (len(states), 3, 4, 4) if field == "samples" else (len(states), 4, 4)
        answer: dict[str, Any] = {"mean": np.zeros((len(states), 4, 4))}
        if field == "samples":
            answer = {}
        answer[field] = np.full(shape, "0.5")
        return answer

    forecasts = batch(episodes[:2], predict)
    assert [f.status for f in forecasts] == ["model_error", "model_error"]
    assert all("not numeric" in (f.error or {})["message"] for f in forecasts)


def test_float32_and_int_answers_are_still_accepted(reference: Any) -> None:
    forecast = capture(
        reference,
        lambda request: {
            "states": np.zeros((4, 4), dtype=np.float32),
            "standard_deviation": np.ones((4, 4), dtype=np.int64),
        },
    )
    assert forecast.status == "ok"


# --- a state_key the observer does not have ----------------------------------------------


@pytest.mark.parametrize("state_key", ["obs", None, ""])
def test_a_wrong_state_key_is_an_input_error_naming_it(reference: Any, state_key: Any) -> None:
    with pytest.raises(InputError, match="state_key"):
        capture(reference, lambda request: {"states": []}, state_key=state_key)
    with pytest.raises(InputError, match="state_key"):
        batch([reference], lambda states, actions: {}, state_key=state_key)


def test_an_unobserved_initial_state_is_still_a_simulator_error() -> None:
    reference = seed_reference(factory_error=True)
    forecast = capture(reference, lambda request: {"states": []})
    assert forecast.status == "simulator_error"


# --- paired arms of different lengths ----------------------------------------------------


def test_effect_table_of_observed_prefix_arms_of_different_lengths() -> None:
    simulator = get_simulator("CartPole-v1")
    # Leaning pole: pushing left ends the base arm early, pushing right keeps it up.
    (pair,) = capture_pairs(simulator, [[0.0, 0.0, 0.15, 0.0]], kind="action", length=12, seed=3)
    options: dict[str, Any] = {
        "model_id": "persistence/v1",
        "contract": simulator.contract,
        "coordinates": simulator.coordinates,
        "horizons": [1, 2, 4, 8],
    }
    model = PersistenceModel(simulator)
    base = capture_forecasts([pair.base], model, **options)
    variant = capture_forecasts([pair.variant], model, **options)
    assert len(base[0].mean) != len(variant[0].mean)
    table = effect_table(base, variant)
    steps = min(base[0].observed_steps, variant[0].observed_steps)
    real = np.abs(variant[0].truth[:steps] - base[0].truth[:steps])
    for i, horizon in enumerate([1, 2, 4, 8]):
        if horizon <= steps:
            assert table.pairs[i].tolist() == [1, 1, 1, 1]
            assert np.array_equal(table.real_effect[i], real[horizon - 1])
            assert np.array_equal(table.predicted_effect[i], np.zeros(4))
        else:
            assert table.pairs[i].tolist() == [0, 0, 0, 0]


def test_effect_table_refuses_pairs_in_other_units(episodes: list[Any]) -> None:
    first = batch(episodes[:2], lambda s, a: {"mean": steady(s)})
    other_units = dict(COORDS, x="cm")
    second = batch(
        episodes[2:4],
        lambda s, a: {"mean": steady(s)},
        coordinates=other_units,
    )
    with pytest.raises(InputError, match="units"):
        effect_table([first[0], second[0]], [first[1], second[1]])


# --- coverage at the bound ----------------------------------------------------------------


def test_aggregate_coverage_is_the_share_of_forecasts_whose_interval_covered(
    episodes: list[Any],
) -> None:
    rng = np.random.default_rng(11)
    std = rng.uniform(1e-3, 5.0, (len(episodes), 4, 4))
    truths = {
        e.digest: np.asarray([s["state"]["state"] for s in e.transitions()]) for e in episodes
    }
    # Predictions that sit on the bound of one interval level per horizon: exactly where
    # |error| <= z*std and |error|/std <= z can round apart.
    level = Z_SCORES[np.arange(4) % len(Z_SCORES)][None, :, None]
    lookup = {tuple(e.initial["state"]["state"]): e.digest for e in episodes}

    def predict(states: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        truth = np.stack([truths[lookup[tuple(s)]][:4] for s in states.tolist()])
        return {"mean": truth + level * std, "standard_deviation": std}

    forecasts = batch(episodes, predict)
    agg = aggregate_metrics(forecasts)
    covered = np.stack([forecast_metrics(f).covered for f in forecasts])  # type: ignore[misc]
    assert agg.coverage is not None
    assert np.array_equal(agg.coverage, covered.mean(axis=0))


# --- replay of a protocol lacking a field -------------------------------------------------


def test_replay_of_a_protocol_lacking_a_field_exits_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    protocol = build_protocol(smoke=True)
    del protocol["models"]
    write_json(tmp_path / "protocol.json", protocol)
    write_manifest(tmp_path)
    assert main(["worldmodel", "analyze", "--replay", str(tmp_path)]) == 3
    assert "'models'" in capsys.readouterr().err


def test_replay_of_a_protocol_with_a_field_of_another_kind_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    protocol = build_protocol(smoke=True)
    protocol["bootstrap"] = {"draws": "many", "seed": 0}
    write_json(tmp_path / "protocol.json", protocol)
    write_manifest(tmp_path)
    assert main(["worldmodel", "analyze", "--replay", str(tmp_path)]) == 3
    assert "bootstrap.draws" in capsys.readouterr().err


# --- start states and lengths the caller got wrong ---------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"start_states": [[0.0, 0.0, 0.0]], "kind": "action", "length": 4}, "start_state"),
        ({"start_states": [[0.0] * 4, [1.0]], "kind": "action", "length": 4}, "start_state"),
        ({"start_states": [[0.0] * 4], "kind": "action", "length": 0}, "length"),
        (
            {
                "start_states": [[0.0] * 4],
                "kind": "offset",
                "length": 3,
                "offset": [0.0, 0.0, float("inf"), 0.0],
            },
            "offset",
        ),
    ],
)
def test_capture_pairs_refuses_bad_starts_and_lengths_before_running(
    kwargs: dict[str, Any], field: str
) -> None:
    # Before the fix a short start state was run, and recorded as the simulator's reset
    # failure; a zero length was NumPy's "negative dimensions" ValueError.
    with pytest.raises(InputError, match=field):
        capture_pairs(get_simulator("CartPole-v1"), seed=0, **kwargs)


def test_capture_plan_and_random_plan_refuse_bad_arguments() -> None:
    simulator = get_simulator("Pendulum-v1")
    with pytest.raises(InputError, match="start_state"):
        capture_plan(simulator, [[1.0]], case_id="x", seed=0, start_state=[0.0, 0.0, 0.0])
    with pytest.raises(InputError, match="length"):
        random_plan(simulator, -1, np.random.default_rng(0))
    # A valid start state still runs from exactly that state.
    episode = capture_plan(simulator, [[1.0]], case_id="x", seed=0, start_state=[0.5, -0.25])
    assert episode.initial["state"]["state"] == [0.5, -0.25]
