"""The restructured guides walked as a new user would: what a step of theirs ran into.

Before: ``regrade --checks mine:CHECKS`` (replacing the run's checks) printed "10 verdicts
changed (of 1 episode × 1 check)", counting only the new checks although the old ones'
verdicts going absent are changes; ``gate --markdown "$GITHUB_STEP_SUMMARY"`` outside
GitHub Actions (the variable unset, so an empty name) said "--markdown  is a directory",
and ``compare --html ""`` exited 0 writing nothing; and the policy TOML that runs.md,
ci.md and cli.md send readers to reports-and-policies.md for was not shown there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from tests.cli_process import onrecord

ROOT = Path(__file__).resolve().parents[1]

MY_CHECKS = """
from onrecord.envkit import failed, passed
from onrecord.episode import OutcomeCheck

def _few_calls(episode):
    calls = len(episode.actions)
    return passed(f"{calls} calls") if calls <= 12 else failed(f"{calls} calls")

CHECKS = [OutcomeCheck("few_calls", "v1", _few_calls)]
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One careful remittance episode, recorded by ``onrecord run``."""
    where = tmp_path_factory.mktemp("walk")
    done = onrecord(
        "run", "remittance", "--agent", "careful", "--tasks", "full-01", "--seeds", "0",
        "--out", "run", "--no-progress", cwd=where,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (where / "mychecks.py").write_text(MY_CHECKS)
    return where / "run"


def test_a_regrade_that_replaces_the_checks_counts_the_checks_it_replaced(run: Path) -> None:
    done = onrecord(
        "regrade", run, "--checks", "mychecks:CHECKS", "--name", "mine", "--no-progress",
        cwd=run.parent, pythonpath=run.parent,
    )  # fmt: skip
    # The run's policy requires the checks replaced: undecided, so indeterminate.
    assert done.returncode == 2, done.stderr
    line = re.search(r"(\d+) verdicts? changed \(of (\d+) episodes? × (\d+) checks?\)", done.stdout)
    assert line is not None, done.stdout
    changed, episodes, checks = map(int, line.groups())
    # Every one of the run's checks went absent and few_calls appeared: all changed.
    assert episodes == 1, line.group(0)
    assert changed == checks > 1, line.group(0)
    assert "few_calls: absent → pass" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("gate", "{run}", "--policy", "policy.toml", "--markdown", ""),
        ("gate", "{run}", "--policy", "policy.toml", "--junit-xml", ""),
        ("compare", "{run}", "{run}", "--html", ""),
        ("compare", "{run}", "{run}", "--json", ""),
        ("report", "{run}", "-o", ""),
        ("report", "{run}", "--json", ""),
    ],
    ids=["gate-markdown", "gate-junit", "compare-html", "compare-json", "report-o", "report-json"],
)
def test_an_empty_output_name_is_refused_naming_the_unset_variable(
    run: Path, args: tuple[str, ...]
) -> None:
    (run.parent / "policy.toml").write_text('[[requirements]]\ncheck = "expected_changes"\n')
    before = sorted(path.name for path in run.parent.iterdir())
    done = onrecord(*(arg.format(run=run) for arg in args), cwd=run.parent)
    assert done.returncode == 3, (done.stdout, done.stderr)
    message = " ".join(done.stderr.split())
    assert "was given an empty file name" in message, message
    assert "$GITHUB_STEP_SUMMARY" in message
    assert sorted(path.name for path in run.parent.iterdir()) == before


def test_report_says_where_it_wrote_the_data_too(run: Path) -> None:
    done = onrecord("report", run, "-o", "page.html", "--json", "data.json", cwd=run.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["wrote", "page.html", "and", "its", "data", "data.json"]
    assert (run.parent / "data.json").is_file()


def test_the_policy_file_of_the_policies_page_is_its_python_example(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "reports-and-policies.md").read_text()
    toml = re.findall(r"```toml\n(.*?)```", page, flags=re.S)
    assert len(toml) == 1
    (tmp_path / "policy.toml").write_text(toml[0])
    policy = AcceptancePolicy.load(tmp_path / "policy.toml")
    assert policy.requirements == (
        CheckRequirement("posted_once", critical=True),
        CheckRequirement("style", critical=False, min_pass_rate=0.9),
    )
    # The Python example above it holds the same two requirements.
    assert 'CheckRequirement("posted_once", critical=True)' in page
    assert 'CheckRequirement("style", critical=False, min_pass_rate=0.9)' in page
