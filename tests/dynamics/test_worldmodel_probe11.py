"""World-model metrics checked against reference computations written here from their
definitions (NumPy/SciPy on states stepped in Gymnasium directly, never through
onrecord), plus the leftovers of analysis v3: the CLI shows ``prediction_gap_undefined``,
``analyze --replay`` names a path that is no directory, ``forecast_report([])`` is
refused, and a damaged protocol is named as such."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from rich.console import Console
from scipy import integrate, stats

from onrecord.dynamics import (
    ExhaustivePlanner,
    OracleModel,
    PersistenceModel,
    Prediction,
    RandomModel,
    Simulator,
    Transitions,
    capture_forecasts,
    get_simulator,
    run_closed_loop,
)
from onrecord.dynamics._closed_loop_stats import closed_loop_summary
from onrecord.dynamics._references import capture_plan, random_plan
from onrecord.dynamics.experiment._cohort import same_cohort_table
from onrecord.dynamics_metrics import aggregate_metrics, forecast_metrics, forecast_report
from onrecord.errors import InputError
from tests.conftest import writable_copy

HORIZONS = [1, 4, 8, 16, 32]
Z90 = stats.norm.ppf(0.95)


# --- independent references ------------------------------------------------------------


def gym_states(simulator: Simulator, plan: list[Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The initial internal state and the state after each executed action, stepped in
    Gymnasium directly (the episode stops where the environment ends it)."""
    env = gym.make(simulator.env_id)
    env.reset(seed=seed)
    initial = np.array(env.unwrapped.state, dtype=np.float64)
    states = []
    for action in plan:
        native = np.asarray(action, dtype=np.float32) if isinstance(action, list) else action
        _, _, terminated, truncated, _ = env.step(native)
        states.append(np.array(env.unwrapped.state, dtype=np.float64))
        if terminated or truncated:
            break
    env.close()
    return initial, np.array(states)


def wrap(values: np.ndarray) -> np.ndarray:
    """Into (-pi, pi], by the complex argument (not the modulo the library uses)."""
    out = np.angle(np.exp(1j * values))
    return np.where(np.isclose(out, -np.pi, rtol=0, atol=1e-15), np.pi, out)


def crps_by_integration(mean: float, sd: float, actual: float) -> float:
    """CRPS = integral of (F(x) - 1{x >= actual})^2 dx, numerically."""
    low, high = mean - 12 * sd, mean + 12 * sd
    below = integrate.quad(lambda x: stats.norm.cdf(x, mean, sd) ** 2, low, actual, limit=200)
    above = integrate.quad(lambda x: stats.norm.sf(x, mean, sd) ** 2, actual, high, limit=200)
    return below[0] + above[0] + max(0.0, low - actual) + max(0.0, actual - high)


