"""World-model scoring: forecast_metrics, aggregate_metrics, forecast_case_result, size,
a planner's decision, model fitting, and the experiment's wall time.

Run: ``python -m benchmarks.bench_dynamics`` (add ``--experiment`` to also time the smoke
and full ``worldmodel run``). Metric figures are ratios against a plain NumPy computation
of the same numbers in this run (TARGETS.md): 100 CartPole forecasts of horizon 50,
4 coordinates, with standard deviations.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy.special import ndtr

from benchmarks._timing import best_time, best_times_interleaved, row
from onrecord import EvalCase
from onrecord.dynamics import (
    BayesianLinearModel,
    BootstrapEnsembleModel,
    RandomModel,
    Transitions,
    capture_forecasts,
    get_simulator,
)
from onrecord.dynamics._request_noise import request_rng
from onrecord.dynamics_metrics import (
    aggregate_metrics,
    forecast_case_result,
    forecast_metrics,
    forecast_report,
)
from onrecord.integrations.gymnasium import capture_episode

COUNT, HORIZON = 100, 50
Z = np.array([NormalDist().inv_cdf(0.5 + p / 2) for p in (0.5, 0.8, 0.9, 0.95)])
CAL = np.arange(1, 20) / 20


def _references() -> list[Any]:
    """CartPole episodes kept up by a controller so every horizon up to 50 is observed."""
    simulator = get_simulator("CartPole-v1")
    episodes = []
    for seed in range(COUNT):
        holder: dict[str, Any] = {}

        def factory(holder: dict[str, Any] = holder) -> Any:
            holder["env"] = simulator.make()
            return holder["env"]

        def interact(env: Any, observation: Any, info: Any) -> None:
            for _ in range(HORIZON):
                state = simulator.get_state(env)
                env.step(int(state[2] + 0.5 * state[3] + 0.01 * state[1] > 0))

        episodes.append(
            capture_episode(
                factory,
                interact,
                case=EvalCase("bench", case_id=f"bench-{seed}"),
                environment_id="CartPole-v1",
                observer_id="state",
                seed=seed,
                observe=simulator.observer(holder),
                max_steps=HORIZON,
            )
        )
    return episodes


def _numpy_per_forecast(arrays: list[tuple[np.ndarray, ...]]) -> list[tuple[np.ndarray, ...]]:
    out = []
    for mean, std, truth in arrays:
        error = mean - truth
        abs_error = np.abs(error)
        half = Z[:, None, None] * std
        z = error / std
        out.append(
            (
                error,
                abs_error,
                mean - half,
                mean + half,
                abs_error <= half,
                0.5 * math.log(2 * math.pi) + np.log(std) + 0.5 * z * z,
            )
        )
    return out


def _numpy_aggregate(
    arrays: list[tuple[np.ndarray, ...]], initials: list[np.ndarray]
) -> tuple[np.ndarray, ...]:
    # Starts from the same 100 forecasts' arrays as aggregate_metrics: stacking included.
    mean, std, truth = (np.stack(parts) for parts in zip(*arrays, strict=True))
    initial = np.stack(initials)
    error = mean - truth
    persisted = initial[:, None, :] - truth
    z = error / std
    abs_z = np.abs(z)
    cdf = ndtr(abs_z)
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    pit = np.where(z <= 0, cdf, 1 - cdf)
    bins = np.minimum((pit * 10).astype(np.int64), 9)
    return (
        error.mean(0),
        np.abs(error).mean(0),
        np.sqrt((error**2).mean(0)),
        np.sqrt((persisted**2).mean(0)),
        (abs_z[None] <= Z[:, None, None, None]).mean(1),
        2 * Z[:, None, None] * std.mean(0),
        (0.5 * math.log(2 * math.pi) + np.log(std) + 0.5 * z * z).mean(0),
        (std * (abs_z * (2 * cdf - 1) + 2 * pdf - 1 / math.sqrt(math.pi))).mean(0),
        (bins[..., None] == np.arange(10)).sum(0),
        np.abs((pit[None] <= CAL[:, None, None, None]).mean(1) - CAL[:, None, None]).mean(0),
    )


def metrics_figures() -> list[str]:
    simulator = get_simulator("CartPole-v1")
    episodes = _references()
    model = BayesianLinearModel(simulator)
    model.fit(Transitions.from_episodes(episodes))
    forecasts = capture_forecasts(
        episodes,
        model,
        model_id="bayes-linear/v1",
        contract=simulator.contract,
        coordinates=simulator.coordinates,
        horizons=list(range(1, HORIZON + 1)),
    )
    assert all(f.status == "ok" and f.observed_steps == HORIZON for f in forecasts)
    arrays = [(f.mean, f.std, f.truth) for f in forecasts]
    initials = [f.initial_state for f in forecasts]
    # Interleaved: timed one after the other, the two sides of a ratio read the machine
    # at different moments (this one's speed moves by 2× within minutes).
    ours, plain = best_times_interleaved(
        [lambda: [forecast_metrics(f) for f in forecasts], lambda: _numpy_per_forecast(arrays)],
        rounds=31,
    )
    ours_agg, plain_agg = best_times_interleaved(
        [lambda: aggregate_metrics(forecasts), lambda: _numpy_aggregate(arrays, initials)],
        rounds=31,
    )
    tolerances = {c.name: 0.05 for c in simulator.coordinates}
    cases = best_time(lambda: [forecast_case_result(f, tolerances) for f in forecasts], repeat=5)
    with tempfile.TemporaryDirectory() as tmp:
        path = forecast_report(forecasts, tolerances).save_json(Path(tmp) / "r.json")
        size = path.stat().st_size / 1e6
    return [
        row(
            "forecast_metrics ×100 (h=50, d=4, std) vs plain NumPy loop",
            f"{ours / plain:.2f}× ({ours * 1e3:.1f} ms)",
            "≤ 1.5×",
            ours / plain <= 1.5,
        ),
        row(
            "aggregate_metrics over 100 vs plain NumPy (stacked)",
            f"{ours_agg / plain_agg:.2f}× ({ours_agg * 1e3:.1f} ms)",
            "≤ 1.5×",
            ours_agg / plain_agg <= 1.5,
        ),
        row("forecast_case_result ×100 (20,000 checks)", f"{cases:.3f} s", "≤ 0.2 s", cases <= 0.2),
        row("report of those 100 forecasts", f"{size:.2f} MB", "≤ 5 MB", size <= 5),
    ]


def _plain_random_walk(model: RandomModel, states: Any, actions: Any) -> Any:
    """The random walk as one plainly seeded generator per row would draw it."""
    steps = np.stack(
        [
            request_rng(model.seed, states[n : n + 1], actions[n : n + 1]).standard_normal(
                (actions.shape[1], states.shape[1])
            )
            for n in range(len(states))
        ]
    )
    return states[:, None, :] + np.cumsum(steps, axis=1)


def _plain_ensemble(model: BootstrapEnsembleModel, states: Any, actions: Any) -> Any:
    """The ensemble's planning mean as one call per member would compute it."""
    members = [m.predict(states, actions, uncertainty=False).mean for m in model._models]
    return np.mean(members, axis=0)


