"""Saved evidence, reports and policies verify themselves: any single changed byte or
value makes loading fail, and round trips keep the digest."""

from __future__ import annotations

import os
import pickle
import re
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.episode import EpisodeEvidence
from onrecord.errors import (
    ConsistencyError,
    DigestMismatch,
    OnrecordError,
    SchemaError,
)
from onrecord.report import EvaluationReport

POLICY = AcceptancePolicy(
    (
        CheckRequirement("reached_goal"),
        CheckRequirement("no_hole_visited", critical=False, min_pass_rate=0.5),
    )
)


def _loader(kind: str) -> Any:
    return {
        "episode": EpisodeEvidence.load,
        "report": EvaluationReport.load,
        "policy": AcceptancePolicy.load,
    }[kind]


@pytest.fixture(scope="module")
def saved(
    tmp_path_factory: pytest.TempPathFactory,
    goal_episode: EpisodeEvidence,
    frozenlake_report: EvaluationReport,
) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("records")
    goal_episode.save_json(folder / "episode.json")
    frozenlake_report.save_json(folder / "report.json")
    POLICY.save_json(folder / "policy.json")
    return {
        kind: (folder / f"{kind}.json").read_bytes() for kind in ("episode", "report", "policy")
    }


@pytest.mark.parametrize("kind", ["episode", "report", "policy"])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_single_changed_byte_makes_loading_fail(
    kind: str, saved: dict[str, bytes], tmp_path: Path, data: st.DataObject
) -> None:
    original = saved[kind]
    position = data.draw(st.integers(0, len(original) - 2))  # the trailing newline aside
    replacement = data.draw(st.integers(0, 255).filter(lambda b: b != original[position]))
    tampered = bytearray(original)
    tampered[position] = replacement
    path = tmp_path / f"{kind}.json"
    path.write_bytes(bytes(tampered))
    with pytest.raises(OnrecordError):
        _loader(kind)(path)


@pytest.mark.parametrize("kind", ["episode", "report", "policy"])
def test_untouched_files_load(kind: str, saved: dict[str, bytes], tmp_path: Path) -> None:
    path = tmp_path / f"{kind}.json"
    path.write_bytes(saved[kind])
    assert _loader(kind)(path).digest == orjson.loads(saved[kind])["digest"]


def test_changed_value_with_recomputed_layout_is_a_digest_mismatch(
    goal_episode: EpisodeEvidence,
) -> None:
    data = goal_episode.data
    data["final_state"] = {"tile": 14}
    with pytest.raises(DigestMismatch, match="the evidence was changed after it was recorded"):
        EpisodeEvidence.from_dict(data)


def test_data_is_a_detached_copy(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data
    data["final_state"]["tile"] = 0
    assert goal_episode.final_state == {"tile": 15}
    states = goal_episode.states()
    states[-1]["tile"] = 0
    assert goal_episode.states()[-1] == {"tile": 15}


def test_evidence_is_immutable(goal_episode: EpisodeEvidence) -> None:
    with pytest.raises(AttributeError, match="immutable"):
        goal_episode._digest = "x"  # type: ignore[misc]


def test_wrong_schema_is_named(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data | {"schema": "other/v9"}
    with pytest.raises(
        SchemaError, match=re.escape("schema is 'other/v9', expected 'onrecord.episode/v1'")
    ):
        EpisodeEvidence.from_dict(data)


@pytest.mark.parametrize("kind", ["report", "policy"])
def test_another_saved_record_loaded_as_evidence_names_its_schema(
    kind: str, saved: dict[str, bytes], tmp_path: Path
) -> None:
    # Its digest verifies (it is a sound record), but it is not an episode.
    path = tmp_path / f"{kind}.json"
    path.write_bytes(saved[kind])
    with pytest.raises(SchemaError, match=r"expected 'onrecord.episode/v1'"):
        EpisodeEvidence.load(path)


def _resealed(data: dict[str, Any]) -> dict[str, Any]:
    from onrecord._canonical import content_digest

    return data | {"digest": content_digest(data)}


def test_step_indices_out_of_order_are_inconsistent(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data
    data["steps"]["transition_index"] = list(reversed(data["steps"]["transition_index"]))
    with pytest.raises(ConsistencyError, match="transition_index"):
        EpisodeEvidence.from_dict(_resealed(data))


def test_data_after_the_end_is_inconsistent(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data
    steps = data["steps"]
    steps["terminated"][0] = True  # claims the episode ended at step 0
    with pytest.raises(ConsistencyError, match="after the episode ended at step 0"):
        EpisodeEvidence.from_dict(_resealed(data))


def test_case_identity_must_verify(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data
    data["case"]["input"] = "something else"
    with pytest.raises(ConsistencyError, match="case identity does not verify"):
        EpisodeEvidence.from_dict(_resealed(data))


def test_missing_field_is_named(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data
    del data["cleanup"]
    with pytest.raises(SchemaError, match="field 'cleanup' is missing"):
        EpisodeEvidence.from_dict(_resealed(data))


def test_report_round_trip_keeps_digest(
    frozenlake_report: EvaluationReport, tmp_path: Path
) -> None:
    frozenlake_report.save_json(tmp_path / "r.json")
    loaded = EvaluationReport.load(tmp_path / "r.json")
    assert loaded.digest == frozenlake_report.digest
    assert loaded.lock == frozenlake_report.lock


def test_report_lock_must_match_trials(frozenlake_report: EvaluationReport) -> None:
    data = frozenlake_report.to_dict()
    data["lock"]["checks"]["reached_goal"] = "v2"
    from onrecord._canonical import content_digest

    data["digest"] = content_digest(data)
    # Resealed, so the digest verifies: only the lock check can refuse it.
    with pytest.raises(ConsistencyError, match="lock does not match its trials"):
        EvaluationReport.from_dict(data)


def test_evidence_pickles_as_its_bytes_and_is_verified_on_arrival(
    cartpole_episode: EpisodeEvidence,
) -> None:
    copy = pickle.loads(pickle.dumps(cartpole_episode))
    assert copy == cartpole_episode
    assert copy.to_bytes() == cartpole_episode.to_bytes()
    assert copy.transitions() == cartpole_episode.transitions()
    pickled = bytearray(pickle.dumps(cartpole_episode))
    at = pickled.index(b'"ended":"') + len(b'"ended":"')
    pickled[at] = ord("x") if pickled[at] != ord("x") else ord("y")  # same length
    with pytest.raises(DigestMismatch):
        pickle.loads(bytes(pickled))


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_saved_files_honour_the_umask(
    goal_episode: EpisodeEvidence, tmp_path: Path, umask: int, mode: int
) -> None:
    # Written through a private temporary file and renamed; the result is shared like a
    # file written with open() would be.
    previous = os.umask(umask)
    try:
        path = goal_episode.save_json(tmp_path / "episode.json")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(Path(path).stat().st_mode) == mode
    assert EpisodeEvidence.load(path) == goal_episode
