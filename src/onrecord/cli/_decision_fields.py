"""The fields of a saved decision that its verdict check does not reach, checked by type
and range before anything reads them.

A decision's digest is recomputed by whoever edits it, so a forged record verifies as
far as its fields are checked. A run's ``decision.json`` with ``"recorded": true`` was
summarized "True of 2 episodes", with ``-1`` "-1 of 2", with ``5`` an accept of "5 of 2
episodes"; a missing ``recorded`` was "malformed record (KeyError: 'recorded')". A gate
decision with ``min_pass_rate: 7`` showed a threshold of "≥ 700.0%", with ``true`` one
of "≥ 100.0%", and an interval saved as ``[0.9, 0.1]`` read "90.0% – 10.0%". Each is
now refused (exit 3) naming the field and what it must be.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onrecord._policy_rules import requirement_from_dict, ruling
from onrecord._record_fields import field_error, is_count, is_digest
from onrecord.errors import ConsistencyError, OnrecordError, SchemaError
from onrecord.policy import CheckRequirement

__all__ = [
    "check_requirement_fields",
    "check_run_decision_fields",
    "field_error",
    "is_count",
    "is_digest",
]

_VERDICTS = ("accept", "reject", "indeterminate")
# What a requirement's threshold is saved as (``CheckRequirement.to_dict``).
_THRESHOLD_KEYS = ("check", "critical", "min_pass_rate", "min_cases", "min_coverage")


def check_run_decision_fields(path: Path, data: Mapping[str, Any]) -> None:
    """A run's (or regrade's) ``decision.json`` outside its ``decision`` body, when it is
    not in its run to be decided again: episode counts, ``complete``, the report digest,
    and a body that is an object with a verdict."""
    for field in ("recorded", "expected"):
        if not is_count(data.get(field)):
            raise field_error(path, field, "a whole number of episodes, 0 or more", data.get(field))
    recorded, expected = data["recorded"], data["expected"]
    if recorded > expected:  # a run records only the episodes it planned
        raise SchemaError(
            f"{path}: 'recorded' ({recorded}) must be at most 'expected' ({expected}): a run "
            "records only its planned episodes; the file was edited"
        )
    if data.get("complete") is not (recorded == expected):
        raise field_error(
            path,
            "complete",
            f"{str(recorded == expected).lower()} ({recorded} of {expected} episodes recorded)",
            data.get("complete"),
        )
    if not is_digest(data.get("report_digest")):
        raise field_error(
            path, "report_digest", "a sha256 digest (64 hex digits)", data.get("report_digest")
        )
    body = data.get("decision")
    if not isinstance(body, Mapping):
        raise field_error(path, "decision", "an object (the policy's decision)", body)
    if body.get("decision") not in _VERDICTS:
        raise field_error(
            path, "decision.decision", "accept, reject or indeterminate", body.get("decision")
        )


def check_requirement_fields(path: Path, body: Mapping[str, Any]) -> None:
    """The requirements of a decision ``body`` that ``check_decision_body`` passed (their
    counts, status and explanation): a threshold a policy can have, the checks each
    matched, and counts and an interval that can be so. ``show`` prints each of them.
    A decision inside its run is decided again instead, and refused by the first field
    that differs from the policy's decision."""
    for index, item in enumerate(body["requirements"]):
        _requirement(path, index, item)


def _requirement(path: Path, index: int, item: Mapping[str, Any]) -> None:
    where = f"requirement {index} ({item['check']!r:.40})"
    threshold = {key: item[key] for key in _THRESHOLD_KEYS if key in item}
    if "min_lower_bound" in item:
        threshold["min_lower_bound"] = item["min_lower_bound"]
    if "min_pass_rate" not in item:  # always saved: it has a default only in a policy
        raise SchemaError(f"{path}: {where} has no 'min_pass_rate'")
    try:
        requirement = requirement_from_dict(index, threshold)  # as a policy's is checked
    except OnrecordError as exc:
        raise SchemaError(f"{path}: {where}: {exc}") from exc
    matched = item.get("matched", [])
    if not isinstance(matched, list) or not all(isinstance(name, str) for name in matched):
        raise field_error(path, f"requirements[{index}].matched", "a list of check names", matched)
    if item["cases"] > item["passed"] + item["failed"]:  # cases with a measured result
        raise SchemaError(
            f"{path}: {where} counts {item['cases']} cases with a measured result, more "
            f"than its {item['passed'] + item['failed']} measured results; it was edited"
        )
    if "interval" in item and not _interval(item["interval"]):
        raise field_error(
            path,
            f"requirements[{index}].interval",
            "[low, high] with 0 ≤ low ≤ high ≤ 1",
            item["interval"],
        )
    _status_follows(path, where, requirement, item)


def _status_follows(
    path: Path, where: str, requirement: CheckRequirement, item: Mapping[str, Any]
) -> None:
    """The status the requirement's own counts and threshold give, as the policy rules
    them: "met" with 0 of 2 passed at min_pass_rate 1.0 verified, the verdict following
    from the forged status."""
    passed, failed, unmeasured = item["passed"], item["failed"], item["unmeasured"]
    if not item.get("matched"):  # no check matched: nothing counted, nothing decided
        status = "undecided"
        if passed or failed or unmeasured or item["cases"]:
            raise SchemaError(f"{path}: {where} matched no check but counts results; it was edited")
    elif passed + failed + unmeasured == 0:
        raise SchemaError(f"{path}: {where} matched checks but counts no result; it was edited")
    elif requirement.min_lower_bound is not None and "interval" not in item:
        raise SchemaError(
            f"{path}: {where} has min_lower_bound but no 'interval', which its status rests "
            "on; it was edited"
        )
    else:
        low_high = item.get("interval", (0.0, 1.0))
        interval = (float(low_high[0]), float(low_high[1]))
        status = ruling(requirement, passed, failed, unmeasured, item["cases"], interval)[0]
    if item["status"] != status:
        raise ConsistencyError(
            f"{path}: {where} says {item['status']!r}, but its counts ({passed} passed, "
            f"{failed} failed, {unmeasured} not measured, {item['cases']} cases) make it "
            f"{status!r} under its own threshold: it was changed after it was decided"
        )


def _interval(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(type(end) in (int, float) and math.isfinite(end) for end in value)
        and 0 <= value[0] <= value[1] <= 1
    )
