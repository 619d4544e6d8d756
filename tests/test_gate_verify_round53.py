"""`onrecord verify` of the decision `onrecord gate RUN --output` saves for a partial run.

Gate never accepts a run missing planned episodes: it saves the policy's decision made
indeterminate, with a reason ("the run is incomplete: 1 planned episodes have no trial
…"). With the report and policy beside the decision, `verify` decided it again with the
policy alone and refused every honest one as "changed after it was decided": a CI job
that gates a partial run and verifies its artifacts got a false tamper alarm. It is now
decided again as gate decides: exactly, from the run's plan, beside the run's own
report.json; beside a copied report, as the policy's decision made indeterminate by a
reason of gate's form naming episodes the report has no trial of. Tampered records are
still refused.

Real runs of the remittance environment: one whose seed-1 episode times out (an agent
module of the user's own that sleeps), and a complete one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.policy import AcceptancePolicy
from tests.cli_process import onrecord
from tests.sleeping_agent import write_sleeping_agent

REASON = (
    "the run is incomplete: 1 planned episodes have no trial: 1 timed out (full-01#1); "
    "a partial run is never accepted (`onrecord run --resume` retries them)"
)


def _run(root: Path, agent: str, pythonpath: Path | None = None, timeout: int = 2) -> Path:
    """A run of full-01 with seeds 0 and 1, and ``policy.json`` (one requirement) in
    ``root``; an episode is stopped after ``timeout`` seconds."""
    policy = root / "policy.json"
    if not policy.exists():
        toml = root / "policy.toml"
        toml.write_text('[[requirements]]\ncheck = "expected_changes"\n')
        AcceptancePolicy.load(toml).save_json(policy)
    run = root / "run"
    done = onrecord(
        *("run", "remittance", "--agent", agent, "--tasks", "full-01", "--seeds", "0-1"),
        *("--episode-timeout", str(timeout), "--no-progress", "--policy", policy, "--out", run),
        pythonpath=pythonpath,
        timeout=180,
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr
    return run


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("partial")
    write_sleeping_agent(root / "mine", "agent53g", seeds=(1,))
    run = _run(root, "agent53g:make", pythonpath=root / "mine")
    assert not (run / "regrades").exists()
    return run


@pytest.fixture(scope="module")
def complete(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A limit no careful episode reaches: on a loaded CI machine one took more than 2 s,
    # and the run meant to be complete was not.
    return _run(tmp_path_factory.mktemp("complete"), "careful", timeout=120)


def _gate(run: Path, policy: Path, output: Path) -> int:
    done = onrecord("gate", run, "--policy", policy, "--output", output)
    assert output.is_file(), done.stdout + done.stderr
    return done.returncode


def _artifacts(run: Path, folder: Path, policy_at: Path | None = None) -> Path:
    """A CI job's artifacts: the run's report, its policy (in ``folder``, or
    ``policy_at``) and the decision gate saved, ``folder/decision.json``."""
    folder.mkdir(parents=True)
    shutil.copy(run / "report.json", folder / "report.json")
    policy = policy_at or folder / "policy.json"
    shutil.copy(run.parent / "policy.json", policy)
    _gate(run, policy, folder / "decision.json")
    return folder / "decision.json"


def _in_run(run: Path, folder: Path) -> Path:
    """A copy of ``run`` with its policy and gate's decision saved in it (``gated.json``:
    ``decision.json`` is the run's own), beside the run's report.json."""
    shutil.copytree(run, folder)
    shutil.copy(run.parent / "policy.json", folder / "policy.json")
    _gate(folder, folder / "policy.json", folder / "gated.json")
    return folder / "gated.json"


def _verify(path: Path) -> tuple[int, str]:
    done = onrecord("verify", path, "--no-progress")
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def _resealed(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """``path`` edited and sealed again with a digest of its new content."""
    data = json.loads(path.read_text())
    data.pop("digest")
    edit(data)
    path.write_bytes(record_bytes({**data, "digest": content_digest(data)}))


def test_an_honest_partial_runs_decision_verifies_where_ci_keeps_it(
    partial: Path, tmp_path: Path
) -> None:
    saved = _in_run(partial, tmp_path / "run")
    assert json.loads(saved.read_text())["reasons"] == [REASON]
    code, out = _verify(saved)
    assert code == 0, out
    assert "as policy.json decides for its run (1 of 2 planned episodes recorded)" in out
    # An artifacts folder with the report, policy and decision; and a policy two up.
    for saved, policy in (
        (_artifacts(partial, tmp_path / "artifacts"), "policy.json"),
        (_artifacts(partial, tmp_path / "ci/out", tmp_path / "ci/policy.json"), "../policy.json"),
    ):
        code, out = _verify(saved)
        assert code == 0, out
        assert (
            f"decides report.json, as {policy} decides, made indeterminate by its run being "
            "incomplete (1 planned episode with no trial, taken as it says" in out
        ), out
    # The run holding a decision of its own verifies as before.
    code, out = _verify(tmp_path / "run")
    assert code == 0, out


def _accept(data: dict[str, Any]) -> None:
    data.update(decision="accept", reasons=[])


def _indeterminate_without_reason(data: dict[str, Any]) -> None:
    data["reasons"] = []


def _reason(text: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.update(reasons=[text])


def _another_reason(data: dict[str, Any]) -> None:
    data["reasons"] = ["the policy was waived for this release", *data["reasons"]]


def _accept_keeping_reason(data: dict[str, Any]) -> None:
    data["decision"] = "accept"


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_accept_keeping_reason, "says 'accept'"),
        (_indeterminate_without_reason, "make it 'accept'"),
        (_another_reason, "make it 'accept'"),
        (_reason(REASON.replace("1 planned", "3 planned")), "not the incomplete-run reason"),
        (_reason(REASON.replace(": 1 timed out", ": 4 timed out")), "incomplete-run reason"),
        (_reason(REASON.replace("full-01#1", "full-01#0")), "full-01#0 has no trial"),
        (_reason(REASON.replace("the run", "this run")), "make it 'accept'"),
    ],
    ids=["accept", "no-reason", "added", "count", "causes", "held-episode", "other-text"],
)
def test_a_tampered_partial_runs_decision_is_refused_in_an_artifacts_folder(
    partial: Path,
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], None],
    said: str,
) -> None:
    saved = _artifacts(partial, tmp_path / "artifacts")
    assert _verify(saved)[0] == 0
    _resealed(saved, edit)
    code, out = _verify(saved)
    assert code == 3, out
    assert said in out, out
    assert "changed after it was decided" in out


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_accept, 'decision differs (saved "accept", decided "indeterminate")'),
        (_reason(REASON.replace("full-01#1", "full-01#0")), "reasons[0] differs"),
    ],
    ids=["accept", "episode"],
)
def test_beside_its_run_a_partial_runs_decision_is_decided_exactly(
    partial: Path,
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], None],
    said: str,
) -> None:
    """An accept claimed for the partial run (it follows from the requirements, and is
    the policy's decision on the episodes held) is refused where the run's plan is."""
    saved = _in_run(partial, tmp_path / "run")
    _resealed(saved, edit)
    code, out = _verify(saved)
    assert code == 3, out
    run = saved.parent
    assert f"{saved} is not what `onrecord gate` decides with {run}/policy.json for {run}" in out
    assert "(1 of 2 planned episodes recorded): " + said in out, out
    assert "changed after it was decided" in out


def _incomplete(episode: str) -> Callable[[dict[str, Any]], None]:
    """The decision made indeterminate by gate's reason naming ``episode``."""
    return lambda data: data.update(
        decision="indeterminate", reasons=[REASON.replace("full-01#1", episode)]
    )


def test_an_incomplete_reason_added_to_a_complete_runs_accept_is_refused(
    complete: Path, tmp_path: Path
) -> None:
    for saved, episode, said in (
        (
            _in_run(complete, tmp_path / "run"),
            "full-01#7",
            'decision differs (saved "indeterminate", decided "accept")',
        ),
        (_artifacts(complete, tmp_path / "artifacts"), "full-01#1", "full-01#1 has no trial"),
    ):
        assert json.loads(saved.read_text())["decision"] == "accept"
        assert _verify(saved)[0] == 0
        _resealed(saved, _incomplete(episode))
        code, out = _verify(saved)
        assert code == 3, out
        assert said in out, out
    assert "changed after it was decided" in out


def test_the_runs_own_and_a_regrades_decisions_of_a_partial_run_verify(
    partial: Path, tmp_path: Path
) -> None:
    """They keep the policy's decision and the run's plan (`complete: false`), and are
    decided again from them: no incomplete reason to mismatch."""
    run = tmp_path / "run"
    shutil.copytree(partial, run)
    done = onrecord("regrade", run, "--name", "again", "--no-progress")
    assert done.returncode == 2, done.stdout + done.stderr
    for path in (run, run / "decision.json", run / "regrades/again"):
        code, out = _verify(path)
        assert code == 0, out
    assert json.loads((run / "regrades/again/decision.json").read_text())["complete"] is False


def test_beside_its_run_a_decision_verifies_after_a_resume_failed_its_episode_otherwise(
    partial: Path, tmp_path: Path
) -> None:
    """What stopped the missing episodes is read from errors.jsonl, which a resume failing
    them another way appends to (the report stays as it was): not a changed decision."""
    saved = _in_run(partial, tmp_path / "run")
    run = saved.parent
    later = {"case_id": "full-01", "repeat": 1, "error": "KeyError: 'line'", "time": 1.0}
    with (run / "errors.jsonl").open("ab") as errors:
        errors.write(record_bytes(later) + b"\n")
    assert _gate(run, run / "policy.json", tmp_path / "now.json") == 2
    assert "1 raised KeyError" in (tmp_path / "now.json").read_text()
    code, out = _verify(saved)
    assert code == 0, out
    assert "1 timed out" in saved.read_text()
