"""docs/ci.md, comparison.md, reports-and-policies.md and html-report.md walked as a new
user, every command run as written.

Before: ``onrecord report`` of a ``ledger run`` directory said "not a run directory (it
has no run.json); start a run with `onrecord run`", though it holds a report per variant;
of a ``worldmodel run`` directory it named a command that then refused to write its page
inside the directory (its manifest lists every file). A TOML policy renamed after its
digest was copied was refused as having other "requirements", and told to fix them. The
GitHub workflow of ci.md skipped the gate (its decision, JUnit file and summary) when the
comparison before it was refused."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.errors import DigestMismatch
from tests.cli_process import onrecord

ROOT = Path(__file__).resolve().parents[1]


def _suggested(stderr: str) -> list[str]:
    """The command a refusal names (between backticks), without its leading ``onrecord``."""
    found = re.search(r"`(onrecord report [^`]+)`", stderr)
    assert found is not None, stderr
    return shlex.split(found.group(1))[1:]


def _follow_the_hint(output: Path, cwd: Path) -> None:
    done = onrecord("report", output, cwd=cwd)
    assert done.returncode == 3, done.stdout + done.stderr
    args = _suggested(done.stderr)
    assert "-o" in args, done.stderr  # the directory's manifest lists its files
    followed = onrecord(*args, cwd=cwd)
    assert followed.returncode == 0, followed.stderr
    page = cwd / args[args.index("-o") + 1]
    assert page.is_file()
    assert page.read_text().lower().startswith("<!doctype html>")
    verified = onrecord("verify", output, cwd=cwd)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_ledger_run_directory_names_a_report_the_page_can_be_written_from(
    tmp_path: Path,
) -> None:
    done = onrecord("ledger", "run", "--output-dir", "led", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    refused = onrecord("report", "led", cwd=tmp_path)
    assert "start a run" not in refused.stderr
    assert "report.json" in refused.stderr
    _follow_the_hint(Path("led"), tmp_path)
    # One variant's folder, the natural next guess, names its own report file.
    variant = next(p for p in sorted((tmp_path / "led" / "runs").iterdir()) if p.is_dir())
    again = onrecord("report", variant, cwd=tmp_path)
    assert again.returncode == 3
    assert _suggested(again.stderr)[1] == str(variant / "report.json")


def test_a_world_model_run_directory_names_a_command_that_writes_its_page(
    smoke_world_model_run: Path, tmp_path: Path
) -> None:
    _follow_the_hint(smoke_world_model_run, tmp_path)


def test_a_folder_of_runs_names_a_run_report_without_an_output_option(
    remittance_pair_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    careful, _ = remittance_pair_runs
    done = onrecord("report", careful.parent, cwd=tmp_path)
    assert done.returncode == 3
    args = _suggested(done.stderr)
    assert "-o" not in args, done.stderr
    assert args[1].endswith("report.json"), done.stderr


def test_a_renamed_toml_policy_is_refused_as_renamed(tmp_path: Path) -> None:
    policy = AcceptancePolicy((CheckRequirement("posted_once"),), name="release")
    body = '[[requirements]]\ncheck = "posted_once"\n'
    (tmp_path / "ok.toml").write_text(f'name = "release"\ndigest = "{policy.digest}"\n{body}')
    (tmp_path / "renamed.toml").write_text(f'name = "other"\ndigest = "{policy.digest}"\n{body}')
    assert AcceptancePolicy.load(tmp_path / "ok.toml") == policy
    with pytest.raises(DigestMismatch, match="its name and requirements are those of"):
        AcceptancePolicy.load(tmp_path / "renamed.toml")
    unnamed = AcceptancePolicy((CheckRequirement("posted_once"),))
    (tmp_path / "unnamed.toml").write_text(f'digest = "{unnamed.digest}"\n{body}')
    assert AcceptancePolicy.load(tmp_path / "unnamed.toml").name == "policy"


def test_the_github_gate_step_runs_after_a_refused_comparison() -> None:
    text = (ROOT / "docs" / "ci.md").read_text()
    block = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)[0]
    steps = yaml.safe_load(block)["jobs"]["evaluate"]["steps"]
    names = [step.get("name") for step in steps]
    compare, gate = names.index("Compare with the baseline"), names.index("Gate")
    assert compare < gate
    # `onrecord compare` exits 3 on a refusal: without `!cancelled()` GitHub skips the gate.
    assert "!cancelled()" in steps[gate].get("if", ""), steps[gate]
