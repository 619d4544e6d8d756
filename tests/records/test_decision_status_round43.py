"""A saved decision's requirement statuses follow from its own counts and thresholds.

``verify`` of a ``gate --output`` decision with no report beside it checked that the
verdict follows from the requirements' statuses, but not that each status follows from
its counts: a failed requirement edited to "met" (its reason dropped, the verdict made
accept) and re-sealed verified, "0 of 2 passed at min_pass_rate 1.0" accepted. Each
status is now ruled again from the saved counts by the policy's own rule.

Real FrozenLake episodes, real policies, records re-sealed after editing.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement, EvaluationReport
from onrecord._canonical import content_digest, record_bytes
from onrecord.cli._decisions import decision_record
from onrecord.cli._records import load_any
from onrecord.episode import EpisodeEvidence, evaluate_episodes
from onrecord.errors import OnrecordError
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from tests.cli_process import onrecord

AGENTS = tuple(FROZENLAKE_AGENTS)  # walks_to_goal, walks_into_hole, gives_up_early


@functools.cache
def _episode(agent: str, seed: int) -> EpisodeEvidence:
    return run_gym_task(frozenlake_task(), FROZENLAKE_AGENTS[agent](), seed=seed)


def _report(agents: list[str]) -> EvaluationReport:
    episodes = [_episode(agent, seed) for seed, agent in enumerate(agents)]
    return evaluate_episodes(episodes, list(frozenlake_task().checks))


def _saved(policy: AcceptancePolicy, report: EvaluationReport, folder: Path) -> Path:
    path = folder / "decision.json"
    path.write_bytes(decision_record(policy.evaluate(report)))
    return path


def _resealed(path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    record = orjson.loads(path.read_bytes())
    record.pop("digest")
    edit(record)
    path.write_bytes(record_bytes({**record, "digest": content_digest(record)}))
    return path


def _made_met(index: int) -> Callable[[dict[str, Any]], None]:
    """A failed requirement made "met" as a forger would: its reason dropped and the
    verdict following, so that the verdict check alone passes."""

    def edit(record: dict[str, Any]) -> None:
        requirement = record["requirements"][index]
        record["reasons"].remove(requirement["explanation"])
        requirement["status"] = "met"
        record["decision"] = "accept" if not record["reasons"] else record["decision"]

    return edit


def test_a_failed_requirement_edited_to_met_is_refused(tmp_path: Path) -> None:
    report = _report(["walks_into_hole", "walks_into_hole"])
    policy = AcceptancePolicy((CheckRequirement("reached_goal", min_pass_rate=1.0),))
    path = _saved(policy, report, tmp_path)
    assert onrecord("verify", path).returncode == 0  # the honest reject verifies
    _resealed(path, _made_met(0))
    for command in ("verify", "show"):
        done = onrecord(command, path)
        message = " ".join(done.stderr.split())
        # Before: verified, "policy decision: accept".
        assert done.returncode == 3, done.stdout + done.stderr
        assert "requirement 0 ('reached_goal') says 'met'" in message
        assert "0 passed, 2 failed, 0 not measured, 1 cases" in message
        assert "make it 'failed'" in message


def test_a_lower_bound_without_its_interval_is_refused(tmp_path: Path) -> None:
    report = _report(["walks_to_goal"] * 3)
    policy = AcceptancePolicy((CheckRequirement("reached_goal"),))
    path = _saved(policy, report, tmp_path)
    # The lower bound is what a "met" would rest on, and the interval is not there.
    _resealed(path, lambda record: record["requirements"][0].update(min_lower_bound=0.9))
    with pytest.raises(OnrecordError, match="has min_lower_bound but no 'interval'"):
        load_any(path)


def test_a_requirement_that_matched_nothing_cannot_count_results(tmp_path: Path) -> None:
    report = _report(["walks_to_goal"])
    policy = AcceptancePolicy((CheckRequirement("nope"), CheckRequirement("reached_goal")))
    path = _saved(policy, report, tmp_path)
    load_any(path)  # honest: "nope" is undecided with nothing counted
    _resealed(path, lambda record: record["requirements"][0].update(passed=1))
    with pytest.raises(OnrecordError, match="matched no check but counts results"):
        load_any(path)


_THRESHOLD = st.fixed_dictionaries(
    {
        "check": st.sampled_from(["reached_goal", "no_hole_visited", "*", "nope"]),
        "critical": st.booleans(),
        "min_pass_rate": st.sampled_from([0.1, 0.5, 2 / 3, 0.9, 1.0]),
        "min_cases": st.integers(1, 3),
        "min_coverage": st.sampled_from([0.25, 0.5, 1.0]),
        "min_lower_bound": st.none() | st.sampled_from([0.05, 0.3, 0.5, 0.8]),
    }
)


@given(
    agents=st.lists(st.sampled_from(AGENTS), min_size=1, max_size=6),
    thresholds=st.lists(_THRESHOLD, min_size=1, max_size=3),
)
def test_every_honest_decision_verifies(
    agents: list[str], thresholds: list[dict[str, Any]]
) -> None:
    # The status rule applied to saved counts must agree with the rule applied to the
    # report itself, whatever the mix of passes, failures and unmeasured results.
    policy = AcceptancePolicy(tuple(CheckRequirement(**item) for item in thresholds))
    with tempfile.TemporaryDirectory() as folder:
        path = _saved(policy, _report(agents), Path(folder))
        load_any(path)  # raises on any refusal
