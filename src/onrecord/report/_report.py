"""``EvaluationReport``: many trials, their lock, and a verifying save/load."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from onrecord._canonical import (
    atomic_write_bytes,
    canonical_bytes,
    content_digest,
    digest_bytes,
    load_record_bytes,
    to_portable,
)
from onrecord._exceptions import naming_file
from onrecord.errors import (
    ConsistencyError,
    DigestMismatch,
    InputError,
    OnrecordError,
    SchemaError,
)
from onrecord.report._results import Trial, trial_from_dict
from onrecord.report._summary import ReportSummary, summarize

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = ["REPORT_SCHEMA", "EvaluationReport", "build_lock"]

REPORT_SCHEMA = "onrecord.report/v1"


def build_lock(trials: Iterable[Trial], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything two reports must share to be compared: library, check versions,
    environment settings and the exact set of cases, repeats and seeds."""
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    return _lock(trials, extra, {"name": "onrecord", "version": __version__})


def _lock(
    trials: Iterable[Trial], extra: Mapping[str, Any] | None, library: dict[str, str] | None
) -> dict[str, Any]:
    # ``build_lock`` with ``library`` given: verifying a lock ignores the library version,
    # and looking the installed one up (importlib.metadata, ~25 ms) would slow every
    # ``onrecord verify`` / ``gate`` / ``show`` of a report for nothing.
    checks: dict[str, str] = {}
    environments: dict[str, dict[str, Any]] = {}
    cases: dict[tuple[str, str], list[list[Any]]] = {}
    ran_in: list[tuple[list[Any], str]] = []  # each trial's lock entry and its environment
    for trial in trials:
        for result in trial.results:
            if checks.setdefault(result.name, result.version) != result.version:
                raise InputError(
                    f"check {result.name!r} appears with two versions "
                    f"({checks[result.name]!r} and {result.version!r}) in one "
                    "report; evaluate every trial with the same checks"
                )
        settings = environment_of(trial)
        environment = content_digest(settings)
        environments[environment] = settings
        entry = [trial.repeat, trial.settings.get("seed")]
        cases.setdefault((trial.case["case_id"], trial.case["content_digest"]), []).append(entry)
        ran_in.append((entry, environment))
    order = sorted(environments)
    if len(order) > 1:
        # Which environment each repeat ran in: with only the set of environments locked,
        # a case run in "easy" in A and "hard" in B (another case the other way round)
        # left the locks equal, and the two were paired as if comparable.
        index = {digest: number for number, digest in enumerate(order)}
        for entry, environment in ran_in:
            entry.append(index[environment])
    return {
        "library": library,
        "checks": dict(sorted(checks.items())),
        "environments": [environments[key] for key in order],
        "cases": [
            {
                "case_id": case_id,
                "content_digest": digest,
                "trials": sorted(trials_, key=lambda item: item[0]),
            }
            for (case_id, digest), trials_ in sorted(cases.items())
        ],
        **to_portable(dict(extra or {}), "$.lock"),
    }


