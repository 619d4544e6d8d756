"""``analyze_ledger_dir`` checks the ledger manifest's own digest.

Before: it checked every file against the manifest's sha256 map but never the
manifest's digest (a single-file ``onrecord verify`` did), so a database replaced
together with its manifest entry passed ``onrecord ledger analyze`` and ``onrecord verify
DIR``. The summary it reads is now checked against its own digest too.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.domains.ledger import analyze_ledger_dir, run_ledger_experiment, save_ledger_result
from tests.cli_process import onrecord


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ledger") / "out"
    save_ledger_result(run_ledger_experiment(out), out)
    return out


@pytest.fixture
def copy(saved: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(saved, tmp_path / "copy"))


def _repin(root: Path, name: str, *, reseal: bool) -> None:
    manifest = orjson.loads((root / "manifest.json").read_bytes())
    manifest["sha256"][name] = hashlib.sha256((root / name).read_bytes()).hexdigest()
    if reseal:
        manifest["digest"] = content_digest(manifest)
    (root / "manifest.json").write_bytes(record_bytes(manifest))


def test_a_saved_run_analyzes_clean(saved: Path) -> None:
    assert analyze_ledger_dir(saved).ok


def test_a_database_replaced_with_its_manifest_entry_is_refused(copy: Path) -> None:
    # The correct attempt's database swapped for the duplicate-writing one's: the
    # evidence is unchanged, so only the manifest pins the database.
    name = "runs/correct-seed7-attempt1/ledger.sqlite"
    shutil.copy(copy / "runs" / "duplicate_write-seed7-attempt1" / "ledger.sqlite", copy / name)
    _repin(copy, name, reseal=False)
    analysis = analyze_ledger_dir(copy)
    assert not analysis.ok
    assert analysis.problems[0].startswith("manifest.json: does not match its digest")
    done = onrecord("ledger", "analyze", copy)
    assert done.returncode == 3
    assert "manifest.json: does not match its digest" in done.stdout + done.stderr
    done = onrecord("verify", copy)
    assert done.returncode == 3
    assert "manifest.json: does not match its digest" in done.stderr


def test_a_summary_edited_without_its_digest_is_refused(copy: Path) -> None:
    # A summary edited in place and re-pinned by a resealed manifest: only the
    # summary's own digest still tells.
    path = copy / "summary.json"
    summary = orjson.loads(path.read_bytes())
    summary["ok"] = not summary["ok"]
    path.write_bytes(record_bytes(summary))
    _repin(copy, "summary.json", reseal=True)
    analysis = analyze_ledger_dir(copy)
    assert any("summary.json does not match its digest" in p for p in analysis.problems)
