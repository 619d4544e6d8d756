"""docs/ci.md's GitHub Actions workflow and GitLab CI job, run as a CI runner runs them:
every ``onrecord`` command of their steps, in order, through bash with ``-e``, with the
page's ``policy.toml`` (installing and the CI services' own actions are left out). They
must pass, and leave the files the page says the CI system reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

PAGE = Path(__file__).resolve().parents[1] / "docs" / "ci.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


def _workflows() -> tuple[dict[str, Any], dict[str, Any]]:
    # Told apart by their top key: the page's other YAML blocks are steps to add.
    loaded = [yaml.safe_load(block) for block in _blocks("yaml")]
    workflows = [item for item in loaded if isinstance(item, dict)]
    github = next(item for item in workflows if "jobs" in item)
    gitlab = next(item for item in workflows if "evaluate-agent" in item)
    return github, gitlab


def _sh(script: str, folder: Path, env: dict[str, str]) -> None:
    """``script`` as GitHub runs a step (``bash -e``), its ``onrecord`` lines only."""
    lines = [line for line in script.splitlines() if line.startswith("onrecord ")]
    assert lines, script
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(lines)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{lines}\n{done.stdout}\n{done.stderr}"


def _env(**extra: str) -> dict[str, str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "COLUMNS": "200", **extra}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "policy.toml").write_text(_blocks("toml")[0])
    return tmp_path


def test_the_github_actions_workflow_runs_and_fills_the_job_summary(folder: Path) -> None:
    github, _ = _workflows()
    job = github["jobs"]["evaluate"]
    summary = folder / "step-summary.md"
    env = _env(**job["env"], GITHUB_STEP_SUMMARY=str(summary))
    steps = [step for step in job["steps"] if "run" in step and "pip install" not in step["run"]]
    assert [step["name"] for step in steps] == [
        "Run the candidate and the baseline",
        "Report",
        "Compare with the baseline",
        "Gate",
    ]
    for step in steps:
        _sh(step["run"], folder, env)
    upload = next(step for step in job["steps"] if "upload-artifact" in step.get("uses", ""))
    for name in upload["with"]["path"].split():
        assert (folder / name).is_file(), name
    text = summary.read_text()
    compared, gated = text.index("### onrecord compare: 99 paired trials"), text.index("### ✅")
    assert compared < gated  # appended, in the order of the steps
    assert "onrecord gate: accept (exit 0)" in text
    suite = ET.parse(folder / "onrecord-junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "0")


def test_the_gitlab_job_runs_and_leaves_its_artifacts(folder: Path) -> None:
    _, gitlab = _workflows()
    job = gitlab["evaluate-agent"]
    script = [line for line in job["script"] if not line.startswith("pip ")]
    _sh("\n".join(script), folder, _env())
    artifacts = job["artifacts"]
    assert artifacts["when"] == "always"
    for name in [*artifacts["paths"], artifacts["reports"]["junit"]]:
        assert (folder / name).is_file(), name
    root = ET.parse(folder / artifacts["reports"]["junit"]).getroot()
    assert root.get("failures") == "0"
