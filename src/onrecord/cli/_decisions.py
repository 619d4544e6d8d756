"""Decisions and comparisons as saved records, and their checks.

``onrecord gate --output`` saves ``onrecord.decision/v1`` (the schema the remittance
suite's ``NAME.decision.json`` has), the ledger experiment ``onrecord.ledger-decision/v1``
and ``onrecord compare --json`` ``onrecord.comparison/v1``: each carries a digest, and
what it says must follow from its own numbers (a decision from its requirements'
statuses; a comparison's p-values from its discordant counts, in
``_comparison_fields``). A decision beside the report it decides (``decision.json`` /
``report.json``, ``NAME.decision.json`` / ``NAME.report.json``) must decide that report,
and with the policy it names found nearby (``policy.json``, else a CI's hand-written
``policy.toml``, beside it or up to two folders up) is decided again, as ``gate``
decides it (a partial run's, made indeterminate: ``_gate_decided``); when either is
missing the summary says it was not decided again, and what that needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from onrecord._canonical import content_digest, record_bytes
from onrecord.cli._bundle import Bundle, digested
from onrecord.cli._comparison_fields import verify_comparison
from onrecord.cli._decision_fields import check_requirement_fields, is_count, is_digest
from onrecord.cli._gate_decided import decided_again
from onrecord.compare import Comparison
from onrecord.errors import ConsistencyError, OnrecordError, SchemaError
from onrecord.policy import INCOMPLETE_RUN, AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport

__all__ = [
    "COMPARISON_SCHEMA",
    "DECISION_SCHEMA",
    "LEDGER_DECISION_SCHEMA",
    "check_decision_body",
    "comparison_record",
    "decision_record",
    "verify_comparison",
    "verify_decision",
]

DECISION_SCHEMA = "onrecord.decision/v1"
LEDGER_DECISION_SCHEMA = "onrecord.ledger-decision/v1"
COMPARISON_SCHEMA = "onrecord.comparison/v1"


def _sealed(schema: str, body: Mapping[str, Any]) -> bytes:
    record = {"schema": schema, **body}
    return record_bytes({**record, "digest": content_digest(record)})


def decision_record(decision: PolicyDecision) -> bytes:
    """What ``onrecord gate --output`` writes: the decision with schema and digest."""
    return _sealed(DECISION_SCHEMA, decision.to_dict())


def comparison_record(comparison: Comparison) -> bytes:
    """What ``onrecord compare --json`` writes: the comparison with schema and digest."""
    return _sealed(COMPARISON_SCHEMA, comparison.to_dict())


def _expect(condition: bool, path: Path, problem: str) -> None:
    if not condition:
        raise SchemaError(f"{path}: {problem}")


_K = TypeVar("_K")


def _field(path: Path, data: Mapping[str, Any], key: str, kind: type[_K]) -> _K:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise SchemaError(f"{path}: '{key}' must be a {kind.__name__}, not {value!r:.40}")
    return value


def check_decision_body(path: Path, body: Mapping[str, Any]) -> None:
    """A decision's fields, and that its verdict and reasons follow from its
    requirements' statuses and coverage issues as ``AcceptancePolicy.evaluate`` decides
    (or, saved by ``onrecord gate`` for a partial run, an accept made indeterminate)."""
    requirements = _field(path, body, "requirements", list)
    issues, reasons = (
        _field(path, body, "coverage_issues", list),
        _field(path, body, "reasons", list),
    )
    for field in ("report_digest", "policy_digest"):
        _expect(
            is_digest(body.get(field)), path, f"'{field}' must be a sha256 digest (64 hex digits)"
        )
    _expect(all(isinstance(item, str) for item in [*issues, *reasons]), path, "reasons are text")
    for index, item in enumerate(requirements):
        _expect(
            isinstance(item, dict)
            and isinstance(item.get("check"), str)
            and type(item.get("critical")) is bool
            and item.get("status") in ("met", "failed", "undecided")
            and all(is_count(item.get(k)) for k in ("passed", "failed", "unmeasured", "cases"))
            and isinstance(item.get("explanation"), str),
            path,
            f"requirement {index} is malformed (check, critical, status, counts, explanation)",
        )
    if any(r["status"] == "failed" and r["critical"] for r in requirements):
        verdict = "reject"
    elif any(r["status"] == "undecided" for r in requirements) or issues:
        verdict = "indeterminate"
    else:
        verdict = "accept"
    expected = [r["explanation"] for r in requirements if r["status"] != "met"]
    expected += [f"coverage: {issue}" for issue in issues]
    # `onrecord gate` on a partial run adds its reason to an accept (then indeterminate)
    # or an indeterminate, never to a reject.
    partial = (
        verdict != "reject"
        and body.get("decision") == "indeterminate"
        and reasons[:-1] == expected
        and bool(reasons)
        and reasons[-1].startswith(INCOMPLETE_RUN)
    )
    if not partial and body.get("decision") != verdict:
        raise ConsistencyError(
            f"{path} says {body.get('decision')!r}, but its requirements' statuses and "
            f"coverage issues make it {verdict!r} (with their reasons): it was changed "
            "after it was decided"
        )
    if not partial and reasons != expected:
        # The verdict follows; its reasons do not: say which reason, not the verdict twice.
        raise ConsistencyError(
            f"{path} says {verdict!r}, as its requirements' statuses and coverage issues "
            f"make it, but {_reasons_differ(requirements, reasons, expected)}: its "
            "'reasons' must be the explanation of each requirement not met, in order, then "
            "'coverage: ' and each coverage issue; it was changed after it was decided"
        )


def _reasons_differ(
    requirements: list[dict[str, Any]], reasons: list[str], expected: list[str]
) -> str:
    """The first way a decision's saved ``reasons`` differ from those its requirements
    and coverage issues give."""
    extra = next((reason for reason in reasons if reason not in expected), None)
    if extra is not None:
        met = next(
            (r for r in requirements if r["explanation"] == extra and r["status"] == "met"), None
        )
        if met is not None:
            return (
                f"its reasons include {extra!r:.120}, the explanation of requirement "
                f"{met['check']!r}, whose status is 'met'"
            )
        return f"its reasons include {extra!r:.120}, which none of them gives"
    missing = next((reason for reason in expected if reason not in reasons), None)
    if missing is not None:
        return f"its reasons leave out {missing!r:.120}"
    return "its reasons are in another order than theirs, or one is listed twice"


def _beside(path: Path, kind: str) -> Path:
    """``report.json`` beside ``decision.json``, ``NAME.report.json`` beside
    ``NAME.decision.json``."""
    name = path.name
    if name.endswith(".decision.json"):
        return path.with_name(name[: -len("decision.json")] + f"{kind}.json")
    return path.with_name(f"{kind}.json")


def _policy_near(path: Path, digest: str) -> tuple[Path | None, list[str]]:
    """The policy of ``digest`` near ``path``: a ``policy.json``, else (as CI keeps its
    policy) a ``policy.toml``; and what each ``policy.toml`` passed over is, since a
    hand-written policy edited after the decision is one to hear about, not to skip."""
    folders = (path.parent, *list(path.parent.parents)[:2])
    for folder in folders:  # policy.json first, found exactly as before TOML was read
        candidate = folder / "policy.json"
        if candidate.is_file():
            try:
                if AcceptancePolicy.load(candidate).digest == digest:
                    return candidate, []
            except OnrecordError:
                continue  # another file's problem, found on the way
    others = []
    for folder in folders:
        candidate = folder / "policy.toml"
        if not candidate.is_file():
            continue
        shown = os.path.relpath(candidate, path.parent)
        try:
            found = AcceptancePolicy.load(candidate).digest
        except OnrecordError:
            others.append(f"{shown} does not load as a policy")
            continue
        if found == digest:
            return candidate, []
        others.append(f"{shown} is another policy, of digest {found[:12]}")
    return None, others


def verify_decision(path: Path, data: dict[str, Any]) -> Bundle:
    """A gate, remittance-suite or ledger decision (see the module's docstring)."""
    digested(path, data)
    body = {key: value for key, value in data.items() if key not in ("schema", "digest")}
    _expect(
        body.get("decision") in ("accept", "reject", "indeterminate"),
        path,
        "'decision' must be accept, reject or indeterminate",
    )
    check_decision_body(path, body)
    check_requirement_fields(path, body)  # what `show` prints of it
    kind = "ledger decision" if data["schema"] == LEDGER_DECISION_SCHEMA else "policy decision"
    count = len(body["requirements"])
    summary = f"{body['decision']}, {count} requirement{'s' if count != 1 else ''}"
    report_path = _beside(path, "report")
    beside: tuple[EvaluationReport, ...] = ()  # for `show`: intervals clustered by case
    if report_path.is_file():
        report = EvaluationReport.load(report_path)
        if report.digest != body["report_digest"]:
            raise ConsistencyError(
                f"{path} decides a report other than the {report_path.name} beside it"
            )
        summary += f"; decides {report_path.name}"
        beside = (report,)
        summary += _decided_again(path, body, report, report_path)
    else:
        # Said as a copied run decision says it: a verdict that follows from its own
        # statuses is not one the policy was shown to make on the report.
        summary += (
            f"; not decided again: that needs the report it decides as {report_path.name} "
            f"beside it and its policy as {_POLICY_NEAR}, so only its digest, and its "
            "statuses and verdict against its own counts, were checked"
        )
    return Bundle(kind, data["digest"], summary, items=beside, record=data)


_POLICY_NEAR = "policy.json or policy.toml beside it or up to two folders up"


def _decided_again(
    path: Path, body: Mapping[str, Any], report: EvaluationReport, report_path: Path
) -> str:
    """Decide ``body`` again with its policy found near ``path``, or say it was not."""
    policy_path, others = _policy_near(path, body["policy_digest"])
    if policy_path is None:
        passed_over = "".join(f"; {other}" for other in others)
        return (
            f"; not decided again: that needs its policy (digest "
            f"{body['policy_digest'][:12]}) as {_POLICY_NEAR}{passed_over}"
        )
    # As `gate` decides: a partial run's decision is made indeterminate, with its reason.
    said = decided_again(path, body, policy_path, report, report_path)
    return f", as {os.path.relpath(policy_path, path.parent)} decides{said}"
