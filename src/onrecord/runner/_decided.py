"""Whether a run's saved decision is the decision its policy makes on its report.

``decision.json`` (the run's, or a regrade's) verified on its own digest, its verdict
following from its requirements' statuses, and its report digest naming the report
beside it. Everything else in it was taken on trust: a requirement's counts, its
threshold, the policy digest, ``complete``, ``recorded`` and ``expected`` changed and
the file re-sealed verified, and ``show``, ``report`` and a reviewer read the changed
numbers. The decision is now made again, by the policy in ``run.json`` (or the
regrade's own ``policy.json``) on the verified report, with the completeness facts the
run's plan gives, and the saved one must be exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onrecord._canonical import canonical_bytes
from onrecord.errors import ConsistencyError, OnrecordError
from onrecord.policy import AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport
from onrecord.runner._repair import DECISION_SCHEMA

if TYPE_CHECKING:
    from onrecord.runner._store import RunStore

__all__ = ["REGRADE_POLICY", "check_decided", "decision_body", "difference", "run_policy"]

REGRADE_POLICY = "policy.json"
"""A regrade decided by another policy than the run's (``regrade --policy``) keeps it."""


def decision_body(
    report: EvaluationReport, decision: PolicyDecision, expected: int
) -> dict[str, Any]:
    """What ``decision.json`` holds, without its digest."""
    return {
        "schema": DECISION_SCHEMA,
        "decision": decision.to_dict(),
        "expected": expected,
        "recorded": len(report.trials),
        "complete": len(report.trials) == expected,
        "report_digest": report.digest,
    }


def run_policy(store: RunStore) -> AcceptancePolicy:
    """The run's policy (``run.json`` ``protocol.policy``), its digest checked against
    its content: run.json re-sealed with a changed requirement and the old digest named
    a policy the run was not decided by."""
    try:
        return AcceptancePolicy.from_dict(store.protocol.policy)
    except OnrecordError as exc:
        raise ConsistencyError(
            f"{store.file('run.json')}: protocol.policy is not a policy saved whole ({exc}): "
            "run.json was edited after the run started; restore it from a copy of the run"
        ) from exc


def check_decided(
    store: RunStore, path: Path, data: Mapping[str, Any], report: EvaluationReport
) -> str:
    """Raise ``ConsistencyError`` unless ``data`` (``path``, a run's or a regrade's
    decision.json, deciding ``report``) is what its policy decides; returns what the
    summary says of it ("" when it is the run's policy)."""
    policy, note = _policy(store, path, data)
    expected = decision_body(report, policy.evaluate(report), store.protocol.episodes)
    saved = {key: value for key, value in data.items() if key != "digest"}
    where = _first_difference(saved, expected)
    if where is not None:
        raise ConsistencyError(
            f"{path} is not the decision the policy {note or 'of run.json'} makes on "
            f"{path.with_name('report.json')} for a run of {store.protocol.episodes} planned "
            f"episodes: {where} differs (saved {_short(_at(saved, where))}, decided "
            f"{_short(_at(expected, where))}); it was changed after it was decided: "
            "restore it from a copy of the run"
        )
    return ""


def _policy(store: RunStore, path: Path, data: Mapping[str, Any]) -> tuple[AcceptancePolicy, str]:
    policy = run_policy(store)
    named = _named_policy(data)
    own = path.parent.resolve() == store.path.resolve()  # the run's decision, not a regrade's
    if named == policy.digest:
        return policy, ""
    kept = path.with_name(REGRADE_POLICY)
    if not own and kept.is_file():  # a regrade's own policy
        kept_policy = AcceptancePolicy.load(kept)
        if kept_policy.digest == named:
            return kept_policy, str(kept)
        raise ConsistencyError(
            f"{path} names policy {str(named)[:12]}, but the regrade was decided by "
            f"{kept} ({kept_policy.digest[:12]}): one of the two was edited; restore the regrade"
        )
    if own:
        raise ConsistencyError(
            f"{path} names policy {str(named)[:12]}, not the run's ({policy.digest[:12]}, "
            "in run.json): it was changed after it was decided; restore it from a copy"
        )
    # Nothing to decide it again with: a policy digest changed and re-sealed, or a
    # regrade saved before regrades kept their policy. Its numbers cannot be vouched for.
    raise ConsistencyError(
        f"{path} names policy {str(named)[:12]}, neither the run's ({policy.digest[:12]}) "
        f"nor one kept beside it ({REGRADE_POLICY}): its decision cannot be made again, "
        "so it was edited (or made by an onrecord that did not keep the policy): run "
        "`onrecord regrade` again (with --policy FILE for another policy)"
    )


def _named_policy(data: Mapping[str, Any]) -> Any:
    decision = data.get("decision")
    return decision.get("policy_digest") if isinstance(decision, Mapping) else None


def difference(saved: Any, expected: Any) -> str | None:
    """Where ``saved`` first differs from ``expected`` and how (``decision differs
    (saved "accept", decided "indeterminate")``), or None when they are the same."""
    where = _first_difference(saved, expected)
    if where is None:
        return None
    return (
        f"{where} differs (saved {_short(_at(saved, where))}, "
        f"decided {_short(_at(expected, where))})"
    )


def _first_difference(saved: Any, expected: Any, where: str = "") -> str | None:
    """The path of the first value in which ``saved`` differs from ``expected``."""
    if isinstance(saved, Mapping) and isinstance(expected, Mapping):
        for key in sorted(set(saved) | set(expected)):
            if (key in saved) != (key in expected):  # an added or removed field
                return _join(where, key)
            found = _first_difference(saved.get(key), expected.get(key), _join(where, key))
            if found is not None:
                return found
        return None
    if isinstance(saved, list) and isinstance(expected, list) and len(saved) == len(expected):
        for index, (a, b) in enumerate(zip(saved, expected, strict=True)):
            found = _first_difference(a, b, f"{where}[{index}]")
            if found is not None:
                return found
        return None
    return None if canonical_bytes(saved) == canonical_bytes(expected) else where or "the record"


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _at(data: Any, where: str) -> Any:
    if where == "the record":
        return data
    for part in where.replace("[", ".[").split("."):
        if part.startswith("["):
            index = int(part[1:-1])
            data = data[index] if isinstance(data, list) and index < len(data) else None
        else:
            data = data.get(part) if isinstance(data, Mapping) else None
    return data


def _short(value: Any) -> str:
    text = canonical_bytes(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."
