"""How one requirement of an acceptance policy fares on a report (the rules are stated in
docs/reports-and-policies.md; ``onrecord.policy`` reduces the judgements to a decision)."""

from __future__ import annotations

import fnmatch
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import TYPE_CHECKING, Any, Literal

from onrecord._stats import clustered_interval_of
from onrecord.errors import DigestMismatch, PolicyError

if TYPE_CHECKING:
    from onrecord.policy import CheckRequirement
    from onrecord.report import EvaluationReport

__all__ = [
    "Judgement",
    "StatusTable",
    "fraction",
    "judge",
    "matches",
    "refuse_unknown_keys",
    "requirement_from_dict",
    "requirement_interval",
    "ruling",
    "toml_digest_matches",
    "without_trial",
]

RequirementStatus = Literal["met", "failed", "undecided"]
# Why a (trial, check) result is unmeasured, in the order the reasons name them.
_UNMEASURED_KINDS = ("not_measured", "evaluator_error", "model_error", "missing")


@dataclass(frozen=True)
class Judgement:
    """A requirement's status, its counts and the sentence that explains it."""

    status: RequirementStatus
    passed: int
    failed: int
    unmeasured: int
    cases: int
    matched: tuple[str, ...]
    explanation: str
    interval: tuple[float, float]


def matches(pattern: str, name: str) -> bool:
    """A check name equal to ``pattern`` or matched by it as a glob (case-sensitive on
    every platform)."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


_GLOB_CHARACTERS = frozenset("*?[")


def matched_names(
    pattern: str, names: Sequence[str], known: Container[str] | None = None
) -> tuple[str, ...]:
    """The names of ``names`` that ``pattern`` matches, in their order; ``known``, when
    given, holds the same names for lookups. A pattern without a glob character matches
    only itself, so it is looked up rather than compared with every name: a run grading
    2,000 checks has a requirement per check, and 4 million comparisons took 6 s."""
    if _GLOB_CHARACTERS.isdisjoint(pattern):
        return (pattern,) if pattern in (names if known is None else known) else ()
    return tuple(name for name in names if matches(pattern, name))


def _spelt_apart(pattern: str, names: Sequence[str]) -> str:
    """A hint naming the checks ``pattern`` would match but for Unicode normalization
    (``'café'`` composed or decomposed print the same) or whitespace; "" when none. Only
    these: a wording that differs no other way is not a guess, and the explanation of
    any other unmatched requirement stays as saved decisions hold it."""
    key = _spelling(pattern)
    near = [name for name in names if matches(key, _spelling(name))][:3]
    if not near:
        return ""
    ways = []
    if not any(matches(" ".join(pattern.split()), " ".join(name.split())) for name in near):
        ways.append(
            f"Unicode normalization (NFC or NFD: the requirement is {pattern!a}, "
            f"the check {near[0]!a})"
        )
    if not any(
        matches(unicodedata.normalize("NFC", pattern), unicodedata.normalize("NFC", name))
        for name in near
    ):
        ways.append("whitespace")
    return (
        f"; did you mean {', '.join(map(repr, near))}? They differ only in "
        f"{' and '.join(ways)}, and names match exactly: write it as the check spells it"
    )


def _spelling(text: str) -> str:
    """``text`` in NFC with its whitespace trimmed and each run of it one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _share(numerator: int, denominator: int, threshold: float) -> str:
    """``numerator/denominator`` as a short decimal that never reads as equal to the
    threshold it missed (899/1000 against 0.9 is "0.899", 8999/10000 is "0.8999"),
    followed by the counts."""
    value = numerator / denominator
    text = f"{value:.3g}"
    for digits in range(4, 18):
        if float(text) != threshold or value == threshold:
            break
        text = f"{value:.{digits}g}"
    return f"{text} ({numerator} of {denominator})"


