"""Commands that run for minutes on a large run show progress on stderr like ``onrecord
run``: ``onrecord regrade`` rebuilds every episode's world from its evidence (about six
minutes for 3,000 remittance episodes on two cores), and used to print nothing until the
end. In a CI log (stderr a pipe) it writes plain lines, always one at the start and one
at the end; ``--no-progress`` turns them off, and stdout is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_process import onrecord


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete remittance run: 33 tasks × 2 repeats of the careful agent."""
    out = tmp_path_factory.mktemp("audit22") / "run"
    made = onrecord(
        "run", "remittance", "-a", "careful", "-r", "2", "--executor", "inprocess",
        "--no-progress", "-o", out,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return out


@pytest.mark.slow
def test_regrade_reports_progress_in_a_ci_log(run_dir: Path) -> None:
    loud = onrecord("regrade", run_dir, "--name", "loud")
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    assert lines, "nothing on stderr: no sign of life while regrading"
    # Always a line at the start and one at the end with the count reaching the total,
    # whatever the speed (between them, at most one every 10 seconds).
    assert lines[0].startswith("episodes 0/66 · "), loud.stderr
    assert lines[-1].startswith("episodes 66/66 · "), loud.stderr
    assert "· failed 0 · incomplete 0 · errors 0 · " in lines[-1]
    assert all(line.startswith("episodes ") for line in lines)
    assert not {c for c in loud.stderr if ord(c) < 32 and c != "\n"}  # no ANSI codes
    quiet = onrecord("regrade", run_dir, "--name", "quiet", "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    # The results on stdout are untouched by progress: equal but for the regrade's name.
    assert "episodes 0/66" not in loud.stdout
    assert "0 verdicts changed (of 66 episodes" in loud.stdout
    assert loud.stdout.replace("loud", "NAME") == quiet.stdout.replace("quiet", "NAME")
