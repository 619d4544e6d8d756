"""Walkthrough 13: the ``worldmodel`` forecast table tells a reference's failure from a
model's, and the v3 same-cohort table's per-model count is not also called ``cohort``.

Real CartPole references: one whose own ``interact`` raised part-way (a simulator error,
the model never called), the others healthy.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from onrecord import EvalCase
from onrecord.dynamics import Simulator, capture_forecasts
from onrecord.dynamics._references import capture_on, capture_plan, random_plan
from onrecord.dynamics.experiment._cohort import same_cohort_table
from onrecord.dynamics_metrics import aggregate_metrics

HORIZONS = [1, 8]


@pytest.fixture(scope="module")
def references(cartpole: Simulator) -> tuple[list[Any], list[list[Any]]]:
    """Three healthy references, then one whose interact raised after two steps."""
    plans = [random_plan(cartpole, 8, np.random.default_rng(s)) for s in range(4)]
    episodes = [
        capture_plan(cartpole, plan, case_id=f"ok-{s}", seed=s) for s, plan in enumerate(plans[:3])
    ]

    def refused(env: Any, observation: Any, info: Any) -> str:
        env.step(plans[3][0])
        env.step(plans[3][1])
        raise RuntimeError("the rig lost power")

    case = EvalCase({"plan": plans[3]}, case_id="broken", completion="either")
    episodes.append(capture_on(cartpole, refused, case=case, seed=3, max_steps=8))
    return episodes, plans


def forecasts_of(
    cartpole: Simulator, references: tuple[list[Any], list[list[Any]]], model_id: str, fail: bool
) -> list[Any]:
    """Persistence forecasts; every one a model error (NaN) when ``fail``."""
    episodes, plans = references

    def predict(states: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        mean = np.repeat(states[:, None], actions.shape[1], axis=1)
        return {"mean": mean * np.nan if fail else mean}

    return capture_forecasts(
        episodes,
        predict,
        model_id=model_id,
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=HORIZONS,
        planned_actions=plans,
    )


def rendered(heldout: dict[str, Any]) -> str:
    from onrecord.cli.worldmodel import forecast_table

    console = Console(width=250, record=True, file=io.StringIO())
    console.print(forecast_table(heldout))
    return console.export_text()


def test_a_shared_reference_failure_is_not_read_as_the_models_failure(
    cartpole: Simulator, references: tuple[list[Any], list[list[Any]]]
) -> None:
    good = forecasts_of(cartpole, references, "good/v1", fail=False)
    broken = forecasts_of(cartpole, references, "broken/v1", fail=True)
    assert [f.status for f in good] == ["ok", "ok", "ok", "simulator_error"]
    text = rendered(
        {
            "good/v1": aggregate_metrics(good).to_dict(),
            "broken/v1": aggregate_metrics(broken).to_dict(),
        }
    )
    good_rows = [line for line in text.splitlines() if "good/v1" in line]
    broken_rows = [line for line in text.splitlines() if "broken/v1" in line]
    # Before: "3/3 (1 of 4 failed)" for the model that failed nothing.
    assert good_rows
    assert all("3/3 (1 of 4 references failed)" in r for r in good_rows)
    assert broken_rows
    assert all("0/0 (3 of 4 failed; 1 of 4 references failed)" in r for r in broken_rows)


def test_v3_same_cohort_entries_count_scored_not_a_second_cohort(
    cartpole: Simulator, references: tuple[list[Any], list[list[Any]]]
) -> None:
    heldout = {
        "good/v1": forecasts_of(cartpole, references, "good/v1", fail=False),
        "fit-raised/v1": forecasts_of(cartpole, references, "fit-raised/v1", fail=True),
    }
    table = same_cohort_table(heldout)
    assert table["not_compared"] == ["fit-raised/v1"]
    assert table["cohort"] == 3
    good, broken = table["models"]["good/v1"], table["models"]["fit-raised/v1"]
    # Before: the failed model's entry said "cohort": 0 beside the table's "cohort": 3.
    assert "cohort" not in good
    assert "cohort" not in broken
    assert good["scored"] == table["cohort"]
    assert broken["scored"] == 0
    assert broken["model_errors"] == broken["forecasts"] == table["cohort"]
    # A v2 run replays as v2 wrote it: the entry's count is still called "cohort".
    from onrecord.dynamics.experiment._cohort import same_cohort_table_v2

    old = same_cohort_table_v2(heldout)
    assert old["models"]["fit-raised/v1"]["cohort"] == 0
    assert "scored" not in old["models"]["good/v1"]
    renamed = {("scored" if k == "cohort" else k): v for k, v in old["models"]["good/v1"].items()}
    assert renamed == good
    assert list(renamed) == list(good)