class StatusTable:
    """Every trial's case and each check's status in every trial, read once per report
    so that judging many requirements does not search each trial's results again; each
    check's column, and each set of matched checks' tally, is counted once however many
    requirements match it (an exact requirement and a glob share it)."""

    __slots__ = ("_case_of", "_columns", "_statuses", "_tallies", "_trials")

    def __init__(self, report: EvaluationReport) -> None:
        trials = report.trials
        self._trials = len(trials)
        # One status list per check, filled by a single walk over the results: a dict per
        # trial, then a lookup per (trial, check), took three times as long.
        statuses = self._statuses = {name: ["missing"] * len(trials) for name in report.check_names}
        for index, trial in enumerate(trials):
            for result in trial.results:
                statuses[result.name][index] = result.status
        cases: dict[tuple[str, str], int] = {}
        # A small int per trial naming its case: per-case tallies then count ints in C
        # instead of updating a dict keyed by (case id, digest) per result.
        self._case_of = [
            cases.setdefault((trial.case["case_id"], trial.case["content_digest"]), len(cases))
            for trial in trials
        ]
        self._columns: dict[str, _Column] = {}
        self._tallies: dict[tuple[str, ...], _Tally] = {}

    @property
    def names(self) -> Container[str]:
        """Every check of the report, for lookups."""
        return self._statuses.keys()

    def tally(self, matched: tuple[str, ...]) -> _Tally:
        """The counts and interval of every (trial, check in ``matched``) result."""
        found = self._tallies.get(matched)
        if found is None:
            found = self._tallies[matched] = self._count(matched)
        return found

    def _count(self, matched: tuple[str, ...]) -> _Tally:
        columns = [self._column(name) for name in matched]
        kinds: Counter[str] = Counter()
        for column in columns:
            kinds.update(column.kinds)
        # A case's repeats, and the checks a glob matches in it, are one cluster.
        results = Counter(chain.from_iterable(column.measured for column in columns))
        passes = Counter(chain.from_iterable(column.passes for column in columns))
        interval = clustered_interval_of(
            list(map(passes.get, results, repeat(0))), list(results.values())
        )
        return _Tally(kinds, len(results), interval)

    def _column(self, name: str) -> _Column:
        found = self._columns.get(name)
        if found is None:
            # A name the report lacks (a saved decision's, shown beside another report)
            # has no result in any trial.
            statuses = self._statuses.get(name) or ["missing"] * self._trials
            found = self._columns[name] = _Column(
                Counter(statuses),
                list(compress(self._case_of, map(_MEASURED.__contains__, statuses))),
                list(compress(self._case_of, map("pass".__eq__, statuses))),
            )
        return found


_MEASURED = frozenset(("pass", "fail"))


@dataclass(frozen=True, slots=True)
class _Column:
    """One check over every trial: its results by status (absent ones as "missing"),
    and the case index of each measured and of each passing result."""

    kinds: Counter[str]
    measured: list[int]
    passes: list[int]


@dataclass(frozen=True, slots=True)
class _Tally:
    """Matched checks over every trial: results by status, distinct cases with a
    measured result, and the pass rate's interval clustered by case."""

    kinds: Counter[str]
    cases: int
    interval: tuple[float, float]


def judge(
    requirement: CheckRequirement, report: EvaluationReport, table: StatusTable | None = None
) -> Judgement:
    """met, failed or undecided, with counts over every (trial, matched check) result
    (``table``, when given, must be ``StatusTable(report)``)."""
    label = f"{requirement.check!r} ({'critical' if requirement.critical else 'advisory'})"
    known = None if table is None else table.names
    matched = matched_names(requirement.check, report.check_names, known)
    if not matched:
        why = f"no check in the report matches {requirement.check!r}" + _spelt_apart(
            requirement.check, report.check_names
        )
        if not report.trials:
            why += ": the report holds no trial"
        return Judgement("undecided", 0, 0, 0, 0, matched, why, (0.0, 1.0))
    tally = (table or StatusTable(report)).tally(matched)
    kinds, cases, interval = tally.kinds, tally.cases, tally.interval
    passed, failed = kinds["pass"], kinds["fail"]
    measured = passed + failed
    total = sum(kinds.values())
    unmeasured = total - measured
    # Evaluator and model errors are named apart from checks that could not measure and
    # from results absent from a trial: each calls for a different fix.
    missing = ", ".join(f"{kinds[kind]} {kind}" for kind in _UNMEASURED_KINDS if kinds[kind])
    counts = f"{passed} passed, {failed} failed, {unmeasured} not measured of {total}" + (
        f" ({missing})" if missing else ""
    )
    status, why = ruling(requirement, passed, failed, unmeasured, cases, interval, counts)
    return Judgement(
        status, passed, failed, unmeasured, cases, matched, f"{label} {status}: {why}", interval
    )


