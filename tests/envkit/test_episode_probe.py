"""Probes of saved tool-world episodes: every kind of tampering is refused naming the
file, a loaded episode does not depend on the working directory, and bad manifests are
schema errors rather than crashes."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.cli.main import main
from onrecord.envkit import ToolEpisode, ToolWorld, run_checks, save_episode
from onrecord.errors import DigestMismatch, InputError, OnrecordError, SchemaError

from .test_episode_checks import run_episode

CHECKS = ["envkit/diff_satisfies_rules", "envkit/rejected_calls_changed_nothing"]


@pytest.fixture
def saved(world: ToolWorld, tmp_path: Path) -> tuple[Path, Path]:
    """Two saved episodes of the same task with different end states."""
    run_episode(world, tmp_path / "a")
    run_episode(world, tmp_path / "b", amount=6.0)
    return tmp_path / "a", tmp_path / "b"


def _rewrite_manifest(directory: Path, edit: Callable[[dict[str, object]], None]) -> None:
    """Edit the manifest and recompute its digest (a forger's manifest)."""
    manifest = json.loads((directory / "manifest.json").read_text())
    edit(manifest)
    manifest.pop("digest")
    manifest["digest"] = content_digest(manifest)
    (directory / "manifest.json").write_bytes(record_bytes(manifest))


def _mkdir_for_file(directory: Path, name: str) -> None:
    (directory / name).unlink()
    (directory / name).mkdir()


TAMPERING: dict[str, tuple[str, Callable[[Path, Path], object]]] = {
    "added file": ("notes.txt", lambda d, o: (d / "notes.txt").write_text("x")),
    "added hot journal": (
        "final.sqlite-journal",
        lambda d, o: (d / "final.sqlite-journal").write_bytes(b"junk"),
    ),
    "removed database": ("final.sqlite", lambda d, o: (d / "final.sqlite").unlink()),
    "removed log": ("actions.jsonl", lambda d, o: (d / "actions.jsonl").unlink()),
    "removed task": ("task.json", lambda d, o: (d / "task.json").unlink()),
    "directory instead of diff": ("diff.json", lambda d, o: _mkdir_for_file(d, "diff.json")),
    "swapped database": (
        "final.sqlite",
        lambda d, o: shutil.copyfile(o / "final.sqlite", d / "final.sqlite"),
    ),
    "manifest files not a mapping": (
        "manifest.json",
        lambda d, o: _rewrite_manifest(d, lambda m: m.__setitem__("files", [])),
    ),
    "manifest without files": (
        "manifest.json",
        lambda d, o: _rewrite_manifest(d, lambda m: m.pop("files")),
    ),
    "manifest drops the database": (
        "manifest.json",
        lambda d, o: _rewrite_manifest(d, lambda m: m["files"].pop("final.sqlite")),  # type: ignore[attr-defined]
    ),
    "manifest steps not a number": (
        "manifest.json",
        lambda d, o: _rewrite_manifest(d, lambda m: m.__setitem__("steps", "3")),
    ),
}


# What each tampering is refused as: a changed, added or missing file by its digest or
# the manifest's list; a resealed manifest by what it says.
_NOT_LISTED = "is not part of the saved episode (its manifest does not list it)"
_MISSING = "is missing (or not a file): the manifest pins it"
REFUSAL: dict[str, tuple[type[OnrecordError], str]] = {
    "added file": (DigestMismatch, _NOT_LISTED),
    "added hot journal": (DigestMismatch, _NOT_LISTED),
    "removed database": (DigestMismatch, _MISSING),
    "removed log": (DigestMismatch, _MISSING),
    "removed task": (DigestMismatch, _MISSING),
    "directory instead of diff": (SchemaError, "is a directory, not a regular file"),
    "swapped database": (DigestMismatch, "does not match the sha256 in its manifest"),
    "manifest files not a mapping": (SchemaError, "field 'files' must be of type dict, got []"),
    "manifest without files": (SchemaError, "field 'files' must be of type dict, got None"),
    "manifest drops the database": (
        SchemaError,
        "but an episode saved with database=True has ['actions.jsonl', 'audit.json', "
        "'diff.json', 'final.sqlite', 'task.json']",
    ),
    "manifest steps not a number": (SchemaError, "field 'steps' must be of type int, got '3'"),
}


def test_every_tampering_has_its_expected_refusal() -> None:
    assert set(REFUSAL) == set(TAMPERING)


@pytest.mark.parametrize("kind", sorted(TAMPERING))
def test_every_tampering_is_refused_naming_the_file(
    saved: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    name, tamper = TAMPERING[kind]
    target = tmp_path / "tampered"
    shutil.copytree(saved[0], target)
    tamper(target, saved[1])
    error, fragment = REFUSAL[kind]
    with pytest.raises(OnrecordError) as caught:
        ToolEpisode.load(target)
    # The exact class and the check's own words: a forged manifest (resealed) must be
    # refused for its content, not for a digest, or the content check never ran.
    assert type(caught.value) is error, (kind, caught.value)
    assert f"{target / name}" in str(caught.value), caught.value
    assert fragment in str(caught.value), caught.value


def test_changing_a_row_of_the_end_state_is_refused(saved: tuple[Path, Path]) -> None:
    conn = sqlite3.connect(saved[0] / "final.sqlite")
    with conn:
        conn.execute("UPDATE allocations SET amount = 6.0")
    conn.close()
    with pytest.raises(DigestMismatch, match=r"final\.sqlite"):
        ToolEpisode.load(saved[0])


def test_cli_check_refuses_a_forged_manifest_with_exit_3(
    saved: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _rewrite_manifest(saved[0], lambda m: m.__setitem__("files", []))
    code = main(["check", CHECKS[0], "--episode", str(saved[0])])
    err = capsys.readouterr().err
    assert code == 3
    assert "manifest.json" in err
    assert "files" in err


def test_episode_loaded_by_a_relative_path_survives_a_change_of_directory(
    saved: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [r.to_dict() for r in run_checks(ToolEpisode.load(saved[0]), CHECKS)]
    monkeypatch.chdir(saved[0].parent)
    episode = ToolEpisode.load(saved[0].name)
    monkeypatch.chdir(saved[0].parent.parent)  # the relative path now names nothing
    assert episode.path.is_absolute()
    assert len(episode.actions) == 3
    assert episode.end_state_digest() == episode.manifest["end_state_digest"]
    assert [r.to_dict() for r in run_checks(episode, CHECKS)] == expected


def test_moved_episode_loads_and_rechecks_identically(
    saved: tuple[Path, Path], tmp_path: Path
) -> None:
    before = [r.to_dict() for r in run_checks(ToolEpisode.load(saved[0]), CHECKS)]
    moved = Path(shutil.move(str(saved[0]), str(tmp_path / "elsewhere" / "ep")))
    episode = ToolEpisode.load(moved)
    assert [r.to_dict() for r in run_checks(episode, CHECKS)] == before
    assert episode.end_state_digest() == episode.manifest["end_state_digest"]


def test_a_file_changed_after_load_is_refused_when_read(saved: tuple[Path, Path]) -> None:
    episode = ToolEpisode.load(saved[0])
    shutil.copyfile(saved[1] / "diff.json", saved[0] / "diff.json")
    with pytest.raises(DigestMismatch, match=r"diff\.json"):
        _ = episode.diff


def test_resaving_without_the_database_drops_the_old_end_state(
    world: ToolWorld, tmp_path: Path
) -> None:
    run_episode(world, tmp_path / "ep")
    world.reset(seed=1)
    episode = save_episode(world, tmp_path / "ep", database=False)
    assert not (tmp_path / "ep" / "final.sqlite").exists()
    assert ToolEpisode.load(tmp_path / "ep").digest == episode.digest


def test_saving_into_a_directory_with_other_files_is_refused_before_ending(
    world: ToolWorld, tmp_path: Path
) -> None:
    (tmp_path / "ep").mkdir()
    (tmp_path / "ep" / "notes.txt").write_text("mine")
    world.reset(seed=1)
    with pytest.raises(InputError, match=r"notes\.txt"):
        save_episode(world, tmp_path / "ep")
    assert not world.ended  # still usable: save it elsewhere
    save_episode(world, tmp_path / "other")


def test_checks_over_zero_calls_and_only_rejected_calls(world: ToolWorld, tmp_path: Path) -> None:
    from .test_episode_checks import CASE

    world.reset(case=CASE, seed=1)
    empty = save_episode(world, tmp_path / "empty")
    world.reset(case=CASE, seed=1)
    world.call("allocate", {"claim_id": 999, "amount": 1.0})
    world.call("no_such_tool", {})
    rejected = save_episode(world, tmp_path / "rejected")
    for episode in (ToolEpisode.load(empty.path), ToolEpisode.load(rejected.path)):
        statuses = {r.name: r.status for r in run_checks(episode, CHECKS)}
        assert statuses == {CHECKS[0]: "fail", CHECKS[1]: "pass"}
        assert episode.diff == {}


def test_loading_never_raises_anything_but_onrecord_errors(
    saved: tuple[Path, Path], tmp_path: Path
) -> None:
    for tamper in ("actions.jsonl", "audit.json", "task.json", "manifest.json"):
        target = tmp_path / f"gone-{tamper}"
        shutil.copytree(saved[0], target)
        os.remove(target / tamper)
        with pytest.raises(OnrecordError, match=re.escape(tamper)):
            ToolEpisode.load(target)
