"""The rows of a report: one ``CheckResult`` per check per trial, grouped in ``Trial``s."""

from __future__ import annotations

import operator
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from onrecord._canonical import to_portable
from onrecord._portable import key_path
from onrecord.errors import InputError, SchemaError

__all__ = ["STATUSES", "CheckResult", "Status", "Trial", "result_from_dict", "trial_from_dict"]

Status = Literal["pass", "fail", "not_measured", "evaluator_error", "model_error"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "not_measured", "evaluator_error", "model_error")
_RESULT_KEYS = frozenset({"name", "version", "status", "reason", "evidence"})
_TRIAL_KEYS = frozenset(
    {"case", "repeat", "source", "results", "coverage_issues", "measures", "settings"}
)


def _refuse_unknown_keys(data: Mapping[str, Any], allowed: Collection[str], what: str) -> None:
    """A saved record with a field onrecord never writes was edited: refuse it rather than
    drop the field silently (it may be a hand-added "override" a reader would trust)."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"{what} must be an object, got {type(data).__name__}")
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise SchemaError(
            f"{what} has unknown field(s) {unknown}: it was edited; restore the saved file"
        )


@dataclass(frozen=True)
class CheckResult:
    """One check's result on one trial."""

    name: str
    """Check name."""
    version: str
    """Check version (enters the lock)."""
    status: Status
    """pass / fail are measured; the other three are not, and never count as a pass."""
    reason: str
    """The check's sentence, or the error that stopped it."""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """Portable facts behind the result."""

    def __post_init__(self) -> None:
        for label in ("name", "version"):
            if not isinstance(getattr(self, label), str) or not getattr(self, label):
                raise InputError(
                    f"CheckResult.{label} must be a non-empty string, got {getattr(self, label)!r}"
                )
        if self.status not in STATUSES:
            raise InputError(f"CheckResult.status must be one of {STATUSES}, got {self.status!r}")
        if not isinstance(self.evidence, Mapping):
            raise InputError(
                f"the evidence of check {self.name!r} must be a dict of portable values, got "
                f"{type(self.evidence).__name__}"
            )
        object.__setattr__(
            self,
            "evidence",
            to_portable(dict(self.evidence), key_path(key_path("$.results", self.name), "evidence"))
            if self.evidence
            else {},
        )

    @property
    def passed(self) -> bool | None:
        """True / False when measured, None otherwise."""
        return {"pass": True, "fail": False}.get(self.status)

    def to_dict(self) -> dict[str, Any]:
        """Portable form."""
        return {
            "name": self.name,
            "version": self.version,
            "status": self.status,
            "reason": self.reason,
            "evidence": dict(self.evidence),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        """Inverse of ``to_dict``."""
        return result_from_dict(data, "check result")


@dataclass(frozen=True)
class Trial:
    """One evaluated unit (an episode, a forecast): a case × repeat with its results."""

    case: Mapping[str, Any]
    """Case identity: case_id, source_id, content_digest."""
    repeat: int
    """Repeat number of this case (0-based)."""
    source: Mapping[str, Any]
    """What was evaluated, by reference: e.g. {"kind": "episode", "digest": ...}."""
    results: tuple[CheckResult, ...]
    """One result per check."""
    coverage_issues: tuple[str, ...] = ()
    """Why the trial's evidence is incomplete."""
    measures: Mapping[str, float] = field(default_factory=dict)
    """Continuous measures, compared with a paired bootstrap."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Environment / observer ids and settings; they enter the lock."""

    def __post_init__(self) -> None:
        if not isinstance(self.case, Mapping) or not all(
            isinstance(self.case.get(key), str) for key in ("case_id", "content_digest")
        ):
            raise InputError(
                "Trial.case must hold case_id and content_digest strings (use EvalCase.identity)"
            )
        names = [result.name for result in self.results]
        if len(names) != len(set(names)):
            raise InputError(
                f"Trial of case {self.case['case_id']!r} has a check twice: "
                f"{sorted(name for name in names if names.count(name) > 1)}"
            )
        object.__setattr__(self, "repeat", _repeat_number(self.repeat))
        object.__setattr__(self, "coverage_issues", _issues(self.coverage_issues))
        for label in ("source", "measures", "settings"):
            # dict() of a string raised "dictionary update sequence element #0 ...".
            if not isinstance(getattr(self, label), Mapping):
                raise InputError(
                    f"Trial.{label} must be a mapping (a JSON object), e.g. "
                    f"{_EXAMPLES[label]}, got {getattr(self, label)!r:.60}"
                )
        for label in ("case", "source", "measures", "settings"):
            object.__setattr__(
                self, label, to_portable(dict(getattr(self, label)), f"$.trial.{label}")
            )
        for name, value in self.measures.items():
            # compare_reports averages measures; a string or null would crash it later.
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(
                    f"measure {name!r} of case {self.case['case_id']!r} must be a finite "
                    f"number, got {value!r}; leave a measure out when it was not measured"
                )

    @property
    def key(self) -> tuple[str, str, int]:
        """What pairs this trial with its counterpart in another report."""
        return (self.case["case_id"], self.case["content_digest"], self.repeat)

    @property
    def outcome(self) -> Literal["pass", "fail", "incomplete"]:
        """fail if any check failed; pass if every check passed with full coverage."""
        statuses = {result.status for result in self.results}
        if "fail" in statuses:
            return "fail"
        if statuses <= {"pass"} and self.results and not self.coverage_issues:
            return "pass"
        return "incomplete"

    def outcome_among(self, check_names: Collection[str]) -> Literal["pass", "fail", "incomplete"]:
        """The outcome within a report of ``check_names``: a trial without a result for
        one of them (e.g. in a merge of reports with different checks) lacks coverage, as
        the acceptance policy sees it, so it cannot pass."""
        outcome = self.outcome
        if outcome == "pass" and not set(check_names) <= {r.name for r in self.results}:
            return "incomplete"
        return outcome

    def result(self, name: str) -> CheckResult | None:
        """This trial's result for one check, if it has one."""
        return next((result for result in self.results if result.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """Portable form."""
        return {
            "case": dict(self.case),
            "repeat": self.repeat,
            "source": dict(self.source),
            "results": [result.to_dict() for result in self.results],
            "coverage_issues": list(self.coverage_issues),
            "measures": dict(self.measures),
            "settings": dict(self.settings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trial:
        """Inverse of ``to_dict``."""
        return trial_from_dict(data, "trial")


_EXAMPLES = {
    "source": '{"kind": "episode", "digest": "…"}',
    "measures": '{"steps": 12.0}',
    "settings": '{"environment_id": "…", "seed": 0}',
}


def _require_exact_keys(data: Any, keys: Collection[str], where: str) -> None:
    """A saved mapping with exactly ``keys``: no field onrecord never writes, none lost."""
    _refuse_unknown_keys(data, keys, where)
    missing = sorted(set(keys) - set(data))
    if missing:
        raise SchemaError(f"{where} lacks field(s) {missing}: restore the saved file")


def trial_from_dict(data: Any, where: str) -> Trial:
    """A saved trial, its errors naming the field at fault from ``where`` (the trial's
    place in the record, e.g. ``trials[3]``): a digest-consistent record can still
    hold a string where an object belongs, and loading it raised a bare ValueError."""
    _require_exact_keys(data, _TRIAL_KEYS, where)
    if not isinstance(data["results"], list):
        raise SchemaError(
            f"{where}.results must be a list of check results, got {data['results']!r:.60}"
        )
    results = tuple(
        result_from_dict(item, f"{where}.results[{index}]")
        for index, item in enumerate(data["results"])
    )
    try:
        return Trial(
            data["case"],
            data["repeat"],
            data["source"],
            results,
            data["coverage_issues"],
            data["measures"],
            data["settings"],
        )
    except InputError as exc:
        # "Trial.source must be ..." names the constructor's argument; a saved file's
        # reader needs the field: "trials[3].source must be ...".
        raise SchemaError(_at(str(exc), "Trial", where)) from exc


def result_from_dict(data: Any, where: str) -> CheckResult:
    """A saved check result, its errors naming the field at fault from ``where``."""
    _require_exact_keys(data, _RESULT_KEYS, where)
    if not isinstance(data["reason"], str):
        raise SchemaError(
            f"{where}.reason must be a sentence (a string), got {data['reason']!r:.60}"
        )
    try:
        return CheckResult(
            data["name"], data["version"], data["status"], data["reason"], data["evidence"]
        )
    except InputError as exc:
        raise SchemaError(_at(str(exc), "CheckResult", where)) from exc


def _at(message: str, owner: str, where: str) -> str:
    """``message`` of the constructor ``owner`` about a saved record's field at
    ``where``: ``Trial.source must ...`` reads ``trials[3].source must ...``."""
    if message.startswith(f"{owner}."):
        return where + message[len(owner) :]
    return f"{where}: {message}"


_MAX_REPEAT = 2**64 - 1


def _repeat_number(repeat: Any) -> int:
    # Repeats are sorted and paired across reports: a "0" or 0.5 would break both.
    try:
        number = operator.index(repeat) if not isinstance(repeat, bool) else -1
    except TypeError:
        number = -1
    # Beyond 64 bits JSON cannot hold it: the report failed later naming only a lock path.
    if not 0 <= number <= _MAX_REPEAT:
        raise InputError(
            f"Trial.repeat must be a non-negative integer (0, 1, …) below 2**64, got {repeat!r}"
        )
    return number


def _issues(issues: Any) -> tuple[str, ...]:
    if not isinstance(issues, tuple | list) or not all(isinstance(item, str) for item in issues):
        raise InputError(
            "Trial.coverage_issues must be a tuple of sentences, e.g. "
            f"('observer failed at step 3',), got {issues!r:.80}"
        )
    return tuple(issues)
