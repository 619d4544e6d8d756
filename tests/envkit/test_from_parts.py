"""``ToolEpisode.from_parts``: checks grade an episode built from memory exactly as they
grade the same episode saved to a directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.envkit import ToolEpisode, ToolWorld, save_episode, tool_episode_trial
from onrecord.errors import SchemaError

from .test_episode_checks import CASE, allocations_sum_to_5, run_episode


def _parts(saved: ToolEpisode, database: Path | None) -> ToolEpisode:
    return ToolEpisode.from_parts(
        saved.manifest,
        actions=saved.actions,
        audit_tables={
            name: {"columns": list(t.columns), "key": list(t.key)}
            for name, t in saved.tables.items()
        },
        audit_events=saved.audit,
        diff=saved.diff,
        task=saved.task,
        database=database,
    )


def test_checks_grade_parts_like_the_saved_directory(world: ToolWorld, tmp_path: Path) -> None:
    saved = run_episode(world, tmp_path / "ep")
    copy = saved.copy_database(tmp_path / "end.sqlite")
    built = _parts(saved, copy)
    checks = [
        allocations_sum_to_5,
        "envkit/diff_satisfies_rules",
        "envkit/diff_matches_expected",
        "envkit/rejected_calls_changed_nothing",
    ]
    assert (
        tool_episode_trial(built, checks).to_dict() == tool_episode_trial(saved, checks).to_dict()
    )
    assert (built.actions, built.audit, built.tables) == (saved.actions, saved.audit, saved.tables)
    assert built.database == copy
    assert built.path == tmp_path
    assert built.end_state_digest() == saved.manifest["end_state_digest"]
    assert built.case == CASE


def test_parts_without_a_database_cannot_open_the_end_state(
    world: ToolWorld, tmp_path: Path
) -> None:
    world.reset(case=CASE)
    saved = save_episode(world, tmp_path / "ep")
    built = _parts(saved, None)
    assert built.database is None
    with pytest.raises(SchemaError, match="built from parts without one"):
        built.connect()
    with pytest.raises(SchemaError, match="cannot be opened"):
        built.copy_database(tmp_path / "x.sqlite")


def test_a_manifest_without_the_needed_fields_is_refused(world: ToolWorld, tmp_path: Path) -> None:
    world.reset(case=CASE)
    saved = save_episode(world, tmp_path / "ep")
    manifest = {k: v for k, v in saved.manifest.items() if k not in ("steps", "tools")}
    with pytest.raises(SchemaError, match=r"lacks \['steps', 'tools'\]"):
        ToolEpisode.from_parts(
            manifest, actions=[], audit_tables={}, audit_events=[], diff={}, task=None
        )