def ruling(
    requirement: CheckRequirement,
    passed: int,
    failed: int,
    unmeasured: int,
    cases: int,
    interval: tuple[float, float],
    counts: str = "",
) -> tuple[RequirementStatus, str]:
    """The status of a requirement that matched checks with these results (at least
    one), and why, after ``counts``. One rule for ``judge`` and for a saved decision,
    whose statuses ``verify`` checks against its own counts."""
    measured = passed + failed
    total = measured + unmeasured
    need = requirement.min_pass_rate
    # Failed whatever the missing results turn out to be: even if every one passed.
    if (passed + unmeasured) / total < need:
        return "failed", f"{counts}; needs pass rate >= {need:g}"
    short = []
    if measured / total < requirement.min_coverage:
        short.append(
            f"coverage {_share(measured, total, requirement.min_coverage)} < "
            f"min_coverage {requirement.min_coverage:g}"
        )
    if cases < requirement.min_cases:
        short.append(f"{cases} measured cases < min_cases {requirement.min_cases}")
    if short:
        return "undecided", f"{counts}; {'; '.join(short)}"
    # Enough is measured: the pass rate over the measured results decides, and with
    # min_lower_bound the low end of its interval too; the sentence says which bound did.
    if passed / measured < need:
        return "failed", f"{counts}; measured pass rate {_share(passed, measured, need)} < {need:g}"
    bound = requirement.min_lower_bound
    if bound is None:
        return "met", counts
    low = f"the lower bound of its {_BOUND} is {_percent(interval[0], bound)}"
    rate = f"measured pass rate {_share(passed, measured, need)} >= {need:g}"
    if interval[0] < bound:
        return (
            "failed",
            f"{counts}; {rate}, but {low} < min_lower_bound {bound:g}: the lower bound decided",
        )
    return "met", f"{counts}; {rate} and {low} >= min_lower_bound {bound:g}"


_BOUND = "95% interval (clustered by case)"


def _percent(value: float, threshold: float) -> str:
    """``value`` as a percentage that never reads as equal to the threshold it missed
    or met (0.89996 against 0.9 is "89.996%", not "90.0%")."""
    for digits in range(1, 16):
        text = f"{value * 100:.{digits}f}"
        if (float(text) / 100 < threshold) == (value < threshold):
            return f"{text}%"
    return f"{value * 100!r}%"


def requirement_interval(table: StatusTable, matched: tuple[str, ...]) -> tuple[float, float]:
    """The interval ``judge`` gives a requirement that matched ``matched`` (for views of
    a saved decision, which keeps the counts but not the cases they came from)."""
    return table.tally(matched).interval


# Field checks of ``onrecord.policy``, kept here so that module stays short.


def fraction(name: str, value: Any, *, below_one: bool = False) -> None:
    """Refuse a share that is not a finite number in (0, 1] (or (0, 1)), naming it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= 1
        or (below_one and value == 1)
    ):
        bounds = (
            "(0, 1), e.g. 0.9 (the lower bound of an interval never reaches 1)"
            if below_one
            else "(0, 1]"
        )
        raise PolicyError(f"CheckRequirement.{name} must be in {bounds}, got {value!r}")


def refuse_unknown_keys(data: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise PolicyError(
            f"{where} has unknown field(s) {unknown}; the fields are {list(allowed)}: "
            "fix the spelling or remove them"
        )


def toml_digest_matches(data: Mapping[str, Any], digest: str) -> None:
    """A hand-written TOML policy that states a ``digest`` must be the policy it names:
    one copied from a saved policy, then edited, was loaded with the edit and the stale
    digest ignored, so a reviewer trusting the pinned digest gated with other thresholds."""
    if "digest" in data and data["digest"] != digest:
        raise DigestMismatch(
            f"the policy states digest {data['digest']!r} but its name and requirements are "
            f"those of {digest!r}: it was changed after the digest was written; fix them (the "
            "name is 'policy' when the file sets none), or remove the 'digest' line to gate "
            "with them as they are"
        )


_TRIAL_PREFIX = re.compile(r"^.*?#\d+: ")


def without_trial(issue: str) -> str:
    """A report-level coverage issue without its ``case_id#repeat: `` prefix (a case id
    may itself hold ": ", which splitting on the first one cut in two)."""
    return _TRIAL_PREFIX.sub("", issue, count=1)


def requirement_from_dict(index: int, item: Any) -> CheckRequirement:
    """Requirement ``index`` of a policy's ``requirements`` list, its keys checked."""
    from onrecord.policy import _DEFAULTS, _REQUIREMENT_KEYS, CheckRequirement  # a cycle

    where = f"requirement #{index + 1}"
    if not isinstance(item, Mapping) or "check" not in item:
        raise PolicyError(
            f"{where} is malformed ({item!r:.60}); each needs a 'check' name, e.g. "
            "{'check': 'posted_once'}"
        )
    refuse_unknown_keys(item, _REQUIREMENT_KEYS, f"{where} ({item['check']!r})")
    return CheckRequirement(
        item["check"],
        critical=item.get("critical", True),
        min_pass_rate=item.get("min_pass_rate", 1.0),
        min_cases=item.get("min_cases", _DEFAULTS["min_cases"]),
        min_coverage=item.get("min_coverage", _DEFAULTS["min_coverage"]),
        min_lower_bound=item.get("min_lower_bound"),
    )
