"""Probe 5: verification of the parts of an episode record the derived fields are
computed from. A record edited and re-hashed so that it contradicts itself is refused
naming the field (before: verified, or a KeyError from deep inside coverage)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import pytest

from onrecord import EvalCase
from onrecord._canonical import content_digest
from onrecord.episode import EpisodeEvidence
from onrecord.episode._coverage import coverage_issues, ending
from onrecord.errors import ConsistencyError, EvidenceError, SchemaError
from onrecord.integrations.gymnasium import capture_episode

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def three_steps() -> EpisodeEvidence:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in (0, 1, 0):
            env.step(action)

    return capture_episode(
        lambda: gym.make("CartPole-v1"),
        interact,
        case=EvalCase("probe", case_id="probe5-verify"),
        environment_id="CartPole-v1/native",
        observer_id="none/v1",
        observe=dict,
        seed=0,
        max_steps=50,
    )


def _rehashed(episode: EpisodeEvidence, edit: Edit, derive: bool = True) -> dict[str, Any]:
    """The record edited, its derived fields recomputed where that is possible, and its
    digest made to match: only the verifier's own rules can refuse it."""
    data = episode.data
    del data["digest"]
    edit(data)
    if derive:
        data["ended"] = ending(data)
        data["coverage_issues"] = coverage_issues(data)
    data["digest"] = content_digest(data)
    return data


def _lifecycle_before_any_end(data: dict[str, Any]) -> None:
    steps = data["steps"]
    steps["status"][1] = "lifecycle"
    steps["error"][1] = {"type": "onrecord.errors.LifecycleError", "message": "after the end"}
    steps["action_index"] = steps["transition_index"] = [0, 2]
    steps["action"] = [steps["action"][0], steps["action"][2]]
    for name in ("observation", "reward", "terminated", "truncated", "info"):
        steps[name] = [steps[name][0], steps[name][2]]
    data["measures"] = {"return": 2.0, "steps": 2}


def _set(*path: Any, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return edit


ERROR = {"type": "builtins.RuntimeError", "message": "boom"}
CONTRADICTIONS: dict[str, tuple[Edit, str]] = {
    "lifecycle-before-any-end": (_lifecycle_before_any_end, r"step 1 has status 'lifecycle'"),
    "completion-not-the-cases": (
        _set("environment", "completion", value="either"),
        r"environment\.completion is 'either' but the case declares 'terminated'",
    ),
    "error-on-a-successful-step": (
        _set("steps", "error", 0, value=ERROR),
        r"steps\.error\[0\] must be null",
    ),
    "state-beside-an-observer-error": (
        _set("steps", "observer_error", 1, value="ObserverError: no read"),
        r"steps\.observer_error\[1\] says the state could not be read",
    ),
    "final-state-beside-its-error": (
        _set("final_observer_error", value="ObserverError: no read"),
        r"final_observer_error says the state could not be read",
    ),
    "steps-after-a-failed-reset": (
        _set("initial", "reset_error", value=ERROR),
        r"interact must be recorded exactly when the environment was made and reset",
    ),
    "no-interact-yet-steps": (
        _set("interact", value=None),
        r"interact must be recorded exactly when",
    ),
    "interact-error-and-return": (
        _set("interact", value={"error": ERROR, "returned": 3}),
        r"interact holds both an error and a returned value",
    ),
    "cleanup-ok-with-an-error": (
        _set("cleanup", value={"ok": True, "error": ERROR}),
        r"cleanup\.error must be null when cleanup\.ok is True",
    ),
    "cleanup-null-without-a-factory-failure": (
        _set("cleanup", value={"ok": None, "error": None}),
        r"cleanup\.ok is null exactly when the factory failed",
    ),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTIONS))
def test_a_rehashed_record_that_contradicts_itself_is_refused(
    three_steps: EpisodeEvidence, name: str
) -> None:
    edit, message = CONTRADICTIONS[name]
    with pytest.raises(ConsistencyError, match=message):
        EpisodeEvidence.from_dict(_rehashed(three_steps, edit))


MALFORMED: dict[str, tuple[Edit, str]] = {
    "event-without-a-type": (
        _set("events", value=[{"phase": "step", "index": 0, "message": "x"}]),
        r"events\[0\] must be an error record",
    ),
    "event-with-a-text-index": (
        _set("events", value=[{"phase": "step", "index": "0", **ERROR}]),
        r"events\[0\]\.index must be a non-negative integer",
    ),
    "interact-without-its-error": (
        _set("interact", value={"returned": None}),
        r"interact must hold exactly 'error' and 'returned'",
    ),
    "interact-error-as-text": (
        _set("interact", value={"error": "boom", "returned": None}),
        r"interact\.error must be an error record",
    ),
    "cleanup-ok-as-text": (
        _set("cleanup", value={"ok": "yes", "error": None}),
        r"cleanup\.ok must be true, false or null",
    ),
    "cleanup-failed-without-its-error": (
        _set("cleanup", value={"ok": False, "error": None}),
        r"cleanup\.error must be an error record",
    ),
    "wall-time-as-text": (
        _set("steps", "wall_time_ns", 0, value="fast"),
        r"steps\.wall_time_ns must hold non-negative integers",
    ),
    "info-as-a-number": (_set("steps", "info", 0, value=5), r"steps\.info must hold one object"),
    "reset-info-as-a-list": (_set("initial", "info", value=[1]), r"initial\.info must be"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
@pytest.mark.parametrize("derive", [True, False], ids=["rederived", "as-edited"])
def test_a_rehashed_record_with_a_malformed_part_names_it(
    three_steps: EpisodeEvidence, name: str, derive: bool
) -> None:
    edit, message = MALFORMED[name]
    try:
        data = _rehashed(three_steps, edit, derive)
    except (KeyError, TypeError):  # coverage itself cannot read it: keep the old fields
        data = _rehashed(three_steps, edit, derive=False)
    with pytest.raises(SchemaError, match=message):
        EpisodeEvidence.from_dict(data)


def test_the_unedited_record_and_a_copy_still_verify(three_steps: EpisodeEvidence) -> None:
    assert EpisodeEvidence.from_dict(three_steps.data) == three_steps
    assert EpisodeEvidence.from_dict(copy.deepcopy(three_steps.data)) == three_steps


@pytest.mark.parametrize("failure", ["factory", "reset", "close", "observer", "interact"])
def test_every_failure_capture_records_still_verifies(failure: str) -> None:
    """The new rules hold for what capture writes when each part fails."""

    class Broken(gym.Wrapper[Any, Any, Any, Any]):
        def reset(self, **kwargs: Any) -> Any:
            if failure == "reset":
                raise RuntimeError("reset failed")
            return self.env.reset(**kwargs)

        def close(self) -> None:
            if failure == "close":
                raise RuntimeError("close failed")
            self.env.close()

    def factory() -> gym.Env[Any, Any]:
        if failure == "factory":
            raise RuntimeError("no environment")
        return Broken(gym.make("CartPole-v1"))

    def observe() -> Any:
        if failure == "observer":
            raise RuntimeError("no read")
        return {"ok": True}

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)
        if failure == "interact":
            raise RuntimeError("agent crashed")

    episode = capture_episode(
        factory,
        interact,
        case=EvalCase("probe", case_id="probe5-failures"),
        environment_id="e",
        observer_id="o",
        observe=observe,
        seed=0,
        max_steps=5,
    )
    try:
        assert EpisodeEvidence.from_dict(episode.data) == episode
    except EvidenceError as exc:  # pragma: no cover - the failure names what broke
        pytest.fail(f"capture wrote a record its verification refuses: {exc}")