class Scenario:
    """References of one environment and, per reference, the states Gymnasium reached."""

    def __init__(self, env_id: str, seeds: range, length: int) -> None:
        self.simulator = get_simulator(env_id)
        rng = np.random.default_rng(seeds.start)
        self.plans = [random_plan(self.simulator, length, rng) for _ in seeds]
        self.seeds = list(seeds)
        self.episodes = [
            capture_plan(self.simulator, plan, case_id=f"ref-{s}", seed=s)
            for s, plan in zip(seeds, self.plans, strict=True)
        ]
        self.truth = {}
        self.initial = {}
        for s, plan in zip(seeds, self.plans, strict=True):
            self.initial[s], self.truth[s] = gym_states(self.simulator, plan, s)

    def forecast(
        self,
        offset: Any,
        *,
        std: Any = None,
        model_id: str = "probe/v1",
        horizons: list[int] = HORIZONS,
    ) -> list[Any]:
        """Forecasts predicting Gymnasium's own states plus ``offset(seed, step)`` (a
        ``[d]`` vector, step 1-based), with deviations ``std(seed, step)`` if given."""
        by_initial = {tuple(self.initial[s]): s for s in self.seeds}

        def predict(initial_states: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
            means, sds = [], []
            for row in initial_states:
                seed = by_initial[tuple(row)]
                truth = self.truth[seed]
                steps = actions.shape[1]
                mean = np.array(
                    [
                        (truth[k] if k < len(truth) else truth[-1]) + offset(seed, k + 1)
                        for k in range(steps)
                    ]
                )
                means.append(mean)
                if std is not None:
                    sds.append(np.array([std(seed, k + 1) for k in range(steps)]))
            answer: dict[str, Any] = {"mean": np.array(means)}
            if std is not None:
                answer["standard_deviation"] = np.array(sds)
            return answer

        return capture_forecasts(
            self.episodes,
            predict,
            model_id=model_id,
            contract=self.simulator.contract,
            coordinates=self.simulator.coordinates,
            horizons=horizons,
            planned_actions=self.plans,
        )


@pytest.fixture(scope="module")
def cartpole() -> Scenario:
    return Scenario("CartPole-v1", range(500, 530), 32)


# --- horizons, errors, RMSE/MAE --------------------------------------------------------


def test_horizon_one_is_the_state_after_the_first_action(cartpole: Scenario) -> None:
    # Offset k * 1e-3 on cart_position at step k: an off-by-one would read (h ± 1) * 1e-3.
    forecasts = cartpole.forecast(lambda seed, k: np.array([k * 1e-3, 0, 0, 0]))
    for seed, forecast in zip(cartpole.seeds, forecasts, strict=True):
        truth = cartpole.truth[seed]
        metrics = forecast_metrics(forecast)
        for i, h in enumerate(HORIZONS):
            if h > len(truth):
                assert metrics.censored[i]
                assert np.isnan(metrics.error[i]).all()
                continue
            np.testing.assert_allclose(forecast.truth[h - 1], truth[h - 1], rtol=0, atol=0)
            assert metrics.error[i, 0] == pytest.approx(h * 1e-3, abs=1e-12)
            assert np.abs(metrics.error[i, 1:]).max() <= 1e-15


def test_bias_mae_rmse_skill_per_horizon_match_numpy(cartpole: Scenario) -> None:
    scale = {s: (-1) ** s * (s - 495) * 1e-3 for s in cartpole.seeds}
    forecasts = cartpole.forecast(lambda seed, k: scale[seed] * k * np.array([1, -2, 0.5, 3]))
    table = aggregate_metrics(forecasts)
    assert table.forecasts == table.cohort == len(cartpole.seeds)
    reached = {h: [s for s in cartpole.seeds if len(cartpole.truth[s]) >= h] for h in HORIZONS}
    assert len(reached[32]) < len(reached[1])  # some references fall: censoring is exercised
    for i, h in enumerate(HORIZONS):
        seeds = reached[h]
        errors = np.array([scale[s] * h * np.array([1, -2, 0.5, 3]) for s in seeds])
        persistence = np.array([cartpole.initial[s] - cartpole.truth[s][h - 1] for s in seeds])
        np.testing.assert_array_equal(table.measured[i], len(seeds))
        assert table.censored[i] == len(cartpole.seeds) - len(seeds)
        np.testing.assert_allclose(table.bias[i], errors.mean(axis=0), rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(table.mae[i], np.abs(errors).mean(axis=0), rtol=1e-9)
        rmse = np.sqrt((errors**2).mean(axis=0))
        np.testing.assert_allclose(table.rmse[i], rmse, rtol=1e-9)
        reference = np.sqrt((persistence**2).mean(axis=0))
        np.testing.assert_allclose(table.persistence_rmse[i], reference, rtol=1e-9)
        np.testing.assert_allclose(table.skill[i], 1 - rmse / reference, rtol=1e-9)


def test_float32_predictions_are_scored_in_float64(cartpole: Scenario) -> None:
    # A model answering in float32 is scored on exactly the float32 values it gave:
    # the error is float32(truth) - truth computed in float64, not rounded again.
    forecasts = cartpole.forecast(lambda seed, k: np.zeros(4))
    rounded = cartpole.forecast(
        lambda seed, k: (
            cartpole.truth[seed][min(k, len(cartpole.truth[seed])) - 1].astype(np.float32)
            - cartpole.truth[seed][min(k, len(cartpole.truth[seed])) - 1]
        ),
        model_id="f32/v1",
    )
    exact = aggregate_metrics(forecasts)
    assert np.nanmax(exact.mae) == 0.0
    table = aggregate_metrics(rounded)
    assert table.mae.dtype == np.float64
    for i, h in enumerate(HORIZONS):
        seeds = [s for s in cartpole.seeds if len(cartpole.truth[s]) >= h]
        expected = np.array(
            [
                np.float32(cartpole.truth[s][h - 1]).astype(np.float64) - cartpole.truth[s][h - 1]
                for s in seeds
            ]
        )
        np.testing.assert_allclose(table.mae[i], np.abs(expected).mean(axis=0), rtol=1e-6)


# --- angles ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "turn"), [("Pendulum-v1", 2 * np.pi), ("Acrobot-v1", -2 * np.pi)]
)
def test_an_error_of_a_full_turn_less_epsilon_counts_as_epsilon(env_id: str, turn: float) -> None:
    scenario = Scenario(env_id, range(700, 712), 12)
    epsilon = 1e-3
    angular = np.array([c.angular for c in scenario.simulator.coordinates])
    offset = np.where(angular, turn - np.sign(turn) * epsilon, 0.0)
    sd = 0.01
    forecasts = scenario.forecast(
        lambda seed, k: offset, std=lambda seed, k: np.full(len(offset), sd), horizons=[1, 4, 12]
    )
    for forecast in forecasts:
        metrics = forecast_metrics(forecast)
        np.testing.assert_allclose(
            metrics.error[:, angular], -np.sign(turn) * epsilon, rtol=0, atol=1e-9
        )
        assert metrics.covered[:, :, angular].all()  # ε is well inside ±1.64 σ
        np.testing.assert_allclose(
            metrics.nll[:, angular], -stats.norm.logpdf(epsilon, 0, sd), rtol=1e-9
        )
    table = aggregate_metrics(forecasts)
    for i, h in enumerate([1, 4, 12]):
        np.testing.assert_allclose(table.mae[i, angular], epsilon, rtol=1e-6)
        np.testing.assert_allclose(table.rmse[i, angular], epsilon, rtol=1e-6)
        np.testing.assert_allclose(table.coverage[:, i, angular], 1.0)
        persistence = np.array(
            [wrap(scenario.initial[s] - scenario.truth[s][h - 1]) for s in scenario.seeds]
        )
        np.testing.assert_allclose(
            table.persistence_rmse[i, angular],
            np.sqrt((persistence[:, angular] ** 2).mean(axis=0)),
            rtol=1e-9,
        )
        crps = crps_by_integration(0.0, sd, epsilon)
        np.testing.assert_allclose(table.crps[i, angular], crps, rtol=1e-6)


def test_a_half_turn_error_keeps_its_sign() -> None:
    scenario = Scenario("Pendulum-v1", range(720, 723), 4)
    forecasts = scenario.forecast(lambda seed, k: np.array([np.pi, 0.0]), horizons=[1, 4])
    assert [f.status for f in forecasts] == ["ok"] * 3
    for forecast in forecasts:
        error = forecast_metrics(forecast).error[:, 0]
        assert ((error > 3.14159) & (error <= np.pi + 1e-12)).all()


# --- calibration and coverage -----------------------------------------------------------


def test_intervals_nll_crps_pit_and_calibration_match_scipy(cartpole: Scenario) -> None:
    noise_rng = np.random.default_rng(11)
    noise = {s: noise_rng.normal(size=(32, 4)) for s in cartpole.seeds}
    sigma = np.array([0.01, 0.05, 0.002, 0.08])
    # Deviations too small for half of the references: coverage falls below nominal.
    given = {s: sigma * (0.5 if s % 2 else 1.0) for s in cartpole.seeds}
    forecasts = cartpole.forecast(
        lambda seed, k: noise[seed][k - 1] * sigma, std=lambda seed, k: given[seed]
    )
    table = aggregate_metrics(forecasts)
    levels = [0.5, 0.8, 0.9, 0.95]
    for i, h in enumerate(HORIZONS):
        seeds = [s for s in cartpole.seeds if len(cartpole.truth[s]) >= h]
        errors = np.array([noise[s][h - 1] * sigma for s in seeds])
        sds = np.array([given[s] for s in seeds])
        for k, level in enumerate(levels):
            z = stats.norm.ppf(0.5 + level / 2)
            np.testing.assert_allclose(
                table.coverage[k, i], (np.abs(errors) <= z * sds).mean(axis=0), rtol=1e-12
            )
            np.testing.assert_allclose(table.width[k, i], 2 * z * sds.mean(axis=0), rtol=1e-9)
        nll = -stats.norm.logpdf(errors, 0, sds)
        np.testing.assert_allclose(table.nll[i], nll.mean(axis=0), rtol=1e-9)
        # PIT of the actual value: P(prediction <= actual) = Phi((actual - mean) / sd).
        pit = stats.norm.cdf(-errors / sds)
        counts = np.stack([np.histogram(pit[:, j], bins=10, range=(0, 1))[0] for j in range(4)])
        np.testing.assert_array_equal(table.pit[i], counts)
        p = np.arange(1, 20) / 20
        calibration = np.abs((pit[None] <= p[:, None, None]).mean(axis=1) - p[:, None]).mean(0)
        np.testing.assert_allclose(table.calibration_error[i], calibration, rtol=1e-9)
        if h in (1, 32):
            for j in (0, 3):
                crps = np.mean(
                    [
                        crps_by_integration(e, sd, 0.0)
                        for e, sd in zip(errors[:, j], sds[:, j], strict=True)
                    ]
                )
                assert table.crps[i, j] == pytest.approx(crps, rel=1e-6)
    assert table.coverage[2].min() < 0.9 - 0.1  # the under-dispersed half shows


# --- the same cohort -------------------------------------------------------------------


def test_same_cohort_is_the_references_every_model_observed_everywhere(
    cartpole: Scenario,
) -> None:
    fails_on = set(cartpole.seeds[::5])
    by_initial = {tuple(cartpole.initial[s]): s for s in cartpole.seeds}

    def flaky_offset(seed: int, k: int) -> np.ndarray:
        return np.full(4, np.nan) if seed in fails_on else np.full(4, 1e-3 * k)

    good = cartpole.forecast(lambda seed, k: np.full(4, 2e-3 * k), model_id="good/v1")
    flaky = cartpole.forecast(flaky_offset, model_id="flaky/v1")
    assert {by_initial[tuple(f.initial_state)] for f in flaky if f.status != "ok"} == fails_on
    table = same_cohort_table({"good/v1": good, "flaky/v1": flaky})
    whole = [s for s in cartpole.seeds if len(cartpole.truth[s]) >= 32]
    cohort = [s for s in whole if s not in fails_on]
    assert table["references"] == len(cartpole.seeds)
    assert table["cohort"] == len(cohort)
    excluded = table["excluded"]
    assert excluded["not_observed_at_every_horizon"] == len(cartpole.seeds) - len(whole)
    assert excluded["failed_by_model"] == {"good/v1": 0, "flaky/v1": len(fails_on & set(whole))}
    for model, step in (("good/v1", 2e-3), ("flaky/v1", 1e-3)):
        rows = table["models"][model]["rows"]
        # One row per CartPole coordinate (4) and horizon, so no loop below is empty.
        assert sorted(row["horizon"] for row in rows) == sorted(HORIZONS * 4)
        for row in rows:
            assert row["measured"] == row["denominator"] == len(cohort)
            assert row["mae"] == pytest.approx(step * row["horizon"], rel=1e-9)
    # Per model, its own cohort would differ: that is what the shared one prevents.
    own = aggregate_metrics(good, same_cohort=True)
    assert own.cohort == len(whole) != len(cohort)


# --- closed loop -----------------------------------------------------------------------


class Renamed:
    """Another model's predictions under another id (a twin of the oracle)."""

    def __init__(self, model: Any, model_id: str) -> None:
        self.model, self.model_id = model, model_id

    def fit(self, transitions: Transitions) -> None:
        self.model.fit(transitions)

    def predict(
        self, initial_states: np.ndarray, actions: np.ndarray, *, uncertainty: bool = True
    ) -> Prediction:
        result: Prediction = self.model.predict(initial_states, actions, uncertainty=uncertainty)
        return result

    def describe(self) -> dict[str, Any]:
        return {"kind": "renamed"}


@pytest.fixture(scope="module")
def loop_runs() -> list[Any]:
    simulator = get_simulator("CartPole-v1")
    seeds = list(range(6))
    models = [
        RandomModel(simulator),
        OracleModel(simulator),
        PersistenceModel(simulator),
        Renamed(OracleModel(simulator), "oracle-twin/v1"),
    ]
    out: list[Any] = []
    for model in models:
        out += run_closed_loop(simulator, model, ExhaustivePlanner(2), seeds=seeds, max_steps=40)
    return out


NAMES = {"random_model": "random-walk/v1", "oracle_model": "oracle/CartPole-v1"}


def test_normalized_score_and_paired_seed_bootstrap(loop_runs: list[Any]) -> None:
    draws, seed = 500, 3
    rows = {
        r["model_id"]: r for r in closed_loop_summary(loop_runs, **NAMES, draws=draws, seed=seed)
    }
    returns: dict[str, dict[int, float]] = {}
    for run in loop_runs:
        rewards = [t["reward"] for t in run.episode.transitions()]
        returns.setdefault(run.record["model_id"], {})[run.record["seed"]] = math.fsum(rewards)
    seeds = sorted(returns["oracle/CartPole-v1"])
    vector = {m: np.array([r[s] for s in seeds]) for m, r in returns.items()}
    floor, top = vector["random-walk/v1"], vector["oracle/CartPole-v1"]
    assert top.mean() != floor.mean()
    for model, values in vector.items():
        row = rows[model]
        assert row["seeds"] == len(seeds)
        assert row["mean_return"] == pytest.approx(values.mean(), rel=1e-12)
        expected = (values.mean() - floor.mean()) / (top.mean() - floor.mean())
        assert row["normalized_score"] == pytest.approx(expected, rel=1e-12)
        low, high = row["return_ci"]
        assert values.min() <= low <= values.mean() <= high <= values.max()
    # Paired by seed: each draw resamples the same seeds for every model, so the oracle's
    # twin (the same returns seed by seed) scores exactly 1 in every draw, and random 0.
    assert rows["oracle-twin/v1"]["normalized_ci"] == [1.0, 1.0]
    assert rows["oracle-twin/v1"]["return_ci"] == rows["oracle/CartPole-v1"]["return_ci"]
    assert rows["random-walk/v1"]["normalized_ci"] == [0.0, 0.0]
    # The interval is the 2.5/97.5 % percentiles of the seed-resampled means.
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(seeds), (draws, len(seeds)))
    for model, values in vector.items():
        means = values[index].mean(axis=1)
        expected_ci = np.quantile(means, [0.025, 0.975])
        np.testing.assert_allclose(rows[model]["return_ci"], expected_ci, rtol=1e-12)
        span = top[index].mean(axis=1) - floor[index].mean(axis=1)
        if model not in ("oracle-twin/v1", "random-walk/v1", "oracle/CartPole-v1"):
            with np.errstate(invalid="ignore", divide="ignore"):
                normalized = (means - floor[index].mean(axis=1)) / span
            finite = normalized[np.isfinite(normalized)]
            if len(finite) == draws:
                np.testing.assert_allclose(
                    rows[model]["normalized_ci"], np.quantile(finite, [0.025, 0.975])
                )


