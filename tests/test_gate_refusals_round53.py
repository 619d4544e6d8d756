"""A refused gate (exit 3) says why in its CI files.

``onrecord gate RUN --policy P --markdown "$GITHUB_STEP_SUMMARY" --junit-xml out.xml`` on
a run that could not be gated wrote neither file: the job failed, its summary was empty
and its test report missing, and why was only in the log. Now a refusal about the inputs
appends a "refused (exit 3)" section (with the command the error names) and writes a
JUnit file whose decision test case is an error; a refused destination, or a usage
error, still writes nothing."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.cli_process import onrecord
from tests.runner.conftest import interrupt_run
from tests.test_docs_ci import _blocks, _env

POLICY = '[[requirements]]\ncheck = "expected_changes"\n'
HEADING = "### ⛔ onrecord gate: refused (exit 3)\n"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of two episodes, graded; tests copy it before changing it."""
    run = tmp_path_factory.mktemp("finished") / "run"
    done = onrecord(
        "run", "remittance", "--agent", "careful", "--tasks", "full-01", "--seeds", "0-1",
        "--out", run, "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run


def _gate(run: Path, policy: Path, folder: Path) -> tuple[int, str, ET.Element]:
    """Gate with both CI files, the summary already holding an earlier step's text;
    the exit code, the summary's text and the JUnit file's decision error."""
    summary, junit = folder / "summary.md", folder / "reports" / "gate.xml"
    summary.write_text("earlier step\n")
    done = onrecord("gate", run, "--policy", policy, "--markdown", summary, "--junit-xml", junit)
    root = ET.parse(junit).getroot()  # valid XML, or this raises
    cases = root.findall("./testsuite/testcase")
    assert [(case.get("classname"), case.get("name")) for case in cases] == [
        ("onrecord.gate", "decision")
    ]
    error = cases[0].find("error")
    assert error is not None, ET.tostring(root)
    assert (root.get("errors"), root.get("failures"), root.get("tests")) == ("1", "0", "1")
    text = summary.read_text()
    assert text.startswith("earlier step\n\n" + HEADING), text
    return done.returncode, text, error


def test_an_interrupted_run_says_in_the_summary_and_junit_how_to_finish_it(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    code, stderr = interrupt_run(
        "remittance", "--agent", "careful", "--seeds", "0-199", "--no-progress",
        run_dir=run, env={}, after=2,
    )  # fmt: skip
    assert code == 130, stderr
    assert not (run / "report.json").exists()
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    exit_code, text, error = _gate(run, policy, tmp_path)
    assert exit_code == 3
    assert "/run has no report.json: the run was interrupted" in text
    # The command, as typed, in a block of its own to copy.
    assert f"```\nonrecord run --resume {run}\n```" in text
    assert error.get("type") == "refused"
    assert (error.get("message") or "").startswith(f"refused: {run} has no report.json")
    assert f"onrecord run --resume {run}" in (error.text or "")


@pytest.mark.parametrize("broken", ["missing run", "changed report", "malformed policy"])
def test_each_input_refusal_is_in_the_summary_and_junit(
    finished: Path, tmp_path: Path, broken: str
) -> None:
    run, policy = tmp_path / "run", tmp_path / "release_*1*.toml"
    policy.write_text(POLICY)
    if broken != "missing run":
        shutil.copytree(finished, run)
    if broken == "changed report":
        report = run / "report.json"
        report.write_text(report.read_text().replace('"pass"', '"fail"'))
        said = f"{run}/report.json: report digest is"
    elif broken == "malformed policy":
        policy.write_text('[[requirements]]\nchek = "expected_changes"\n')
        said = f"{policy}: requirement #1 is malformed"
    else:
        said = f"no such file: {run}"
    exit_code, text, error = _gate(run, policy, tmp_path)
    assert exit_code == 3
    assert (error.get("message") or "").startswith(f"refused: {said}")
    # Escaped as the other summaries escape text: the policy's `*` do not turn bold.
    assert "policy " + str(policy).replace("_", "\\_").replace("*", "\\*") in text
    assert "\\#1 is malformed" in text or broken != "malformed policy"
    assert "```" not in text  # the message names no command to run
    assert text.endswith("</sub>\n")


def test_a_refused_destination_or_usage_error_writes_nothing(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    summary, junit = tmp_path / "summary.md", tmp_path / "gate.xml"
    missing = tmp_path / "absent-run"
    for extra in (
        ["--junit-xml", junit, "--output", junit],  # two options, one file
        ["--markdown", summary, "--junit-xml", policy],  # the policy file as output
        ["--markdown", summary, "--junit-xml", junit, "--bogus"],  # usage error
    ):
        done = onrecord("gate", missing, "--policy", policy, *extra)
        assert done.returncode == 3, done.stderr
        assert not summary.exists(), extra
        assert not junit.exists(), extra
        assert policy.read_text() == POLICY


def _copy_without_hidden(run: Path, to: Path) -> None:
    """``run`` as ``actions/upload-artifact@v4`` keeps it: its hidden ``.lock`` left out."""
    to.mkdir(parents=True)
    for item in run.iterdir():
        if not item.name.startswith("."):
            shutil.copy2(item, to / item.name)


def _resume_step() -> str:
    """docs/ci.md's "Run, or resume the restored run" step's script."""
    steps = [yaml.safe_load(block) for block in _blocks("yaml")]
    found = [
        step["run"]
        for block in steps
        if isinstance(block, list)
        for step in block
        if step.get("name") == "Run, or resume the restored run"
    ]
    assert len(found) == 1, found
    return str(found[0])


def test_the_docs_resume_step_finishes_a_partial_run_copied_without_its_lock(
    tmp_path: Path,
) -> None:
    script = _resume_step()
    start = next(line.strip() for line in script.splitlines() if "--out runs/candidate" in line)
    words = shlex.split(start.split(" || ")[0].replace('"$AGENT"', "careful"))
    assert words[:2] == ["onrecord", "run"], words
    assert words[-2:] == ["--out", "runs/candidate"], words
    (tmp_path / "policy.toml").write_text(_blocks("toml")[0])
    args = [str(tmp_path / word) if word == "policy.toml" else word for word in words[2:-2]]
    # The job that was cancelled: the page's own command, interrupted.
    code, stderr = interrupt_run(*args, "--no-progress", run_dir=tmp_path / "old", env={}, after=2)
    assert code == 130, stderr
    # The re-run, on another runner: the run restored without its hidden .lock.
    job = tmp_path / "job"
    _copy_without_hidden(tmp_path / "old", job / "runs" / "candidate")
    shutil.copy2(tmp_path / "policy.toml", job / "policy.toml")
    assert onrecord("verify", job / "runs" / "candidate").returncode == 0
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=job, env=_env(AGENT="careful"), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "99/99 episodes recorded (97 now" in done.stdout, done.stdout
    run = job / "runs" / "candidate"
    assert (run / ".lock").exists()
    verified = onrecord("verify", run)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "(99 of 99 episodes" in verified.stdout
    gated = onrecord("gate", run, "--policy", job / "policy.toml")
    assert gated.returncode == 0, gated.stdout + gated.stderr
