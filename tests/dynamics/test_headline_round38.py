"""The headline's action-effect errors say how many pairs each was measured on (analysis
v4: ``cart_velocity_h1_action_effect_pairs``), so a user model's error over a few of the
pairs does not read as its error on all of them; runs written before v4 replay with the
headline they saved.

Reuses the smoke run of ``test_effect_pairs_round38`` (a ``--model`` user model that
returns NaN from some start states, so some of its pairs are skipped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord.dynamics.experiment._analyze import replay
from onrecord.dynamics.experiment._protocol import ANALYSIS_V2, ANALYSIS_V3
from onrecord.dynamics.experiment._store import read_json
from tests.dynamics.test_effect_pairs_round38 import MINE, run
from tests.dynamics.test_same_cohort_analysis import as_written_by_v1

__all__ = ["run"]  # the imported fixture, which pytest finds by its name here

KEY = "cart_velocity_h1_action_effect_pairs"


def _h1(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in rows if r["coordinate"] == "cart_velocity" and r["horizon"] == 1)


@pytest.mark.slow
def test_the_headline_counts_the_pairs_each_effect_error_rests_on(run: dict[str, Any]) -> None:
    tables = run["tables"]
    protocol = read_json(run["dir"] / "protocol.json")
    counts = tables["headline"][KEY]
    # Every model with an effect error in the headline, and only those ("ratio" is not one).
    errors = tables["headline"]["cart_velocity_h1_action_effect_error"]
    assert set(counts) == set(errors) - {"ratio"}
    mine = counts[MINE]
    row = _h1(tables["interventions"][MINE])
    assert mine == {"pairs": row["pairs"], "skipped_pairs": row["skipped_pairs"]}
    assert mine["skipped_pairs"] > 0
    assert mine["pairs"] + mine["skipped_pairs"] == protocol["pairs"]["interventions"]
    for model in ("bayes-linear/v1", "bayes-linear-blind/v1"):
        assert counts[model]["skipped_pairs"] == 0
    assert replay(run["dir"])["headline"] == tables["headline"]


@pytest.mark.slow
@pytest.mark.parametrize("analysis", [ANALYSIS_V3, ANALYSIS_V2, None])
def test_runs_written_before_v4_keep_their_headline(
    run: dict[str, Any], tmp_path: Path, analysis: str | None
) -> None:
    old_dir = tmp_path / "old"
    old = as_written_by_v1(run["dir"], old_dir, analysis)
    assert KEY not in old["headline"]
    assert replay(old_dir)["headline"] == old["headline"]
