"""Review round 56: a ``run.json`` edited and sealed again (its digest made anew) whose
protocol holds a field of another type was opened, and failed where the field was first
used: ``check_versions: "x"`` raised ValueError building the protocol,
``environment.target: {"a": 1}`` AttributeError in ``verify``, ``show`` and
``compare``, which said only "malformed record, in a way onrecord's checks do not name".
Others (an agent, a check list or a run id of another type, an unknown environment
kind) were accepted without a word. ``RunStore.open`` now refuses each, naming
``run.json: protocol.<field>`` and the fix."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.errors import SchemaError
from onrecord.runner import RunStore, plan_run, resume_run, start_run
from tests.runner.conftest import onrecord

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished remittance run of one task."""
    path = tmp_path_factory.mktemp("round56") / "run"
    start_run(path, plan_run("remittance", "careful", tasks=["full-01"], repeats=1))
    return path


def _edited(run: Path, folder: Path, edit: Edit) -> Path:
    """A copy of ``run`` whose ``run.json`` has ``edit`` applied and is sealed again."""
    shutil.copytree(run, folder)
    manifest = json.loads((folder / "run.json").read_text())
    manifest.pop("digest")
    edit(manifest)
    (folder / "run.json").write_bytes(
        record_bytes({**manifest, "digest": content_digest(manifest)})
    )
    return folder


def _protocol(*path: str, value: Any) -> Edit:
    def edit(manifest: dict[str, Any]) -> None:
        table = manifest["protocol"]
        for key in path[:-1]:
            table = table[key]
        table[path[-1]] = value

    return edit


EDITS: dict[str, tuple[Edit, str]] = {
    "check_versions": (
        _protocol("check_versions", value="x"),
        r"protocol\.check_versions must be an object mapping each check's name",
    ),
    "check_version": (
        _protocol("check_versions", "expected_changes", value=4),
        r"protocol\.check_versions\['expected_changes'\] must be the check's version label",
    ),
    "target": (
        _protocol("environment", "target", value={"a": 1}),
        r"protocol\.environment\.target must be a non-empty string, got \{'a': 1\}",
    ),
    "kind": (
        _protocol("environment", "kind", value="plugin"),
        r"protocol\.environment\.kind must be one of provider, env, gym",
    ),
    "config": (
        _protocol("environment", "config", value="size=12"),
        r"protocol\.environment\.config must be an object",
    ),
    "agent": (_protocol("agent", value=5), r"protocol\.agent must be the agent's name"),
    "checks": (
        _protocol("checks", value="default"),
        r"protocol\.checks must be a list of check specs",
    ),
    "tasks": (_protocol("tasks", value=[5]), r"protocol\.tasks\[0\] must be a case object"),
    "task": (
        _protocol("tasks", value=[{"case_id": "full-01"}]),
        r"protocol\.tasks\[0\]: case record is missing the field 'input'",
    ),
    "seeds": (_protocol("seeds", value={}), r"protocol\.seeds must be a list of integers"),
    "repeats": (_protocol("repeats", value=0), r"protocol\.repeats must be a positive integer"),
    "policy": (_protocol("policy", value=["a"]), r"protocol\.policy must be an object"),
    "no_agent": (
        lambda manifest: manifest["protocol"].pop("agent"),
        r"protocol lacks the field\(s\) 'agent'",
    ),
    "run_id": (lambda manifest: manifest.update(run_id=5), r"run_id must be a non-empty string"),
    "library": (lambda manifest: manifest.update(library={}), r"library must be an object"),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_opening_names_the_malformed_field(run: Path, tmp_path: Path, name: str) -> None:
    RunStore.open(run)  # as the run wrote it, it opens
    edit, message = EDITS[name]
    folder = _edited(run, tmp_path / "edited", edit)
    with pytest.raises(SchemaError, match=r"edited/run\.json: " + message) as raised:
        RunStore.open(folder)
    assert "restore the run.json the run wrote" in str(raised.value)


@pytest.mark.parametrize("name", ["check_versions", "target", "agent"])
def test_resume_names_the_malformed_field(run: Path, tmp_path: Path, name: str) -> None:
    edit, message = EDITS[name]
    folder = _edited(run, tmp_path / "edited", edit)
    before = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    with pytest.raises(SchemaError, match=message):
        resume_run(folder)
    after = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
    assert after == before  # nothing written


def _refused(done: Any, *words: str) -> None:
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "malformed record" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], done.stderr


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("check_versions", "protocol.check_versions"),
        ("target", "protocol.environment.target"),
        ("kind", "protocol.environment.kind"),
    ],
)
def test_the_commands_name_the_field(run: Path, tmp_path: Path, name: str, field: str) -> None:
    folder = _edited(run, tmp_path / "edited", EDITS[name][0])
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "expected_changes"\n')
    for args in (
        ("verify", folder),
        ("show", folder),
        ("gate", folder, "--policy", policy),
        ("compare", folder, run),
        ("compare", run, folder),
    ):
        done = onrecord(*map(str, args))
        _refused(done, "edited/run.json", field, "restore the run.json")
