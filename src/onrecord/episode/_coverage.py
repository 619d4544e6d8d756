"""How an episode ended, and what it leaves unmeasured (coverage issues).

Both are derived from the recorded facts only, so verification can recompute them and
refuse a record whose stored values disagree.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ENDINGS", "coverage_issues", "ending"]

ENDINGS = ("terminated", "truncated", "returned", "step_limit", "interact_error", "setup_error")


def ending(data: dict[str, Any]) -> str:
    """One of ``ENDINGS``: the first that applies, in the order of that tuple's meaning."""
    if (
        any(event["phase"] in ("factory",) for event in data["events"])
        or data["initial"]["reset_error"] is not None
    ):
        return "setup_error"
    steps = data["steps"]
    if steps["terminated"] and steps["terminated"][-1]:
        return "terminated"
    if steps["truncated"] and steps["truncated"][-1]:
        return "truncated"
    if "step_limit" in steps["status"]:
        return "step_limit"
    interact = data["interact"]
    if interact is not None and interact["error"] is not None:
        return "interact_error"
    return "returned"


def coverage_issues(data: dict[str, Any], *, legacy: bool = False) -> list[str]:
    """Every reason the episode's evidence is incomplete, as sentences. ``legacy``: as
    records saved before 2026-12-02 worded a refused call ("reset failed: …"), which
    verification still accepts."""
    issues = _ending_issues(data) + _step_issues(data["steps"]) + _observer_issues(data)
    issues += [_event_issue(event, legacy) for event in data["events"]]
    cleanup = data["cleanup"]
    if cleanup["ok"] is False:
        issues.append(
            f"cleanup not confirmed: close() raised {cleanup['error']['type']}: "
            f"{cleanup['error']['message']}"
        )
    return issues


def _event_issue(event: dict[str, Any], legacy: bool) -> str:
    """A factory that raised failed; a lifecycle error is a call capture refused (a
    reset inside interact, a step while one was in flight) or steps that went around
    it (a TimeLimit count): nothing there failed, so it is not worded as a failure."""
    lifecycle = event["type"].rsplit(".", 1)[-1] == "LifecycleError"
    what = (
        f"lifecycle error at {event['phase']}"
        if lifecycle and not legacy
        else f"{event['phase']} failed"
    )
    return f"{what}: {event['type']}: {event['message']}"


def _ending_issues(data: dict[str, Any]) -> list[str]:
    ended = data["ended"] if "ended" in data else ending(data)
    completion = data["environment"]["completion"]
    if ended == "setup_error":
        reset_error = data["initial"]["reset_error"]
        return (
            [f"reset failed: {reset_error['type']}: {reset_error['message']}"]
            if reset_error
            else []
        )
    if ended in ("terminated", "truncated"):
        if completion in (ended, "either"):
            return []
        return [f"the episode was {ended}, but the task's declared completion is {completion}"]
    if ended == "step_limit":
        return [
            f"max_steps={data['environment']['max_steps']} was reached before the episode ended"
        ]
    if ended == "interact_error":
        error = data["interact"]["error"]
        return [f"interact raised {error['type']}: {error['message']}"]
    return ["interact returned before the episode ended"]


def _step_issues(steps: dict[str, Any]) -> list[str]:
    if not any(steps["error"]):  # the common case: nothing refused or raised
        return []
    issues = []
    for index, (status, error) in enumerate(zip(steps["status"], steps["error"], strict=True)):
        if status in ("invalid_action", "env_error", "lifecycle"):
            issues.append(f"step {index} {status.replace('_', ' ')}: {error['message']}")
    return issues


def _observer_issues(data: dict[str, Any]) -> list[str]:
    issues = []
    if data["initial"]["observer_error"]:
        issues.append(f"observer failed after reset: {data['initial']['observer_error']}")
    errors = data["steps"]["observer_error"]
    if any(errors):  # one C pass in the common case of none
        issues += [
            f"observer failed after step {index}: {error}"
            for index, error in enumerate(errors)
            if error
        ]
    if data["final_observer_error"]:
        issues.append(f"observer failed before cleanup: {data['final_observer_error']}")
    return issues