def test_prediction_gap_is_predicted_minus_realized_over_full_windows(
    loop_runs: list[Any],
) -> None:
    rows = {r["model_id"]: r for r in closed_loop_summary(loop_runs, **NAMES, draws=50)}
    for model in ("random-walk/v1", "persistence/v1"):
        gaps = []
        for run in loop_runs:
            if run.record["model_id"] != model:
                continue
            rewards = [t["reward"] for t in run.episode.transitions()]
            ended = run.episode.ended == "terminated"
            per = [
                predicted - sum(rewards[t : t + 2])
                for t, predicted in enumerate(run.record["predicted_returns"][: len(rewards)])
                if t + 2 <= len(rewards) or ended
            ]
            gaps.append(np.mean(per))
        assert rows[model]["prediction_gap"] == pytest.approx(np.mean(gaps), rel=1e-12)
        assert rows[model]["prediction_gap_undefined"] == 0
    assert rows["oracle/CartPole-v1"]["prediction_gap"] == 0.0


# --- leftovers of analysis v3 ----------------------------------------------------------


def test_worldmodel_table_shows_seeds_without_a_prediction_gap() -> None:
    from onrecord.cli.worldmodel import loop_table

    simulator = get_simulator("CartPole-v1")
    runs: list[Any] = []
    for model in (RandomModel(simulator), OracleModel(simulator)):
        # Planning 4 steps ahead with a cap of 2: no decision's horizon is ever realized.
        runs += run_closed_loop(
            simulator, model, ExhaustivePlanner(4), seeds=[0, 1, 2], max_steps=2
        )
    rows = closed_loop_summary(runs, **NAMES, draws=50)
    assert all(r["prediction_gap_undefined"] == 3 for r in rows)
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(loop_table(rows))
    text = console.export_text()
    assert text.count("3 of 3 seeds undefined: every horizon cut off by the step cap") == 2