def planning_figures() -> list[str]:
    """One exhaustive-planner decision (256 plans of 8 CartPole steps), the model's
    answer against the plain computation of the same numbers in this run."""
    simulator = get_simulator("CartPole-v1")
    transitions = Transitions.from_episodes(_references()[:20])
    walk, ensemble = RandomModel(simulator), BootstrapEnsembleModel(simulator)
    walk.fit(transitions)
    ensemble.fit(transitions)
    indices = np.array(list(itertools.product(range(2), repeat=8)))  # ExhaustivePlanner(8)'s
    actions = np.asarray(simulator.actions)[indices]
    states = np.repeat(transitions.states[3:4], len(indices), axis=0)
    lines = []
    for name, model, plain in (
        ("random walk vs one generator a row", walk, _plain_random_walk),
        ("ensemble vs one call a member", ensemble, _plain_ensemble),
    ):
        ours, base = best_times_interleaved(
            [
                lambda model=model: model.predict(states, actions, uncertainty=False),
                lambda model=model, plain=plain: plain(model, states, actions),
            ],
            rounds=15,
        )
        lines.append(
            row(
                f"planning 256 plans × 8: {name}",
                f"{ours / base:.2f}× ({ours * 1e3:.2f} ms)",
                "measured",
                True,
            )
        )
    return lines


def _sklearn_fit(inputs: Any, deltas: Any) -> None:
    """What ``BayesianLinearModel.fit`` did before 2026-12-03: one scikit-learn
    ``BayesianRidge`` a coordinate."""
    from sklearn.linear_model import BayesianRidge

    for column in range(deltas.shape[1]):
        BayesianRidge().fit(inputs, deltas[:, column])


def fitting_figures() -> list[str]:
    """Fitting the Bayesian linear model on 100 CartPole episodes' transitions against
    scikit-learn's ``BayesianRidge`` on the same features, and what importing
    scikit-learn costs a fresh process (every ``worldmodel run`` paid it)."""
    simulator = get_simulator("CartPole-v1")
    transitions = Transitions.from_episodes(_references())
    model = BayesianLinearModel(simulator)
    inputs = model.features(transitions.states, simulator.action_features(transitions.actions))
    deltas = transitions.next_states - transitions.states
    ours, theirs = best_times_interleaved(
        [lambda: model.fit(transitions), lambda: _sklearn_fit(inputs, deltas)], rounds=21
    )
    code = "import time; t = time.perf_counter(); import sklearn.linear_model; "
    code += "print(time.perf_counter() - t)"
    imports = min(
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout)
        for _ in range(3)
    )
    return [
        row(
            f"Bayesian linear fit ({len(transitions)} transitions) / sklearn",
            f"{ours / theirs:.2f}× ({ours * 1e3:.1f} ms)",
            "measured",
            True,
        ),
        row("import sklearn.linear_model (no longer needed)", f"{imports:.2f} s", "info", True),
    ]


def experiment_figures() -> list[str]:
    lines = []
    for label, flags, limit in (("smoke", ["--smoke"], 30.0), ("full", [], 180.0)):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; from onrecord.cli.main import main; sys.exit(main(sys.argv[1:]))",
                    "worldmodel",
                    "run",
                    *flags,
                    "--output-dir",
                    f"{tmp}/run",
                ],
                check=True,
                capture_output=True,
            )
            took = time.perf_counter() - start
        lines.append(
            row(
                f"onrecord worldmodel run ({label})",
                f"{took:.1f} s",
                f"≤ {limit:.0f} s",
                took <= limit,
            )
        )
    return lines


def main() -> None:
    for line in [*metrics_figures(), *planning_figures(), *fitting_figures()]:
        print(line)
    if "--experiment" in sys.argv:
        for line in experiment_figures():
            print(line)


if __name__ == "__main__":
    main()