class EvaluationReport:
    """The results of evaluating one or many trials with a fixed set of checks."""

    __slots__ = ("_bytes", "_digest", "_lock", "_trials")

    def __init__(self, trials: Iterable[Trial], lock: Mapping[str, Any]) -> None:
        """A report of ``trials`` under ``lock``, which must be the lock of those trials
        (as ``build_lock`` makes it, plus any extra settings): a lock that names other
        checks, environments or cases would let two reports with equal locks hold
        trials that cannot be paired. ``from_trials`` derives the lock for you."""
        self._setup(trials, lock)
        _verify_lock(self._trials, self._lock, InputError)

    def _setup(self, trials: Iterable[Trial], lock: Mapping[str, Any]) -> None:
        self._trials = _trial_tuple(trials)
        if not isinstance(lock, Mapping):
            raise InputError(f"a report's lock must be a mapping, got {type(lock).__name__}")
        # A detached copy: the caller's nested dicts (a lock read from a file, say) can
        # no longer change the report behind its digest.
        self._lock = to_portable(dict(lock), "$.lock")
        body = canonical_bytes(self._body())
        self._digest = digest_bytes(body)
        # The saved form, fixed now: ``digest`` sorts before every other key. What
        # to_dict, to_bytes and save_json give is always what the digest covers.
        self._bytes = b'{"digest":"' + self._digest.encode() + b'",' + body[1:]
        keys = [trial.key for trial in self._trials]
        if len(keys) != len(set(keys)):
            raise InputError(
                "a report holds one trial per (case, repeat); found duplicates: "
                "give each repeat its own repeat number"
            )

    @classmethod
    def _unverified(cls, trials: Iterable[Trial], lock: Mapping[str, Any]) -> EvaluationReport:
        """A report whose lock is known to match (just built) or is checked by the caller."""
        report = object.__new__(cls)
        report._setup(trials, lock)
        return report

    @classmethod
    def from_trials(
        cls, trials: Iterable[Trial], *, lock_extra: Mapping[str, Any] | None = None
    ) -> EvaluationReport:
        """Build a report and derive its lock from the trials."""
        trials = _trial_tuple(trials)
        return cls._unverified(trials, build_lock(trials, lock_extra))

    @classmethod
    def merge(cls, reports: Iterable[EvaluationReport]) -> EvaluationReport:
        """One report holding the trials of several (same checks expected). Lock settings
        beyond checks, environments and cases (the policy, the run's environment config)
        are kept where every report agrees on them, so a merge of reports made for one
        policy still records that policy."""
        reports = tuple(reports) if isinstance(reports, Iterable) else (reports,)
        for index, report in enumerate(reports):
            if not isinstance(report, EvaluationReport):
                raise InputError(
                    f"EvaluationReport.merge takes EvaluationReport objects; item #{index} is "
                    f"{type(report).__name__} (load saved reports with EvaluationReport.load)"
                )
        extras = [_extra(report._lock) for report in reports]
        shared = {
            key: value
            for key, value in (extras[0] if extras else {}).items()
            if all(extra.get(key) == value for extra in extras)
        }
        return cls.from_trials(
            (trial for report in reports for trial in report.trials), lock_extra=shared
        )

    @property
    def trials(self) -> tuple[Trial, ...]:
        """Every trial, in evaluation order."""
        return self._trials

    @property
    def lock(self) -> dict[str, Any]:
        """Library version, check versions, environment settings, cases (copy)."""
        return to_portable(self._lock)  # type: ignore[no-any-return]

    @property
    def digest(self) -> str:
        """sha256 of the canonical report."""
        return self._digest

    @property
    def check_names(self) -> tuple[str, ...]:
        """Every check that appears in the report, sorted."""
        return tuple(self._lock["checks"])

    @property
    def coverage_issues(self) -> tuple[str, ...]:
        """Every trial's coverage issues, prefixed with the trial it belongs to."""
        return tuple(
            f"{trial.case['case_id']}#{trial.repeat}: {issue}"
            for trial in self._trials
            for issue in trial.coverage_issues
        )

    def summary(self) -> ReportSummary:
        """Pass rates with Wilson intervals, coverage and pass^k."""
        return summarize(self._trials, self.check_names)

    def _body(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "lock": self._lock,
            "trials": [trial.to_dict() for trial in self._trials],
        }

    def to_dict(self) -> dict[str, Any]:
        """Portable form, with digest: a detached copy (changing it changes nothing in
        the report)."""
        copy: dict[str, Any] = orjson.loads(self._bytes)
        return copy

    def to_bytes(self) -> bytes:
        """The exact bytes ``save_json`` writes."""
        return self._bytes + b"\n"

    def save_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the report atomically in canonical form."""
        return atomic_write_bytes(path, self.to_bytes())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationReport:
        """Rebuild and verify a report's dict form."""
        if not isinstance(data, Mapping):
            raise SchemaError(f"a report must be a JSON object, got {type(data).__name__}")
        if data.get("schema") != REPORT_SCHEMA:
            raise SchemaError(f"schema is {data.get('schema')!r}, expected {REPORT_SCHEMA!r}")
        if "digest" in data:  # first, as every record: an edit is reported as an edit
            actual = content_digest(data)
            if data["digest"] != actual:
                raise DigestMismatch(
                    f"report digest is {data['digest']!r} but its content hashes to "
                    f"{actual!r}: it was changed after saving"
                )
        unknown = sorted(set(data) - {"schema", "lock", "trials", "digest"})
        if unknown:
            # The digest covers only what the report rebuilds: an added field would be
            # dropped silently, so a file carrying one was edited.
            raise SchemaError(
                f"the report has unknown field(s) {unknown}: it was edited; restore the saved file"
            )
        if not isinstance(data.get("trials"), list) or not isinstance(data.get("lock"), dict):
            raise SchemaError("a report needs a 'lock' object and a 'trials' list")
        trials = (
            trial_from_dict(item, f"trials[{index}]") for index, item in enumerate(data["trials"])
        )
        report = cls._unverified(trials, data["lock"])
        if data.get("digest") != report.digest:
            raise DigestMismatch(
                f"report digest is {data.get('digest')!r} but its content "
                f"hashes to {report.digest!r}: it was changed after saving"
            )
        _verify_lock(report.trials, data["lock"], ConsistencyError)
        return report

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvaluationReport:
        """Read and verify a report saved by ``save_json``; errors name the file."""
        from onrecord.episode._verify_files import read_regular  # (a cycle at import time)

        # A regular file only: `gate FIFO`, `compare FIFO FIFO` waited for ever.
        data = load_record_bytes(read_regular(Path(path), follow=True), str(path))
        try:
            return cls.from_dict(data)
        except OnrecordError as exc:
            raise naming_file(path, exc) from exc

    def __repr__(self) -> str:
        return (
            f"EvaluationReport(trials={len(self._trials)}, checks={len(self.check_names)}, "
            f"digest={self._digest[:12]!r})"
        )

    def __rich__(self) -> Printed:
        """A table, as ``onrecord show`` prints it (``rich.print``, IPython with rich)."""
        from onrecord._display import report_view

        return report_view(self)

    def _repr_html_(self) -> str:
        """A table for Jupyter: record text escaped, no script, colours inherited."""
        from onrecord._display_html import report_html

        return report_html(self)


