"""Acceptance policies: a reducer from a report to one decision.

* a measured failure of a critical requirement **rejects**, even when other evidence is
  missing;
* otherwise any requirement, critical or advisory, that cannot be decided (no matching
  check, results missing beyond its ``min_coverage``, fewer measured cases than its
  ``min_cases``), or any coverage issue of any trial, makes the decision
  **indeterminate**;
* otherwise the report is **accepted**.

How each requirement is judged is in ``onrecord._policy_rules``.

``CheckRequirement.check`` may be a glob (``dynamics/pole_angle/*``): every check in the
report that matches is required in every trial, so a missing horizon is missing coverage.
A check whose name equals the pattern always matches, so a check literally named
``score[0]`` can be required by its name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from onrecord._canonical import (
    atomic_write_bytes,
    canonical_bytes,
    content_digest,
    load_record_bytes,
)
from onrecord._exceptions import naming_file
from onrecord._headline import INCOMPLETE_RUN, decision_headline
from onrecord._policy_fields import check_min_cases, directory_given, plain_scalar
from onrecord._policy_rules import (
    StatusTable,
    fraction,
    judge,
    refuse_unknown_keys,
    requirement_from_dict,
    toml_digest_matches,
    without_trial,
)
from onrecord.errors import DigestMismatch, OnrecordError, PolicyError, SchemaError
from onrecord.report import EvaluationReport

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = [
    "INCOMPLETE_RUN",
    "POLICY_SCHEMA",
    "AcceptancePolicy",
    "CheckRequirement",
    "Decision",
    "PolicyDecision",
    "RequirementOutcome",
]

POLICY_SCHEMA = "onrecord.policy/v1"
Decision = Literal["accept", "reject", "indeterminate"]
_EXIT_CODES: dict[Decision, Literal[0, 1, 2]] = {"accept": 0, "reject": 1, "indeterminate": 2}
"""A decision's exit code for CI gates (typed, so a user's ``sys.exit`` reads 0, 1 or 2)."""
# A misspelt key (``critcal = false``) must not silently leave a requirement at its
# default, so from_dict accepts these keys and no others.
_POLICY_KEYS = ("schema", "name", "requirements", "digest")
_REQUIREMENT_KEYS = (
    "check",
    "critical",
    "min_pass_rate",
    "min_cases",
    "min_coverage",
    "min_lower_bound",
)
# Written only when they differ from these defaults, so a policy saved before they
# existed keeps its bytes and digest.
_without_trial = without_trial  # its name before it moved to onrecord._policy_rules
_DEFAULTS: dict[str, Any] = {"min_cases": 1, "min_coverage": 1.0}


@dataclass(frozen=True)
class CheckRequirement:
    """One check (or glob of checks) a report must satisfy."""

    check: str
    """Check name or glob pattern, e.g. ``posted_once`` or ``dynamics/x/*``."""
    critical: bool = field(default=True, kw_only=True)
    """A measured failure of a critical requirement rejects; of a non-critical one, warns."""
    min_pass_rate: float = field(default=1.0, kw_only=True)
    """Share of (trial, check) results that must pass; 1.0 means every one."""
    min_cases: int = field(default=1, kw_only=True)
    """Distinct cases that must have a measured result before the requirement can be
    met; fewer leaves it undecided (a certain failure still fails)."""
    min_coverage: float = field(default=1.0, kw_only=True)
    """Share of (trial, check) results that must be measured (pass or fail). Below it the
    requirement is undecided; at or above it the pass rate is taken over the measured
    results. 1.0 (the default) means every result must be measured. A result that is not
    measured never counts as a pass either way."""
    min_lower_bound: float | None = field(default=None, kw_only=True)
    """When set, the low end of the pass rate's 95 % interval clustered by case
    (``onrecord._stats.clustered_interval``) must reach it as well as the pass rate
    reaching ``min_pass_rate``: 19 of 20 meets 0.95, but its interval reaches down to
    76 %. In (0, 1): no finite evidence puts the lower bound at 1."""

    def __post_init__(self) -> None:
        for label in ("critical", "min_pass_rate", "min_cases", "min_coverage", "min_lower_bound"):
            object.__setattr__(self, label, plain_scalar(getattr(self, label)))
        if not isinstance(self.check, str) or not self.check.strip():
            raise PolicyError(
                f"CheckRequirement.check must be a check name or glob, got {self.check!r}"
            )
        if type(self.critical) is not bool:
            raise PolicyError(
                f"CheckRequirement.critical must be True or False, got {self.critical!r}"
            )
        # bool is an int: ``min_pass_rate = true`` in TOML is a mistake, not 1.0.
        fraction("min_pass_rate", self.min_pass_rate)
        check_min_cases(self.min_cases)
        fraction("min_coverage", self.min_coverage)
        if self.min_lower_bound is not None:
            fraction("min_lower_bound", self.min_lower_bound, below_one=True)

    def to_dict(self) -> dict[str, Any]:
        """Portable form (``min_cases``, ``min_coverage`` and ``min_lower_bound`` only when
        not the default, so a policy saved before they existed keeps its digest)."""
        data: dict[str, Any] = {
            "check": self.check,
            "critical": self.critical,
            "min_pass_rate": float(self.min_pass_rate),
        }
        if self.min_cases != _DEFAULTS["min_cases"]:
            data["min_cases"] = self.min_cases
        if self.min_coverage != _DEFAULTS["min_coverage"]:
            data["min_coverage"] = float(self.min_coverage)
        if self.min_lower_bound is not None:
            data["min_lower_bound"] = float(self.min_lower_bound)
        return data


@dataclass(frozen=True)
class RequirementOutcome:
    """How one requirement fared."""

    requirement: CheckRequirement
    """The requirement."""
    status: Literal["met", "failed", "undecided"]
    """met, failed (measured), or undecided (missing evidence could go either way)."""
    passed: int
    """Passing (trial, check) results."""
    failed: int
    """Failing results."""
    unmeasured: int
    """Results missing, not measured, or errored."""
    cases: int
    """Distinct cases with at least one measured result."""
    matched: tuple[str, ...]
    """Check names the requirement matched."""
    explanation: str
    """One sentence."""
    interval: tuple[float, float] = (0.0, 1.0)
    """95 % Wilson interval of the measured pass rate, clustered by case; in the saved
    form only when the requirement has ``min_lower_bound`` (the decision then rests on
    it), so decisions saved before it existed re-verify."""


@dataclass(frozen=True)
class PolicyDecision:
    """The decision and every reason for it."""

    decision: Decision
    """accept, reject or indeterminate."""
    reasons: tuple[str, ...]
    """Why, one sentence each; empty for a clean accept."""
    outcomes: tuple[RequirementOutcome, ...]
    """Per requirement."""
    coverage_issues: tuple[str, ...]
    """Report-level coverage issues taken into account."""
    report_digest: str
    """The report decided on."""
    policy_digest: str
    """The policy applied."""

    @property
    def headline(self) -> str:
        """The decision's cause in a few words (``onrecord._headline``): critical
        failures, undecided requirements, coverage, then advisory failures."""
        return decision_headline(self.decision, self.outcomes, self.coverage_issues, self.reasons)

    @property
    def exit_code(self) -> Literal[0, 1, 2]:
        """0 accept, 1 reject, 2 indeterminate (for CI gates)."""
        return _EXIT_CODES[self.decision]

    def __rich__(self) -> Printed:
        """A table, as ``onrecord show`` prints it (``rich.print``, IPython with rich)."""
        from onrecord._display import decision_view

        return decision_view(self)

    def _repr_html_(self) -> str:
        """A table for Jupyter: record text escaped, no script, colours inherited."""
        from onrecord._display_html import decision_html

        return decision_html(self)

    def to_dict(self) -> dict[str, Any]:
        """Portable form."""
        return {
            "decision": self.decision,
            "reasons": list(self.reasons),
            "coverage_issues": list(self.coverage_issues),
            "report_digest": self.report_digest,
            "policy_digest": self.policy_digest,
            "requirements": [
                {
                    **o.requirement.to_dict(),
                    "status": o.status,
                    "passed": o.passed,
                    "failed": o.failed,
                    "unmeasured": o.unmeasured,
                    "cases": o.cases,
                    "matched": list(o.matched),
                    "explanation": o.explanation,
                    **(
                        {"interval": list(o.interval)}
                        if o.requirement.min_lower_bound is not None
                        else {}
                    ),
                }
                for o in self.outcomes
            ],
        }


@dataclass(frozen=True)
class AcceptancePolicy:
    """Requirements that turn a report into accept / reject / indeterminate."""

    requirements: tuple[CheckRequirement, ...]
    """At least one requirement."""
    name: str = field(default="policy", kw_only=True)
    """A label for reports and logs."""

    def __post_init__(self) -> None:
        requirements = (
            tuple(self.requirements)
            if isinstance(self.requirements, Sequence)
            else self.requirements
        )
        if (
            not isinstance(requirements, tuple)
            or not requirements
            or not all(isinstance(item, CheckRequirement) for item in requirements)
        ):
            raise PolicyError(
                "AcceptancePolicy needs a non-empty tuple of CheckRequirement, "
                "e.g. AcceptancePolicy((CheckRequirement('posted_once'),))"
            )
        if not isinstance(self.name, str) or not self.name.strip():
            raise PolicyError(
                f"AcceptancePolicy.name must be a non-empty string such as 'release', "
                f"got {self.name!r}"
            )
        object.__setattr__(self, "requirements", requirements)

    def evaluate(self, report: EvaluationReport) -> PolicyDecision:
        """Decide on ``report``."""
        if not isinstance(report, EvaluationReport):
            raise PolicyError(f"evaluate() takes an EvaluationReport, got {type(report).__name__}")
        table = StatusTable(report)  # each trial's results read once, for every requirement
        outcomes = tuple(
            RequirementOutcome(requirement, **vars(judge(requirement, report, table)))
            for requirement in self.requirements
        )
        coverage = report.coverage_issues
        reasons = [o.explanation for o in outcomes if o.status != "met"]
        reasons += [f"coverage: {issue}" for issue in coverage]
        if any(o.status == "failed" and o.requirement.critical for o in outcomes):
            decision: Decision = "reject"
        elif any(o.status == "undecided" for o in outcomes) or coverage:
            decision = "indeterminate"
        else:
            decision = "accept"
        return PolicyDecision(
            decision, tuple(reasons), outcomes, coverage, report.digest, self.digest
        )

    def to_dict(self) -> dict[str, Any]:
        """Portable form, with schema and digest."""
        body = {
            "schema": POLICY_SCHEMA,
            "name": self.name,
            "requirements": [item.to_dict() for item in self.requirements],
        }
        return {**body, "digest": content_digest(body)}

    @property
    def digest(self) -> str:
        """sha256 of the canonical policy."""
        return str(self.to_dict()["digest"])

    def save_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the policy atomically in canonical form."""
        return atomic_write_bytes(path, canonical_bytes(self.to_dict()) + b"\n")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, verify_digest: bool = True) -> AcceptancePolicy:
        """Rebuild a policy; a saved policy's digest must match. Unknown keys are refused."""
        if not isinstance(data, Mapping):
            raise PolicyError(
                f"a policy must be an object with a 'requirements' list, got {type(data).__name__}"
            )
        if data.get("schema", POLICY_SCHEMA) != POLICY_SCHEMA:
            raise SchemaError(f"schema is {data.get('schema')!r}, expected {POLICY_SCHEMA!r}")
        # The digest before any field, as every record is verified: a tampered policy is
        # reported as changed after saving, not by the field the change broke.
        if verify_digest and "digest" in data:
            actual = content_digest(data)
            if data["digest"] != actual:
                raise DigestMismatch(
                    f"policy digest is {data['digest']!r} but its content hashes "
                    f"to {actual!r}: it was changed after saving"
                )
        refuse_unknown_keys(data, _POLICY_KEYS, "the policy")
        items = data.get("requirements")
        if not isinstance(items, list):
            raise PolicyError(
                "a policy needs a 'requirements' list of {check, critical, min_pass_rate, "
                "min_cases, min_coverage, min_lower_bound} objects"
            )
        policy = cls(
            tuple(requirement_from_dict(index, item) for index, item in enumerate(items)),
            name=data.get("name", "policy"),
        )
        if verify_digest and "digest" not in data:
            raise SchemaError(
                "a saved policy needs its 'digest' field; to load a hand-written "
                "policy use a .toml file or from_dict(..., verify_digest=False)"
            )
        if verify_digest and policy.to_dict() != dict(data):
            raise DigestMismatch(
                "the policy's digest matches but its fields are not those save_json writes "
                "(a missing schema or default, an integer rate): it was rewritten by hand; "
                "load it as TOML or re-save it with save_json"
            )
        return policy

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AcceptancePolicy:
        """Read a policy: canonical JSON saved by ``save_json`` (verified) or a hand-written
        TOML file with ``[[requirements]]`` tables."""
        from onrecord.episode._verify_files import read_regular  # (a cycle at import time)

        if Path(path).is_dir():  # else "not a regular file … put a regular file there"
            raise PolicyError(directory_given(Path(path)))
        raw = read_regular(Path(path), follow=True)  # a FIFO as --policy waited for ever
        if Path(path).suffix.lower() == ".toml":
            import tomllib

            try:
                data = tomllib.loads(raw.decode())
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise PolicyError(
                    f"{path} is not valid UTF-8 TOML ({exc}); fix the file or save the "
                    "policy with AcceptancePolicy.save_json"
                ) from exc
            try:
                policy = cls.from_dict(data, verify_digest=False)
                toml_digest_matches(data, policy.digest)
            except OnrecordError as exc:
                raise naming_file(path, exc) from exc
            return policy
        data = load_record_bytes(raw, str(path))
        try:
            return cls.from_dict(data)
        except OnrecordError as exc:
            raise naming_file(path, exc) from exc
