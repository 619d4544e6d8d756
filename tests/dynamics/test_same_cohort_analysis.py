"""The experiment's ``heldout_same_cohort`` table scores every model on one set of
references (analysis v2), and runs written before (analysis v1) still replay.

Real CartPole references; a model that fails (NaN) on some of them, as a ``--model``
user model may.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.dynamics import Simulator, capture_forecasts
from onrecord.dynamics._aggregate import observed_everywhere
from onrecord.dynamics.experiment._analyze import load_evidence, replay
from onrecord.dynamics.experiment._cohort import same_cohort_table, same_cohort_table_v1
from onrecord.dynamics.experiment._protocol import ANALYSIS, ANALYSIS_V2
from onrecord.dynamics.experiment._store import read_json, write_json, write_manifest
from onrecord.dynamics.experiment._tables import compute_tables
from onrecord.errors import ConsistencyError, SchemaError
from tests.conftest import writable_copy

HORIZONS = [1, 4, 8, 16, 32]


def failing_on(
    cartpole: Simulator, heldout: Any, failed: set[int], model_id: str = "fails/v1"
) -> list[Any]:
    """Persistence forecasts of the held-out references, NaN (a model error) on the
    references numbered in ``failed``."""
    episodes, plans = heldout
    starts = {tuple(e.initial["state"]["state"]): n for n, e in enumerate(episodes)}

    def predict(states: np.ndarray, actions: np.ndarray) -> dict[str, Any]:
        mean = np.repeat(states[:, None], actions.shape[1], axis=1)
        for row, state in enumerate(states):
            if starts[tuple(state.tolist())] in failed:
                mean[row] = np.nan
        return {"mean": mean}

    return capture_forecasts(
        episodes,
        predict,
        model_id=model_id,
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=HORIZONS,
        planned_actions=plans,
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failed=st.sets(st.integers(0, 29), max_size=12))
def test_every_model_is_scored_on_the_same_references(
    cartpole: Simulator, heldout: Any, forecasts: dict[str, Any], failed: set[int]
) -> None:
    heldout_forecasts = {
        "action": forecasts["action"],
        "fails/v1": failing_on(cartpole, heldout, failed),
    }
    table = same_cohort_table(heldout_forecasts)
    observed = {n for n, f in enumerate(forecasts["action"]) if observed_everywhere(f)}
    assert table["references"] == 30
    assert table["cohort"] == len(observed - failed)
    assert table["excluded"]["not_observed_at_every_horizon"] == 30 - len(observed)
    assert table["excluded"]["failed_by_model"] == {
        "action": 0,
        "fails/v1": len(observed & failed),
    }
    for model in ("action", "fails/v1"):
        entry = table["models"][model]
        if not observed - failed:
            assert entry is None
            continue
        assert entry["scored"] == len(observed - failed)
        assert {row["denominator"] for row in entry["rows"]} == {len(observed - failed)}
    # Before (analysis v1): each model its own cohort, the failing model on fewer.
    old = same_cohort_table_v1(heldout_forecasts)
    assert old["action"]["cohort"] == len(observed)
    assert old["fails/v1"]["cohort"] == len(observed - failed)


def test_a_model_that_failed_everything_is_not_compared(
    cartpole: Simulator, heldout: Any, forecasts: dict[str, Any]
) -> None:
    # Its fit raised, say: every forecast a model error. It would leave no cohort at all.
    table = same_cohort_table(
        {"action": forecasts["action"], "fails/v1": failing_on(cartpole, heldout, set(range(30)))}
    )
    assert table["not_compared"] == ["fails/v1"]
    assert table["cohort"] == table["models"]["action"]["scored"] > 0
    broken = table["models"]["fails/v1"]
    assert broken["scored"] == 0
    assert broken["model_errors"] == table["cohort"]


@pytest.fixture
def run_dir(sometimes_nan_run: dict[str, Any]) -> Path:
    """A smoke run with a user model that fails some references (``SOMETIMES_NAN``; the
    session's run, tests/dynamics/conftest.py: read it only)."""
    return Path(sometimes_nan_run["dir"])


def as_written_by_v1(source: Path, target: Path, analysis: str | None = None) -> dict[str, Any]:
    """``source`` rewritten as onrecord wrote runs before analysis v2 (a protocol without
    ``analysis``), or under ``analysis``: tables computed that way, a manifest sealing
    both."""
    writable_copy(source, target)
    protocol = read_json(target / "protocol.json")
    del protocol["analysis"]
    if analysis is not None:
        protocol["analysis"] = analysis
    tables = compute_tables(protocol, load_evidence(target, protocol))
    write_json(target / "protocol.json", protocol)
    write_json(target / "tables.json", tables)
    write_manifest(target)
    return tables


@pytest.mark.slow
def test_a_new_run_shares_one_cohort_and_replays(run_dir: Path) -> None:
    assert read_json(run_dir / "protocol.json")["analysis"] == ANALYSIS
    table = read_json(run_dir / "tables.json")["heldout_same_cohort"]
    failed = table["excluded"]["failed_by_model"]
    assert failed["sometimes-nan/v1"] > 0
    assert {m: n for m, n in failed.items() if m != "sometimes-nan/v1"} == dict.fromkeys(
        failed.keys() - {"sometimes-nan/v1"}, 0
    )
    assert {entry["scored"] for entry in table["models"].values()} == {table["cohort"]}
    loop = {row["model_id"]: row for row in read_json(run_dir / "tables.json")["closed_loop"]}
    mine = loop["sometimes-nan/v1"]
    assert mine["failed_runs"] > 0
    assert mine["mean_steps"] is None
    assert mine["steps"].count(None) == mine["failed_runs"]
    assert replay(run_dir)["heldout_same_cohort"] == table


@pytest.mark.slow
def test_a_run_written_before_analysis_v2_still_replays(run_dir: Path, tmp_path: Path) -> None:
    old_dir = tmp_path / "old"
    old = as_written_by_v1(run_dir, old_dir)
    # The v1 tables differ where the fixes apply: the failing model's own cohort, and
    # its failed runs' steps counted.
    cohorts = {m: t["cohort"] for m, t in old["heldout_same_cohort"].items()}
    assert cohorts["sometimes-nan/v1"] < cohorts["bayes-linear/v1"]
    mine = next(r for r in old["closed_loop"] if r["model_id"] == "sometimes-nan/v1")
    assert isinstance(mine["mean_steps"], float)
    assert None not in mine["steps"]
    assert replay(old_dir)["heldout_same_cohort"] == old["heldout_same_cohort"]


@pytest.mark.slow
def test_a_model_with_failed_runs_has_no_gap_and_v2_runs_replay(
    run_dir: Path, tmp_path: Path
) -> None:
    loop = {row["model_id"]: row for row in read_json(run_dir / "tables.json")["closed_loop"]}
    # Before (v2): the gap of the surviving seeds, beside a withheld return and score.
    assert loop["sometimes-nan/v1"]["prediction_gap"] is None
    assert loop["sometimes-nan/v1"]["prediction_gap_undefined"] is None
    assert loop["bayes-linear/v1"]["prediction_gap_undefined"] == 0
    old_dir = tmp_path / "v2"
    old = as_written_by_v1(run_dir, old_dir, ANALYSIS_V2)
    mine = next(r for r in old["closed_loop"] if r["model_id"] == "sometimes-nan/v1")
    assert isinstance(mine["prediction_gap"], float)
    assert "prediction_gap_undefined" not in mine
    assert replay(old_dir)["closed_loop"] == old["closed_loop"]
    # v3 tables under a v2 protocol are recomputed the v2 way, and differ.
    protocol = read_json(old_dir / "protocol.json")
    shutil.copyfile(run_dir / "tables.json", old_dir / "tables.json")
    write_manifest(old_dir)
    assert protocol["analysis"] == ANALYSIS_V2
    with pytest.raises(ConsistencyError, match=r"tables\.json differs"):
        replay(old_dir)


@pytest.mark.slow
def test_the_analysis_version_is_honoured(run_dir: Path, tmp_path: Path) -> None:
    # A v1 protocol beside v2 tables: recomputed the v1 way, they differ.
    mixed = tmp_path / "mixed"
    writable_copy(run_dir, mixed)
    protocol = read_json(mixed / "protocol.json")
    del protocol["analysis"]
    write_json(mixed / "protocol.json", protocol)
    write_manifest(mixed)
    with pytest.raises(ConsistencyError, match=r"tables\.json differs"):
        replay(mixed)
    protocol["analysis"] = "onrecord.worldmodel-analysis/v9"
    write_json(mixed / "protocol.json", protocol)
    write_manifest(mixed)
    with pytest.raises(SchemaError, match=r"analysis .*v9.*does not know"):
        replay(mixed)
