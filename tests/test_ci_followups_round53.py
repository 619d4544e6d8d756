"""Follow-ups of the CI walkthrough of docs/ci.md: what its commands say works pasted.

1. ``onrecord verify`` of a decision saved by ``gate --policy policy.toml --output``
   said "not decided again: that needs its policy … as policy.json …": a CI's policy is
   a hand-written ``policy.toml``. It is found where ``policy.json`` is, and used when
   its digest is the decision's; one of another digest is named, not used.
2. ``onrecord compare`` of a complete baseline and a partial candidate gave, besides
   the incomplete-run reason, "repeats or seeds differ for 1 cases (e.g. ['full-01'])":
   the missing episode again, blamed on the seeds, as a Python list. The locks are
   compared over the episodes both runs hold; real differences are still refused.
3. ``onrecord report RUN`` of an interrupted run said "`onrecord run --resume`
   completes an interrupted run", which refuses for want of a directory; it names the
   run, quoted for the shell, as ``regrade`` of such a run now does too.

Real runs of the remittance environment; the partial and interrupted ones with an
agent module of the user's own that sleeps on repeat 1 while a file ``slow`` is beside it.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from onrecord._lock_diff import lock_differences
from onrecord.html import report_data
from onrecord.policy import AcceptancePolicy
from tests.cli_process import line_after, onrecord
from tests.sleeping_agent import write_sleeping_agent

POLICY = """name = "release"
[[requirements]]
check = "expected_changes"
[[requirements]]
check = "only_expected_tables_changed"
"""


def _agents(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    if not folder.exists():
        write_sleeping_agent(folder, "ciagent53f", repeats=(1,))
    return folder


def _run(tmp_path: Path, out: str, agent: str, code: int, *options: str) -> None:
    done = onrecord(
        *("run", "remittance", "--agent", agent, "--tasks", "full-01", "--repeats", "2"),
        *("--episode-timeout", "0.5", "--no-progress", "--out", out, *options),
        pythonpath=_agents(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == code, done.stdout + done.stderr


# 1. verify finds the policy.toml the decision was gated with.


def test_verify_decides_again_with_the_policy_toml_it_was_gated_with(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(POLICY)
    (tmp_path / "runs").mkdir()
    for name, agent, code in (("baseline", "careful", 0), ("candidate", "ciagent53f:make", 2)):
        _run(tmp_path, f"runs/{name}", agent, code)
        saved = f"runs/{name}/gated.json"
        gated = onrecord(
            "gate", f"runs/{name}", "--policy", "policy.toml", "--output", saved, cwd=tmp_path
        )
        assert gated.returncode == code, gated.stdout + gated.stderr
        verified = onrecord("verify", saved, cwd=tmp_path)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        # Before: "not decided again: that needs its policy (digest …) as policy.json …".
        assert "as ../../policy.toml decides for its run" in verified.stdout, verified.stdout
        assert "not decided again" not in verified.stdout

    # The policy edited since: another digest, named rather than used or passed over.
    (tmp_path / "policy.toml").write_text(POLICY.replace('"release"', '"release-2"'))
    verified = onrecord("verify", "runs/baseline/gated.json", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "not decided again: that needs its policy" in verified.stdout
    assert "as policy.json or policy.toml beside it or up to two folders up" in verified.stdout
    assert "../../policy.toml is another policy, of digest " in verified.stdout


def test_a_policy_json_is_still_found_first(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(POLICY)
    (tmp_path / "runs").mkdir()
    _run(tmp_path, "runs/baseline", "careful", 0)
    gated = onrecord(
        *("gate", "runs/baseline", "--policy", "policy.toml"),
        *("--output", "runs/baseline/gated.json"),
        cwd=tmp_path,
    )
    assert gated.returncode == 0, gated.stdout + gated.stderr
    # The same policy saved as JSON one folder up: found before the TOML, as before.
    AcceptancePolicy.load(tmp_path / "policy.toml").save_json(tmp_path / "runs" / "policy.json")
    verified = onrecord("verify", "runs/baseline/gated.json", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "as ../policy.json decides for its run" in verified.stdout, verified.stdout


# 2. compare blames the missing episodes once, and real seed differences still.


def test_a_partial_candidate_is_not_also_refused_for_its_seeds(tmp_path: Path) -> None:
    _run(tmp_path, "baseline", "careful", 0)
    _run(tmp_path, "candidate", "ciagent53f:make", 2)  # full-01#1 timed out
    refused = onrecord("compare", "baseline", "candidate", cwd=tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "B (candidate) is an incomplete run" in refused.stderr
    # Before: a second reason, "repeats or seeds differ for 1 cases (e.g. ['full-01'])".
    assert "seeds differ" not in refused.stderr, refused.stderr
    assert "['" not in refused.stderr, refused.stderr

    # A partial candidate whose repeats do differ from the baseline's: still said.
    _run(tmp_path, "three", "careful", 0, "--repeats", "3")
    both = onrecord("compare", "three", "candidate", cwd=tmp_path)
    assert both.returncode == 3, both.stdout + both.stderr
    assert "B (candidate) is an incomplete run" in both.stderr
    assert "repeats or seeds differ for 1 case (full-01)" in both.stderr, both.stderr


def test_complete_runs_of_other_repeats_are_refused_naming_their_cases(tmp_path: Path) -> None:
    for out, repeats in (("two", "2"), ("three", "3")):
        done = onrecord(
            *("run", "remittance", "--agent", "careful", "--tasks", "full-01,full-02"),
            *("--repeats", repeats, "--out", out, "--no-progress"),
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    refused = onrecord("compare", "two", "three", cwd=tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "repeats or seeds differ for 2 cases (full-01, full-02)" in refused.stderr


def test_many_differing_cases_are_named_a_few_and_counted() -> None:
    def lock(repeats: int) -> dict[str, object]:
        cases = [
            {
                "case_id": f"c{n}",
                "content_digest": "0" * 64,
                "trials": [[r, None] for r in range(repeats)],
            }
            for n in range(5)
        ]
        return {"library": {}, "checks": {}, "environments": [], "cases": cases}

    assert lock_differences(lock(1), lock(2)) == [
        "repeats or seeds differ for 5 cases (c0, c1, c2 and 2 more)"
    ]


# 3. report (and regrade) of an interrupted run name it in the resume command.


def _interrupted(tmp_path: Path, out: str) -> None:
    """An `onrecord run` stopped by SIGTERM while its agent sleeps on full-01#1, after
    recording full-01#0 (the sleep outlasts the test: no race with the run's end)."""
    env = {**os.environ, "PYTHONPATH": str(_agents(tmp_path))}
    command = Path(sys.executable).parent / "onrecord"
    process = subprocess.Popen(
        [
            *(str(command), "run", "remittance", "--agent", "ciagent53f:make"),
            *("--tasks", "full-01", "--repeats", "2", "--workers", "1"),
            *("--no-progress", "--out", out),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    episodes = tmp_path / out / "episodes.jsonl"
    try:
        deadline = time.monotonic() + 60
        while not (episodes.is_file() and episodes.read_bytes().count(b"\n") >= 1):
            assert time.monotonic() < deadline, "the first episode was never recorded"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert not (tmp_path / out / "report.json").exists()


def test_report_of_an_interrupted_run_names_it_in_the_resume_command(tmp_path: Path) -> None:
    _interrupted(tmp_path, "my run")
    refused = onrecord("report", "my run", cwd=tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    # Before: "(`onrecord run --resume` completes an interrupted run)".
    command = line_after("(`", refused.stderr).split("`", 1)[0]
    assert shlex.split(command) == ["onrecord", "run", "--resume", "my run"], refused.stderr

    regraded = onrecord("regrade", "my run", "--no-progress", cwd=tmp_path)
    assert regraded.returncode == 2, regraded.stdout + regraded.stderr
    # Before: "never accepted (resume the run first)".
    said = line_after("never accepted: ", regraded.stdout)
    assert said.endswith(" records the rest, then regrade it again"), said
    assert shlex.split(said.split(" records the rest")[0]) == shlex.split(command)

    (tmp_path / "mine" / "slow").unlink()  # what stopped the run is fixed
    resumed = subprocess.run(
        shlex.split(command),
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": str(tmp_path / "mine"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr  # pasted, it works
    assert onrecord("report", "my run", cwd=tmp_path).returncode == 0


def test_an_out_of_date_grading_names_the_run_quoted(tmp_path: Path) -> None:
    """A run holding more recorded episodes than its report.json grades (a grading
    killed before writing the new report.json leaves that): the page's finding gives
    the resume command with the run's path quoted."""
    _run(tmp_path, "my run", "ciagent53f:make", 2)  # graded: 1 of 2 episodes
    earlier = (tmp_path / "my run" / "report.json").read_bytes()
    (tmp_path / "mine" / "slow").unlink()
    resumed = onrecord(
        "run", "--resume", "my run", "--no-progress", cwd=tmp_path, pythonpath=tmp_path / "mine"
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    (tmp_path / "my run" / "decision.json").unlink()
    (tmp_path / "my run" / "report.json").write_bytes(earlier)
    finding = report_data(tmp_path / "my run")["findings"][0]
    assert f"`onrecord run --resume {shlex.quote(str(tmp_path / 'my run'))}`" in finding, finding
