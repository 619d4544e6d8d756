"""Three leftovers: a partial run's decision in ``verify``, a saved comparison's header in
``show``, and what ``check --help`` imports.

1. ``onrecord verify RUN/decision.json`` of a partial run said ``run decision (accept, 1
   of 2 episodes)``: the file stores the policy's verdict on the recorded episodes beside
   ``"complete": false``, while ``run``, ``show`` and ``gate`` print ``decision:
   indeterminate`` for the run. A CI log grepped for the verdict read an accept. It now
   leads with the run's decision as the others print it, then what the file stores.
2. ``onrecord show cmp.json`` opened with ``comparison 2 pairs, 9 checks, 5 measures; A
   5042dd6650e8 vs B …``, where ``compare`` opens with ``comparison 2 paired trials  A: …
   vs  B: …``. It now opens with compare's header, A and B by their reports' digests
   (the file holds no other name for them).
3. ``onrecord check --help`` imported the remittance domain (to list its check names) and
   the runner: both are now left for a check that runs.

Real runs of the remittance environment; the partial one with an agent module of the
user's own that sleeps on seed 1 until the episode time limit stops it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord.domains._episode_checks import DOMAINS
from tests.cli_process import onrecord
from tests.sleeping_agent import write_sleeping_agent

STORED = "the policy's verdict on the 1 recorded: accept"
PARTIAL = f"indeterminate, incomplete run: 1 of 2 episodes recorded; {STORED}"


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of seeds 0 and 1 whose seed 1 timed out, accepted by its policy on seed 0."""
    root = tmp_path_factory.mktemp("partial")
    write_sleeping_agent(root / "mine", "agent_r53", seeds=(1,))
    policy = root / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "expected_changes"\n')
    run = root / "run"
    done = onrecord(
        *("run", "remittance", "--agent", "agent_r53:make", "--tasks", "full-01"),
        *("--seeds", "0-1", "--episode-timeout", "0.5", "--no-progress"),
        *("--policy", policy, "--out", run),
        pythonpath=root / "mine",
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "decision: indeterminate" in done.stdout, done.stdout
    return run


def _verified(path: Path) -> str:
    done = onrecord("verify", path, "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_verify_says_a_partial_runs_decision_as_run_and_show_print_it(partial_run: Path) -> None:
    saved = json.loads((partial_run / "decision.json").read_text())
    # What is stored is unchanged (verified and hashed): the policy's verdict.
    assert (saved["decision"]["decision"], saved["complete"]) == ("accept", False)
    out = _verified(partial_run / "decision.json")
    assert f"run decision ({PARTIAL})  sha256:" in out, out
    assert "(accept" not in out, out
    shown = onrecord("show", partial_run / "decision.json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert shown.stdout.splitlines()[0].startswith(f"run decision {PARTIAL}  sha256:")
    # A copy elsewhere, not decided again, says the same first.
    copy = partial_run.parent / "copied.json"
    copy.write_bytes((partial_run / "decision.json").read_bytes())
    assert f"run decision ({PARTIAL}; not decided again:" in _verified(copy)


def test_a_regrade_of_a_partial_run_is_said_the_same(partial_run: Path) -> None:
    policy = partial_run.parent / "policy.toml"
    done = onrecord("regrade", partial_run, "--policy", policy, "--name", "again")
    assert done.returncode == 2, done.stdout + done.stderr  # never accepted
    out = _verified(partial_run / "regrades" / "again" / "decision.json")
    assert f"run decision ({PARTIAL})" in out, out


def test_a_complete_runs_decision_reads_as_before(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = onrecord(
        *("run", "remittance", "--agent", "careful", "--tasks", "full-01"),
        *("--seeds", "0-1", "--out", run, "--no-progress"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run decision (accept, 2 of 2 episodes)  sha256:" in _verified(run / "decision.json")


def _header(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("comparison "))


def test_show_of_a_saved_comparison_opens_as_compare_does(tmp_path: Path) -> None:
    for agent, name in (("careful", "a"), ("double_poster", "b")):
        done = onrecord(
            *("run", "remittance", "--agent", agent, "--tasks", "full-01"),
            *("--seeds", "0-1", "--out", tmp_path / name, "--no-progress"),
        )
        assert done.returncode in (0, 1), done.stdout + done.stderr
    saved = tmp_path / "cmp.json"
    compared = onrecord("compare", "a", "b", "--json", saved, cwd=tmp_path)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    data = json.loads(saved.read_text())
    a, b = data["report_a"][:16], data["report_b"][:16]
    header = _header(compared.stdout)
    assert header == (
        f"comparison 2 paired trials  A: careful on remittance (a) sha256:{a}  vs  "
        f"B: double_poster on remittance (b) sha256:{b}"
    ), header
    shown = onrecord("show", saved)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    lines = shown.stdout.splitlines()
    # compare's header without the labels the file does not hold
    assert lines[0] == f"comparison 2 paired trials  A: sha256:{a}  vs  B: sha256:{b}"
    assert lines[1].startswith(f"  saved comparison sha256:{data['digest'][:16]}: 9 checks, ")
    assert [line for line in lines if line.startswith("comparison ")] == lines[:1]
    summary = f"2 paired trials, A: sha256:{a} vs B: sha256:{b}; 9 checks, 5 measures"
    assert f"comparison ({summary})" in _verified(saved)


def test_check_help_lists_the_domains_checks_without_importing_it() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "onrecord", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert not [name for name in imported if name.startswith("onrecord.domains.remittance")]
    assert "onrecord.runner._regrade" not in imported
    help_text = " ".join(done.stdout.split())
    assert "its domain's allocations_sum_to_line, answer_reports_done," in help_text


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda domain: domain.name)
def test_a_domains_listed_check_names_are_its_checks(domain: object) -> None:
    """The names ``check --help`` lists without importing the domain are its checks'."""
    from onrecord.domains._episode_checks import DomainChecks

    assert isinstance(domain, DomainChecks)
    assert domain.names == tuple(sorted(check.name for check in domain.checks()))