def test_forecast_report_refuses_no_forecasts() -> None:
    with pytest.raises(InputError, match="at least one ForecastEvidence"):
        forecast_report([], {"pole_angle": 0.1})
    with pytest.raises(InputError, match="at least one ForecastEvidence"):
        forecast_report(iter(()), {"pole_angle": 0.1})


def onrecord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onrecord", *args], capture_output=True, text=True, check=False
    )


def test_replay_of_a_file_or_fifo_says_it_is_not_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "protocol.json"
    file.write_text("{}")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in ((file, "a file"), (fifo, "a FIFO"), (tmp_path / "nowhere", None)):
        result = onrecord("worldmodel", "analyze", "--replay", str(path))
        assert result.returncode == 3
        assert "manifest.json is missing" not in result.stderr
        said = f"{path} is {kind}" if kind else f"{path} does not exist"
        assert said in result.stderr
        if kind:
            assert "not a directory" in result.stderr


@pytest.fixture
def smoke_run(smoke_world_model_run: Path) -> Path:
    return smoke_world_model_run  # shared and read-only: each test changes a copy


def _reseal(root: Path, change: Any) -> None:
    """Change protocol.json and rewrite the manifest to match, as a careless tool would."""
    from onrecord.dynamics.experiment._store import read_json, write_json, write_manifest

    protocol = read_json(root / "protocol.json")
    change(protocol)
    write_json(root / "protocol.json", protocol)
    write_manifest(root)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda p: p["bootstrap"].update(draws=0), "bootstrap.draws is 0"),
        (lambda p: p["bootstrap"].update(seed=-1), "bootstrap.seed is -1"),
        (lambda p: p.update(random_model="nobody/v1"), "is damaged"),
    ],
)
def test_a_damaged_protocol_is_named_not_blamed_on_the_user(
    smoke_run: Path, tmp_path: Path, change: Any, said: str
) -> None:
    root = writable_copy(smoke_run, tmp_path / "copy")
    _reseal(root, change)
    result = onrecord("worldmodel", "analyze", "--replay", str(root))
    assert result.returncode == 3
    assert said in result.stderr
    assert "damaged" in result.stderr
    assert "closed_loop_summary" not in result.stderr.split("(")[0]
