"""A malformed blob shape is named as such; a short row of a split table is padded as
rich pads it; the ledger decision table keeps every name and decision whole at 80
columns."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from rich.console import Console
from rich.table import Table

from onrecord import EvalCase
from onrecord._canonical import content_digest
from onrecord._tables import SplitTable
from onrecord.cli.ledger import decision_table
from onrecord.domains.ledger import LedgerResult, run_ledger_experiment
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError, SchemaError
from onrecord.integrations.gymnasium import capture_episode
from tests.core.envs import GenericEnv

IMAGE = spaces.Box(0, 255, (24, 24, 3), np.uint8)  # 1,728 bytes per frame: a blob


@pytest.fixture(scope="module")
def pixels() -> EpisodeEvidence:
    frame = np.zeros(IMAGE.shape, np.uint8)
    env = GenericEnv(
        lambda e, a: (frame, 1.0, e.steps_taken == 3, False, {}), observation_space=IMAGE
    )

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(3):
            env.step(1)

    return capture_episode(
        lambda: env,
        interact,
        case=EvalCase("pixels"),
        environment_id="pixels/v1",
        observer_id="none",
        observe=dict,
        seed=3,
        max_steps=10,
    )


def _with_shape(episode: EpisodeEvidence, shape: Any) -> dict[str, Any]:
    """The record with the observation blob's shape replaced, its digest resealed."""
    data = episode.data
    data["steps"]["observation"]["$blob"]["shape"] = shape
    data["digest"] = content_digest(data)
    return data


@pytest.mark.parametrize("shape", ["ab", [-1, 24, 24, 3], [], None])
def test_a_malformed_blob_shape_is_named_not_read_as_a_wrong_length(
    pixels: EpisodeEvidence, shape: Any
) -> None:
    # Before, the layout check read the shape first: "steps.observation must hold one
    # sample per successful step", a ConsistencyError about the column, not the reference.
    expected = (
        "malformed blob reference {'dtype': '|u1', 'sha256': '"
        + pixels.data["steps"]["observation"]["$blob"]["sha256"]
        + f"', 'shape': {shape!r}}}: expected "
        '{"sha256": 64 hex digits, "dtype": a numeric dtype, "shape": a list of sizes}'
    )
    with pytest.raises(SchemaError) as caught:
        EpisodeEvidence.from_dict(_with_shape(pixels, shape), pixels.blobs)
    assert type(caught.value) is SchemaError
    assert str(caught.value) == expected


def test_a_well_formed_shape_of_the_wrong_length_is_still_a_layout_error(
    pixels: EpisodeEvidence, tmp_path: Path
) -> None:
    path = tmp_path / "pixels.json"
    pixels.save_json(path)
    assert EpisodeEvidence.load(path) == pixels  # a valid record still loads
    with pytest.raises(ConsistencyError, match=r"steps\.observation must hold one sample per"):
        EpisodeEvidence.from_dict(_with_shape(pixels, [2, 36, 24, 3]), pixels.blobs)


def _render(table: object, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), emoji=False)
    console.print(table)
    return console.export_text()


def test_a_short_split_table_row_is_padded_like_richs() -> None:
    # Before, the short row failed only when printed, with an IndexError.
    split = SplitTable("model", "MAE", "RMSE", keys=1, title="t")
    rich_table = Table("model", "MAE", "RMSE", title="t")
    for table in (split, rich_table):
        table.add_row("a", "1.5")
        table.add_row("b")
    split_text, rich_text = _render(split, 60), _render(rich_table, 60)
    assert [line.split() for line in split_text.splitlines()] == [
        line.split() for line in rich_text.splitlines()
    ], split_text
    assert re.search(r"│ b\s+│\s+│\s+│", split_text), split_text


def test_a_split_table_row_longer_than_its_headers_is_refused() -> None:
    table = SplitTable("model", "MAE", keys=1, title="t")
    message = "a row of 3 cells for a table of 2 columns: pass at most one cell per header"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        table.add_row("a", "1.5", "extra")


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> LedgerResult:
    return run_ledger_experiment(tmp_path_factory.mktemp("ledger"))


def test_the_ledger_decision_table_keeps_names_and_decisions_whole_at_80(
    ledger: LedgerResult,
) -> None:
    # Before, "duplicate_write-seed7-attempt1" was folded over two lines (its "1" read
    # as a row of its own) and "indeterminate" printed as "indetermin" over "ate".
    text = _render(decision_table(ledger), 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    names = [episode.name for episode in ledger.episodes]
    names += [f"classic {run['name']}" for run in ledger.classic]
    for name in names:
        assert re.search(rf"(?m)^(│ )?{re.escape(name)} +│", text), (name, text)
    assert "indetermin " not in text
    assert "indeterminate" in text
    # "required" is no column of its own: the full policy's decision, unless marked ✗.
    for header in ("final answer", "final posting", "full policy"):
        assert f" {header} " in text, text
    # Wide enough, it is the one table it always was.
    assert "part 1" not in _render(decision_table(ledger), 120)
