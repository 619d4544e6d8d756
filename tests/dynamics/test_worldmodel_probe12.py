"""Counts in one world-model table row never contradict each other.

``aggregate_metrics(same_cohort=True)`` counted as ``censored`` every successful forecast
of the model, not the cohort's (``censored 29`` beside ``measured`` 11 of 11); the
experiment's headline gave ``reached_cap`` 2 of 3 ``seeds`` with no word of the failed
third; the closed-loop table read "1 failed runs". Runs saved under analyses v1 and v2
still replay exactly. Real CartPole references and a real smoke run.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from onrecord.dynamics import Simulator
from onrecord.dynamics._aggregate import observed_everywhere
from onrecord.dynamics.experiment._analyze import replay
from onrecord.dynamics.experiment._cohort import same_cohort_table, same_cohort_table_v1
from onrecord.dynamics.experiment._protocol import ANALYSIS, ANALYSIS_V2
from onrecord.dynamics.experiment._store import read_json
from onrecord.dynamics_metrics import aggregate_metrics
from tests.dynamics.test_same_cohort_analysis import as_written_by_v1, failing_on

HORIZONS = (1, 4, 8, 16, 32)


def _horizons_of(rows: list[dict[str, Any]]) -> list[int]:
    """The horizons of a table's rows: CartPole's four coordinates at each horizon."""
    return sorted(row["horizon"] for row in rows)


def _censored_at(forecasts: list[Any], horizon: int) -> int:
    return sum(f.observed_steps < horizon for f in forecasts)


def test_same_cohort_rows_count_the_cohort_and_the_left_out_apart(
    cartpole: Simulator, heldout: Any
) -> None:
    forecasts = failing_on(cartpole, heldout, {0, 1, 2})
    ok = [f for f in forecasts if f.status == "ok"]
    left_out = [f for f in ok if not observed_everywhere(f)]
    assert any(f.observed_steps < 32 for f in left_out)  # some references end early
    table = aggregate_metrics(forecasts, same_cohort=True).to_dict()
    cohort = len(ok) - len(left_out)
    assert table["cohort"] == cohort > 0
    assert table["left_out"] == len(left_out)
    assert table["forecasts"] == (
        table["model_errors"] + table["simulator_errors"] + table["cohort"] + table["left_out"]
    )
    assert _horizons_of(table["rows"]) == sorted(HORIZONS * 4)
    for row in table["rows"]:
        # Before: censored counted the left-out forecasts too (29 beside 11 of 11).
        assert row["measured"] == row["denominator"] == cohort
        assert row["censored"] == 0
        assert row["left_out_censored"] == _censored_at(left_out, row["horizon"])
    # Without same_cohort nothing changes: every successful forecast is the cohort.
    plain = aggregate_metrics(forecasts).to_dict()
    assert "left_out" not in plain
    assert _horizons_of(plain["rows"]) == sorted(HORIZONS * 4)
    for row in plain["rows"]:
        assert "left_out_censored" not in row
        assert row["censored"] == _censored_at(ok, row["horizon"])


def test_experiment_cohort_tables_keep_what_each_analysis_wrote(
    cartpole: Simulator, heldout: Any, forecasts: dict[str, Any]
) -> None:
    heldout_forecasts = {
        "action": forecasts["action"],
        "fails/v1": failing_on(cartpole, heldout, {0, 1, 2}),
    }
    # v2 and v3: every count of an entry is the shared cohort's; `excluded` says the rest.
    shared = same_cohort_table(heldout_forecasts)
    assert sorted(shared["models"]) == sorted(heldout_forecasts)
    for entry in shared["models"].values():
        assert "left_out" not in entry
        assert _horizons_of(entry["rows"]) == sorted(HORIZONS * 4)
        for row in entry["rows"]:
            assert "left_out_censored" not in row
            assert row["censored"] == 0
    # v1, kept for replay: each model's own cohort, censored over all it forecast.
    old = same_cohort_table_v1(heldout_forecasts)
    for model, items in heldout_forecasts.items():
        ok = [f for f in items if f.status == "ok"]
        assert "left_out" not in old[model]
        assert _horizons_of(old[model]["rows"]) == sorted(HORIZONS * 4)
        for row in old[model]["rows"]:
            assert "left_out_censored" not in row
            assert row["censored"] == _censored_at(ok, row["horizon"])
    assert any(row["censored"] > 0 for row in old["action"]["rows"])


@pytest.fixture
def run_dir(sometimes_nan_run: dict[str, Any]) -> Path:
    """A smoke run with a user model that fails some references and planning seeds (the
    session's run, tests/dynamics/conftest.py: read it only)."""
    return Path(sometimes_nan_run["dir"])


@pytest.mark.slow
def test_headline_accounts_for_every_seed_and_old_runs_replay(
    run_dir: Path, tmp_path: Path
) -> None:
    tables = read_json(run_dir / "tables.json")
    assert read_json(run_dir / "protocol.json")["analysis"] == ANALYSIS
    loop = {row["model_id"]: row for row in tables["closed_loop"]}
    headline = tables["headline"]["closed_loop"]
    mine = headline["sometimes-nan/v1"]
    # Before: reached_cap 2 of 3 seeds, mean_steps None, and nothing said why.
    assert mine["failed_runs"] == loop["sometimes-nan/v1"]["failed_runs"] > 0
    assert sorted(headline) == sorted(loop)
    for model, entry in headline.items():
        assert entry["failed_runs"] == loop[model]["failed_runs"]
        assert entry["reached_cap"] + entry["failed_runs"] <= entry["seeds"]
    assert replay(run_dir)["headline"] == tables["headline"]
    # Runs of v2 and v1 are recomputed as those analyses wrote them, and replay.
    for name, analysis in (("v2", ANALYSIS_V2), ("v1", None)):
        old = as_written_by_v1(run_dir, tmp_path / name, analysis)
        assert all("failed_runs" not in e for e in old["headline"]["closed_loop"].values())
        assert replay(tmp_path / name)["headline"] == old["headline"]
    assert old["heldout_same_cohort"]["bayes-linear/v1"]["rows"][-1]["censored"] > 0


@pytest.mark.slow
def test_closed_loop_table_counts_failed_runs_in_words(run_dir: Path) -> None:
    from onrecord.cli.worldmodel import loop_table

    rows = read_json(run_dir / "tables.json")["closed_loop"]
    failed = next(r for r in rows if r["model_id"] == "sometimes-nan/v1")["failed_runs"]
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(loop_table(rows))
    text = console.export_text()
    assert failed == 1  # this smoke run's planning raises on one of its three seeds
    assert "1 failed run " in text  # before: "1 failed runs"
    assert "1 failed runs" not in text
