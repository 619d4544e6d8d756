"""Walkthrough 7: a researcher's own NumPy models through ``onrecord worldmodel``.

One smoke run, through the real command line and real CartPole, holds three models of
one's own: a least-squares model that ignores the action (good next-step angle, useless
to a planner), the same model raising on initial pole angles beyond 0.03 rad (a bug on
part of the input space) and one whose ``predict`` returns a bare array.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import onrecord

MODELS = """
import numpy as np
from onrecord.dynamics import Prediction


class Delta:
    model_id = "wt7-delta/v1"
    use_actions = True

    def __init__(self, simulator):
        self.simulator, self.weights = simulator, None

    def features(self, states, actions):
        parts = [states, np.ones((len(states), 1))]
        if self.use_actions:
            parts.append(self.simulator.action_features(actions).reshape(len(states), -1))
        return np.hstack(parts)

    def fit(self, transitions):
        inputs = self.features(transitions.states, transitions.actions)
        change = transitions.next_states - transitions.states
        self.weights = np.linalg.lstsq(inputs, change, rcond=None)[0]

    def rollout(self, initial_states, actions):
        state, states = initial_states, []
        for step in range(actions.shape[1]):
            state = state + self.features(state, actions[:, step]) @ self.weights
            states.append(state)
        return np.stack(states, axis=1)

    def predict(self, initial_states, actions, *, uncertainty=True):
        return Prediction(self.rollout(initial_states, actions))

    def describe(self):
        return {"fitted": self.weights is not None}


class Blind(Delta):
    model_id = "wt7-blind/v1"
    use_actions = False


class Angles(Delta):
    model_id = "wt7-angles/v1"

    def predict(self, initial_states, actions, *, uncertainty=True):
        if np.any(np.abs(initial_states[:, 2]) > 0.03):
            raise ValueError("pole angle out of training range")
        return super().predict(initial_states, actions)


class BareArray(Delta):
    model_id = "wt7-array/v1"

    def predict(self, initial_states, actions, *, uncertainty=True):
        return self.rollout(initial_states, actions)


def only_cartpole(cls):
    return lambda simulator: cls(simulator) if simulator.env_id == "CartPole-v1" else None


blind, angles, bare_array = only_cartpole(Blind), only_cartpole(Angles), only_cartpole(BareArray)
"""

BLIND, ANGLES, ARRAY = "wt7-blind/v1", "wt7-angles/v1", "wt7-array/v1"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("walkthrough7")
    (base / "wt7_models.py").write_text(MODELS)
    out = base / "run"
    specs = ["wt7_models:blind", "wt7_models:angles", "wt7_models:bare_array"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(base))
        done = onrecord(
            "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", out,
            *[word for spec in specs for word in ("--model", spec)],
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "world-model steps" not in done.stderr  # --no-progress: no progress lines
    (base / "wt7_models.py").unlink()  # the replay and the viewers import nothing
    return {
        "dir": out,
        "stdout": done.stdout,
        "tables": json.loads((out / "tables.json").read_text()),
    }


def _heldout(root: Path, model_id: str) -> list[dict[str, Any]]:
    path = root / "forecasts" / "heldout" / f"{model_id.replace('/', '_')}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_a_model_raising_on_some_references_fails_only_those(run: dict[str, Any]) -> None:
    # Before: one raising reference failed the whole batch: "0/0 (40 of 40 failed)".
    records = _heldout(run["dir"], ANGLES)
    large = [abs(r["request"]["initial_state"][2]) > 0.03 for r in records]
    assert 0 < sum(large) < len(records)
    assert [r["status"] for r in records] == ["model_error" if x else "ok" for x in large]
    metrics = run["tables"]["heldout_metrics"][ANGLES]
    assert metrics["model_errors"] == sum(large)
    h1 = [r for r in metrics["rows"] if r["coordinate"] == "cart_velocity" and r["horizon"] == 1]
    assert h1[0]["measured"] == len(records) - sum(large)
    ok, failed = len(records) - sum(large), sum(large)
    table = rf"│ {ANGLES} +│ cart_velocity │ 1 │ {ok}/{ok} \({failed} of {len(records)} failed\)"
    assert re.search(table, run["stdout"])


@pytest.mark.slow
def test_the_tables_match_a_recomputation_from_the_saved_evidence(run: dict[str, Any]) -> None:
    for model_id in (BLIND, ANGLES):
        records = [r for r in _heldout(run["dir"], model_id) if r["status"] == "ok"]
        errors = [
            abs(r["response"]["states"][0][1] - r["reference"]["states"][0][1]) for r in records
        ]
        rows = run["tables"]["heldout_metrics"][model_id]["rows"]
        (h1,) = [r for r in rows if r["coordinate"] == "cart_velocity" and r["horizon"] == 1]
        assert h1["mae"] == pytest.approx(sum(errors) / len(errors), rel=1e-9)


@pytest.mark.slow
def test_the_good_next_step_useless_planner_model_is_exposed(run: dict[str, Any]) -> None:
    tables = run["tables"]
    assert tables["decisions"][BLIND]["next-step-angle"]["decision"] == "accept"
    loop = {row["model_id"]: row for row in tables["closed_loop"]}
    assert loop[BLIND]["reached_cap"] == 0
    assert loop[BLIND]["failed_runs"] == 0
    effect = tables["headline"]["cart_velocity_h1_action_effect_error"][BLIND]
    assert (
        effect > 100 * tables["headline"]["cart_velocity_h1_action_effect_error"]["bayes-linear/v1"]
    )


@pytest.mark.slow
def test_a_bare_array_answer_is_named_in_every_record(run: dict[str, Any]) -> None:
    records = _heldout(run["dir"], ARRAY)
    assert {r["status"] for r in records} == {"model_error"}
    assert "returned ndarray, not a Prediction" in records[0]["error"]["message"]
    shown = onrecord("show", run["dir"] / "closed_loop" / "wt7-array_v1.jsonl")
    assert shown.returncode == 0, shown.stderr
    assert "predict returned ndarray" in shown.stdout
    assert "builtin_function_or_method" not in shown.stdout


@pytest.mark.slow
def test_replay_verify_and_show_pass_without_the_module(run: dict[str, Any]) -> None:
    replay = onrecord("worldmodel", "analyze", "--replay", run["dir"])
    assert replay.returncode == 0, replay.stderr
    assert "every table and report recomputed from saved evidence matches" in replay.stdout
    verify = onrecord("verify", run["dir"])
    assert verify.returncode == 0, verify.stdout + verify.stderr
    shown = onrecord("show", run["dir"] / "forecasts" / "heldout" / "wt7-angles_v1.jsonl")
    assert shown.returncode == 0, shown.stderr
    assert "model_error" in shown.stdout
    assert " ok " in shown.stdout


@pytest.mark.slow
def test_the_plots_say_which_models_were_scored_on_fewer_references(
    run: dict[str, Any],
) -> None:
    # Before: the error-vs-horizon plot annotated every horizon with the first model's
    # "n=40/40" and drew the half-failing model's curve beside it with no word of it.
    from onrecord.dynamics.experiment._plots import _error_vs_horizon, _pyplot

    plt = _pyplot()
    figure = _error_vs_horizon(plt, run["tables"])
    try:
        labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    finally:
        plt.close(figure)
    failed = run["tables"]["heldout_metrics"][ANGLES]["model_errors"]
    assert f"{ANGLES} ({failed} of 40 failed)" in labels
    assert f"{ARRAY} (40 of 40 failed)" in labels
    assert BLIND in labels  # a model without failures keeps its plain name