def _trial_tuple(trials: Any) -> tuple[Trial, ...]:
    # A dict or None in place of a Trial failed with AttributeError deep in the lock.
    items = tuple(trials) if isinstance(trials, Iterable) and not isinstance(trials, str) else None
    if items is None:
        raise InputError(
            f"a report's trials must be an iterable of Trial objects, got {type(trials).__name__}"
        )
    for index, item in enumerate(items):
        if not isinstance(item, Trial):
            raise InputError(
                f"a report's trials must be Trial objects; item #{index} is "
                f"{type(item).__name__} (build one with episode_trial or Trial(...), or "
                "Trial.from_dict for a saved one)"
            )
    return items


def _verify_lock(
    trials: tuple[Trial, ...],
    lock: Mapping[str, Any],
    error: type[InputError] | type[ConsistencyError],
) -> None:
    """Raise ``error`` unless ``lock`` is the lock of ``trials`` (any library version)."""
    expected = _lock(trials, _extra(lock), None)
    saved = dict(lock) | {"library": None}
    if expected != saved and _without_environment_index(expected) != saved:
        raise error(
            "the report's lock does not match its trials (checks, environments or "
            "cases differ); build reports with EvaluationReport.from_trials, or load "
            "a saved one unedited"
        )


def environment_of(trial: Trial) -> dict[str, Any]:
    """The environment settings a trial ran under: its settings but the seed (what the
    lock lists once per environment, and what a pair's two trials must share)."""
    return {key: value for key, value in trial.settings.items() if key != "seed"}


def _without_environment_index(lock: dict[str, Any]) -> dict[str, Any]:
    """``lock`` as onrecord wrote it before each repeat's environment was recorded
    (``[repeat, seed]`` entries): reports saved then still load and verify, and
    ``compare`` says how to re-create them to pair them (``_lock_diff.legacy_lock``)."""
    cases = [{**case, "trials": [entry[:2] for entry in case["trials"]]} for case in lock["cases"]]
    return {**lock, "cases": cases}


def _extra(lock: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value
        for key, value in lock.items()
        if key not in ("library", "checks", "environments", "cases")
    }
