"""Named checks over saved tool-world episodes, a registry, and a weighted score.

A check is an :class:`~onrecord.episode.OutcomeCheck` whose ``evaluate`` receives a
:class:`~onrecord.envkit.ToolEpisode` (diff, audit history, action log, read-only end
state, task) and returns an :class:`~onrecord.episode.OutcomeVerdict`. Register checks
by name so ``onrecord check NAME --episode DIR`` and reports can find them::

    @check("allocations_sum_to_line", "1")
    def allocations_sum_to_line(episode: ToolEpisode) -> OutcomeVerdict: ...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from onrecord.envkit._check_args import check_label
from onrecord.envkit._rule_names import FactsReader, SchemaFacts, schema_facts
from onrecord.envkit.episode import ToolEpisode
from onrecord.envkit.rules import check_rules, compare_diff
from onrecord.episode import OutcomeCheck, OutcomeVerdict, run_check
from onrecord.errors import InputError
from onrecord.report import CheckResult

__all__ = [
    "Score",
    "check",
    "failed",
    "get_check",
    "not_measured",
    "passed",
    "register_check",
    "registered_checks",
    "run_checks",
    "weighted_score",
]

Evaluate = Callable[[ToolEpisode], OutcomeVerdict]
_REGISTRY: dict[str, OutcomeCheck] = {}


def passed(reason: str, **evidence: Any) -> OutcomeVerdict:
    """A measured pass."""
    return OutcomeVerdict(True, reason, evidence)


def failed(reason: str, **evidence: Any) -> OutcomeVerdict:
    """A measured failure."""
    return OutcomeVerdict(False, reason, evidence)


def not_measured(reason: str, **evidence: Any) -> OutcomeVerdict:
    """The evidence cannot decide; never counts as a pass."""
    return OutcomeVerdict(None, reason, evidence)


def register_check(item: OutcomeCheck, *, replace: bool = False) -> OutcomeCheck:
    """Make a check findable by name. Registering a second check under a taken name is
    an error unless ``replace=True`` (then bump its version)."""
    if not isinstance(item, OutcomeCheck):
        raise InputError(f"register_check needs an OutcomeCheck, got {type(item).__name__}")
    known = _REGISTRY.get(item.name)
    if known is not None and known is not item and not replace:
        raise InputError(
            f"a check named {item.name!r} is already registered (version "
            f"{known.version}); pick another name or pass replace=True"
        )
    _REGISTRY[item.name] = item
    return item


def check(name: str, version: str = "1") -> Callable[[Evaluate], OutcomeCheck]:
    """Decorator: declare and register a check over a ``ToolEpisode``. A ``name`` or
    ``version`` that is not a string is refused here, where it is written, rather than
    when the decorated function is defined."""
    check_label("check", "name", name)
    check_label("check", "version", version)

    def wrap(function: Evaluate) -> OutcomeCheck:
        return register_check(OutcomeCheck(name, version, function))

    return wrap


def get_check(name: str) -> OutcomeCheck:
    """The registered check called ``name``."""
    found = _REGISTRY.get(name)
    if found is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise InputError(
            f"no check named {name!r} is registered (registered: {known}); "
            "import the module that defines it (CLI: --import MODULE)"
        )
    return found


def registered_checks() -> dict[str, OutcomeCheck]:
    """Every registered check by name (a copy)."""
    return dict(sorted(_REGISTRY.items()))


def _resolve(checks: Iterable[OutcomeCheck | str]) -> list[OutcomeCheck]:
    return [get_check(item) if isinstance(item, str) else item for item in checks]


def run_checks(episode: ToolEpisode, checks: Iterable[OutcomeCheck | str]) -> list[CheckResult]:
    """Run checks (objects or registered names); a raising check is an evaluator error."""
    return [run_check(item, episode) for item in _resolve(checks)]


@dataclass(frozen=True)
class Score:
    """A weighted score over check results."""

    value: float | None
    """Weighted share of passes among measured checks; None when nothing was measured."""
    measured_weight: float
    """Total weight of the checks that were measured (pass or fail)."""
    total_weight: float
    """Total weight of all checks; the difference was not measured."""
    results: tuple[CheckResult, ...]
    """The results the score was computed from."""


def weighted_score(
    results: Sequence[CheckResult], weights: Mapping[str, float] | None = None
) -> Score:
    """Combine results into one number (weights default to 1 per check)."""
    weights = _weights(weights)
    unknown = sorted(set(weights) - {result.name for result in results})
    if unknown:
        raise InputError(
            f"weights must name checks that ran; unknown: {unknown} (ran: "
            f"{sorted({result.name for result in results})})"
        )
    total = measured = won = 0.0
    for result in results:
        weight = weights.get(result.name, 1.0)
        total += weight
        if result.passed is not None:
            measured += weight
            won += weight if result.passed else 0.0
    return Score(won / measured if measured else None, measured, total, tuple(results))


def _weights(weights: Any) -> dict[str, float]:
    """``weights`` if each is a finite number at least 0, as ``onrecord check --weight``
    requires: a NaN passes a ``>= 0`` test and would make the score NaN, read as
    neither pass nor fail; an infinite weight makes it NaN too."""
    if weights is None:
        return {}
    if not isinstance(weights, Mapping):
        raise InputError(f"weights must map check names to numbers, got {type(weights).__name__}")
    bad = {
        name: weight
        for name, weight in weights.items()
        if isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or not math.isfinite(weight)
        or weight < 0
    }
    if bad:
        raise InputError(
            f"weights must be finite numbers of at least 0; got {bad!r} (leave a check "
            "out for the default weight 1, or give it 0 to leave it out of the score)"
        )
    if not math.isfinite(sum(weights.values())):
        raise InputError("weights are too large: their sum must be finite")
    return dict(weights)


# -- generic checks every tool world supports ---------------------------------------------

_LISTED = 5


def _listed(problems: list[str], field: str) -> str:
    """The first few problems for a check's reason. The reason is what `onrecord show`,
    `gate` and CI summaries print, so naming only the first of "3 rule(s) broken" sent
    readers digging into report.json for the other two; the evidence keeps them all."""
    shown = "; ".join(problems[:_LISTED])
    if len(problems) > _LISTED:
        shown += f"; and {len(problems) - _LISTED} more in the evidence's {field!r}"
    return shown


def _expected(episode: ToolEpisode) -> Mapping[str, Any]:
    task = episode.task or {}
    expected = task.get("expected_output")
    return expected if isinstance(expected, Mapping) else {}


@check("envkit/diff_matches_expected", "1")
def diff_matches_expected(episode: ToolEpisode) -> OutcomeVerdict:
    """The end-state diff equals the task's ``expected_output["diff"]`` (columns named in
    ``expected_output["ignore"]`` as ``table.column`` may differ)."""
    expected = _expected(episode)
    if "diff" not in expected:
        return not_measured("the task has no expected_output['diff'] to compare with")
    problems = compare_diff(episode.diff, expected["diff"], expected.get("ignore", ()))
    if problems:
        return failed(
            f"the end state differs from the expected diff in {len(problems)} "
            f"place(s): {_listed(problems, 'mismatches')}",
            mismatches=problems,
        )
    return passed("the end-state diff matches the expected diff")


@check("envkit/diff_satisfies_rules", "2")
def diff_satisfies_rules(episode: ToolEpisode) -> OutcomeVerdict:
    """The end-state diff obeys every rule in the task's ``expected_output["rules"]``.

    Version 2: a rule naming a table or column the episode's database does not have is
    the task's mistake (an evaluator error), no longer a rule that matches nothing."""
    rules = _expected(episode).get("rules")
    if rules is None:
        return not_measured("the task has no expected_output['rules'] to check")
    tables = {name: table.columns for name, table in episode.tables.items()}
    try:  # an empty or malformed list is the task's mistake: an evaluator error
        problems = check_rules(episode.diff, rules, tables=tables, schema=_facts(episode))
    except InputError as exc:
        raise InputError(f"the task's expected_output['rules']: {exc}") from exc
    if problems:
        return failed(
            f"{len(problems)} rule(s) broken: {_listed(problems, 'broken')}", broken=problems
        )
    return passed(f"all {len(rules)} rule(s) hold")


def _facts(episode: ToolEpisode) -> FactsReader:
    """The end state's schema, read only to explain a refused name (an episode saved
    without its database cannot say more than the names it audited)."""

    def read() -> SchemaFacts | None:
        if episode.database is None:
            return None
        # An sqlite3.Error, opening or reading, is caught by ``read_facts``, the caller:
        # the refusal is still made, only with less said.
        conn = episode.connect()
        try:
            return schema_facts(conn)
        finally:
            conn.close()

    return read


@check("envkit/rejected_calls_changed_nothing", "1")
def rejected_calls_changed_nothing(episode: ToolEpisode) -> OutcomeVerdict:
    """No row changed at a step whose call was rejected, failed, or is missing from the
    log (e.g. a tool that committed and then raised)."""
    ok_steps = {event["step"] for event in episode.actions if event["status"] == "ok"}
    bad = sorted({change["step"] for change in episode.audit} - ok_steps)
    if bad:
        return failed(
            f"rows changed at step(s) {bad}, whose calls did not succeed or are "
            "not in the action log",
            steps=bad,
        )
    return passed("every row change belongs to a successful call")
