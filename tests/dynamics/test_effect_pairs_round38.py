"""The experiment's effect tables count the pairs a failed forecast left out (analysis
v4: ``skipped_pairs`` in every intervention and persistence row, and in the printed
table), while runs written before (v3, v2, v1) keep verifying and replaying.

A real smoke run through the ``onrecord`` command, beside a ``--model`` user model that
returns NaN from some start states (``SOMETIMES_NAN``), so its forecasts of some pairs
are ``model_error``s: the session's run of tests/dynamics/conftest.py, shared with the
other modules that read that run.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from onrecord.dynamics.experiment._analyze import replay
from onrecord.dynamics.experiment._protocol import ANALYSIS, ANALYSIS_V2, ANALYSIS_V3
from onrecord.dynamics.experiment._store import read_json, write_manifest
from onrecord.errors import ConsistencyError
from tests.cli_process import onrecord
from tests.conftest import writable_copy
from tests.dynamics.test_same_cohort_analysis import as_written_by_v1

MINE = "sometimes-nan/v1"
# The keys of an effect row as onrecord wrote them before analysis v4 (HEAD before this
# change): an earlier run's tables.json holds exactly these.
ROW_KEYS_BEFORE_V4 = {
    "model_id",
    "coordinate",
    "unit",
    "horizon",
    "pairs",
    "real_effect",
    "predicted_effect",
    "effect_error",
}


@pytest.fixture
def run(sometimes_nan_run: dict[str, Any]) -> dict[str, Any]:
    """The session's smoke run beside ``SOMETIMES_NAN`` (tests/dynamics/conftest.py):
    ``dir``, ``stdout`` and ``tables``. Its directory is read only; a test copies it to
    change it."""
    return sometimes_nan_run


def _skipped(rows: list[dict[str, Any]]) -> int:
    counts = {row["skipped_pairs"] for row in rows}
    assert len(counts) == 1, counts  # one count per model, on every row
    return counts.pop()


@pytest.mark.slow
def test_a_new_run_counts_skipped_pairs_and_replays(run: dict[str, Any]) -> None:
    root, tables = run["dir"], run["tables"]
    protocol = read_json(root / "protocol.json")
    assert protocol["analysis"] == ANALYSIS
    for kind in ("interventions", "persistence"):
        per_model = tables[kind]
        for model, rows in per_model.items():
            if model != MINE:
                assert _skipped(rows) == 0, (kind, model)
    mine = tables["interventions"][MINE]
    skipped = _skipped(mine)
    assert skipped > 0  # its NaN start states fail some pairs
    h1 = next(r for r in mine if r["coordinate"] == "cart_velocity" and r["horizon"] == 1)
    assert h1["pairs"] + skipped == protocol["pairs"]["interventions"]
    assert replay(root)["interventions"] == tables["interventions"]
    replayed = onrecord("worldmodel", "analyze", "--replay", root)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    verified = onrecord("verify", root)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_the_printed_effect_table_says_how_many_pairs_were_skipped(run: dict[str, Any]) -> None:
    skipped = _skipped(run["tables"]["interventions"][MINE])
    effects = run["stdout"].split("matched interventions")[1].split("acceptance policies")[0]
    [line] = [line for line in effects.splitlines() if MINE in line]
    assert f"({skipped} skipped: a forecast failed)" in line
    # A model that forecast every pair shows its count alone.
    [linear] = [line for line in effects.splitlines() if "bayes-linear/v1" in line]
    assert "skipped" not in linear


@pytest.mark.slow
@pytest.mark.parametrize("analysis", [ANALYSIS_V3, ANALYSIS_V2, None])
def test_runs_written_before_v4_keep_their_rows_and_replay(
    run: dict[str, Any], tmp_path: Path, analysis: str | None
) -> None:
    # The run as an earlier version wrote it: its protocol names the earlier analysis,
    # and its tables are computed by the code path kept for replaying such runs (the
    # keys are checked against the rows onrecord wrote before v4).
    old_dir = tmp_path / "old"
    old = as_written_by_v1(run["dir"], old_dir, analysis)
    for kind in ("interventions", "persistence"):
        for rows in old[kind].values():
            assert all(set(row) == ROW_KEYS_BEFORE_V4 for row in rows)
    assert replay(old_dir)["interventions"] == old["interventions"]
    replayed = onrecord("worldmodel", "analyze", "--replay", old_dir)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    # Printed without a count: the saved rows have none.
    assert "skipped:" not in replayed.stdout.split("matched interventions")[1]
    verified = onrecord("verify", old_dir)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_v4_tables_under_a_v3_protocol_differ(run: dict[str, Any], tmp_path: Path) -> None:
    # The count is part of what replay checks: tables with it beside a protocol that
    # names v3 (or a v4 table whose count was edited) are refused.
    mixed = tmp_path / "mixed"
    as_written_by_v1(run["dir"], mixed, ANALYSIS_V3)
    shutil.copyfile(run["dir"] / "tables.json", mixed / "tables.json")
    write_manifest(mixed)
    with pytest.raises(ConsistencyError, match=r"tables\.json differs"):
        replay(mixed)
    edited = tmp_path / "edited"
    writable_copy(run["dir"], edited)
    tables = json.loads((edited / "tables.json").read_text())
    for row in tables["interventions"][MINE]:
        row["skipped_pairs"] = 0
    from onrecord.dynamics.experiment._store import write_json

    write_json(edited / "tables.json", tables)
    write_manifest(edited)
    with pytest.raises(ConsistencyError, match=r"tables\.json differs"):
        replay(edited)


def test_intervention_table_of_saved_rows_shows_the_count() -> None:
    from onrecord.cli.worldmodel import intervention_table

    row = {
        "coordinate": "cart_velocity",
        "horizon": 1,
        "pairs": 3,
        "real_effect": 0.39,
        "predicted_effect": 0.39,
        "effect_error": 0.0002,
    }
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(intervention_table({"new/v1": [{**row, "skipped_pairs": 17}], "old/v1": [row]}))
    text = console.export_text()
    assert "3 (17 skipped: a forecast failed)" in text
    [old] = [line for line in text.splitlines() if "old/v1" in line]
    assert "skipped" not in old


def test_effect_table_rows_carry_the_skipped_count() -> None:
    from onrecord.dynamics import (
        OracleModel,
        capture_forecast,
        capture_pairs,
        effect_table,
        get_simulator,
        request_predictor,
    )

    cartpole = get_simulator("CartPole-v1")
    starts = [[0.0, 0.0, 0.01 * n, 0.0] for n in range(3)]
    pairs = capture_pairs(cartpole, starts, kind="action", length=3, seed=1)
    exact = request_predictor(OracleModel(cartpole))

    def broken(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model crashed")

    spec: dict[str, Any] = {
        "model_id": "flaky/v1",
        "contract": cartpole.contract,
        "coordinates": cartpole.coordinates,
        "horizons": [1, 2],
    }
    base = [capture_forecast(p.base, exact, planned_actions=p.base_plan, **spec) for p in pairs]
    variant = [
        capture_forecast(
            p.variant, broken if n == 1 else exact, planned_actions=p.variant_plan, **spec
        )
        for n, p in enumerate(pairs)
    ]
    rows = effect_table(base, variant).rows()
    # Before: no count in the rows, so the experiment's tables could not show it.
    assert len(rows) == 8  # 4 coordinates x 2 horizons
    assert {row["skipped_pairs"] for row in rows} == {1}
    assert {row["pairs"] for row in rows} == {2}
