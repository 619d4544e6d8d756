"""A `worldmodel run` manifest carries its own digest.

Before: ``manifest.json`` was ``{"schema", "files"}`` and nothing else, so a file replaced
together with its entry in the manifest passed ``onrecord verify`` (a plot or a model
file, which ``analyze --replay`` does not recompute, passed it too). Now the experiment
store seals the manifest, and ``verify``, ``analyze --replay`` and ``replay`` refuse a
manifest that does not match its digest. A manifest written before (no digest) still
replays, with a note; ``verify`` refuses it as unsealed, exit 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord._canonical import content_digest, file_sha256
from onrecord.dynamics.experiment import replay
from onrecord.dynamics.experiment._store import read_json, write_json
from onrecord.errors import DigestMismatch
from tests.cli_process import onrecord
from tests.conftest import writable_copy

pytestmark = pytest.mark.slow


@pytest.fixture
def written(smoke_world_model_run: Path) -> Path:
    """One real smoke run, written by the experiment's own code: the session's shared
    ``worldmodel run --smoke`` (tests/conftest.py), read only."""
    return smoke_world_model_run


@pytest.fixture
def run_dir(written: Path, tmp_path: Path) -> Path:
    """A copy of the run that a test may change."""
    return writable_copy(written, tmp_path / "run")


def _replace_and_repin(root: Path, name: str, data: bytes) -> None:
    """What a forger does: replace a file and give it its new sha256 in the manifest
    (leaving the manifest's digest as it was)."""
    (root / name).write_bytes(data)
    manifest = read_json(root / "manifest.json")
    manifest["files"][name] = file_sha256(root / name)
    write_json(root / "manifest.json", manifest)


def _unseal(root: Path) -> dict[str, Any]:
    """The manifest as onrecord wrote it before manifests were sealed."""
    manifest = read_json(root / "manifest.json")
    manifest.pop("digest")
    write_json(root / "manifest.json", manifest)
    return dict(manifest)


def test_the_manifest_is_sealed_and_verifies(written: Path) -> None:
    manifest = read_json(written / "manifest.json")
    assert set(manifest) == {"schema", "files", "digest"}
    assert manifest["digest"] == content_digest(manifest)
    done = onrecord("verify", written)
    assert done.returncode == 0, done.stderr
    assert f"sha256:{manifest['digest']}" in done.stdout
    tables = replay(written)
    assert tables["manifest_sealed"] is True
    assert tables["verified_files"] == len(manifest["files"])


@pytest.mark.parametrize("name", ["tables.json", "plots/closed_loop.png"])
def test_a_file_replaced_with_its_manifest_entry_is_refused(run_dir: Path, name: str) -> None:
    original = (run_dir / name).read_bytes()
    _replace_and_repin(run_dir, name, original[:-8] + b"forged!\n")
    for target in (run_dir, run_dir / name, run_dir / "protocol.json"):
        done = onrecord("verify", target)
        assert done.returncode == 3, (target, done.stdout)
        assert "manifest.json does not match its digest" in done.stderr
    done = onrecord("worldmodel", "analyze", "--replay", run_dir)
    assert done.returncode == 3
    assert "does not match its digest" in done.stderr
    with pytest.raises(DigestMismatch, match=r"manifest\.json does not match its digest"):
        replay(run_dir)


def test_an_unsealed_manifest_replays_but_does_not_verify(run_dir: Path) -> None:
    manifest = _unseal(run_dir)
    tables = replay(run_dir)
    assert tables["manifest_sealed"] is False
    assert tables["verified_files"] == len(manifest["files"])
    done = onrecord("worldmodel", "analyze", "--replay", run_dir)
    assert done.returncode == 0, done.stderr
    assert "manifest.json has no digest" in done.stderr
    for target in (run_dir, run_dir / "tables.json"):
        done = onrecord("verify", target)
        assert done.returncode == 3, done.stdout
        assert "manifest.json has no digest" in done.stderr
        assert "Re-run the experiment" in done.stderr
    # A changed file is still named as such, before the missing seal.
    plot = run_dir / "plots" / "reliability.png"
    plot.write_bytes(plot.read_bytes() + b"\0")
    done = onrecord("verify", run_dir)
    assert done.returncode == 3
    assert "reliability.png does not match its sha256" in done.stderr
