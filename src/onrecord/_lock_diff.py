"""Where two report locks differ, as text for a refused comparison."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from onrecord._natural import natural_key
from onrecord._portable import key_path

__all__ = ["legacy_lock", "listed", "lock_differences", "where_differ"]


_SHOWN_DIFFERENCES = 4


def where_differ(a: Any, b: Any, path: str) -> str:
    """Where two lock values differ, as ``path: A …, B …`` (the first few places): "lock
    settings differ: run" did not say that it was the seeds."""
    found: list[str] = []
    _collect_differences(a, b, path, found)
    shown = "; ".join(found[:_SHOWN_DIFFERENCES])
    more = len(found) - _SHOWN_DIFFERENCES
    return shown + (f"; and {more} more" if more > 0 else "")


def _collect_differences(a: Any, b: Any, path: str, found: list[str]) -> None:
    if len(found) > _SHOWN_DIFFERENCES:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                _collect_differences(a.get(key), b.get(key), _step(path, key), found)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (item_a, item_b) in enumerate(zip(a, b, strict=True)):
            if item_a != item_b:
                _collect_differences(item_a, item_b, f"{path}[{index}]", found)
        return
    found.append(f"{path or 'value'}: {_short(a)} in A, {_short(b)} in B")


def _step(path: str, key: Any) -> str:
    """``path.key``, or ``path["a.b"]`` for a key that is no plain identifier (see
    ``key_path``); ``key`` alone at the top. After a dot, a settings key "a.b" read as
    "b" inside "a", and a key holding a newline put a line of its own in the refusal."""
    shown = key_path(path, str(key))
    return shown.removeprefix(".") if not path else shown


def _short(value: Any) -> str:
    text = "nothing" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def lock_differences(lock_a: dict[str, Any], lock_b: dict[str, Any]) -> list[str]:
    """Every reason two locks make their reports incomparable (empty when comparable)."""
    reasons = []
    checks_a, checks_b = lock_a.get("checks", {}), lock_b.get("checks", {})
    for name in sorted(set(checks_a) | set(checks_b), key=natural_key):
        version_a, version_b = checks_a.get(name), checks_b.get(name)
        if version_a is None or version_b is None:
            side = "A" if version_b is None else "B"
            reasons.append(f"check {name!r} is only in {side} (version {version_a or version_b!r})")
        elif version_a != version_b:
            reasons.append(f"check {name!r}: version {version_a!r} in A, {version_b!r} in B")
    if lock_a.get("environments") != lock_b.get("environments"):
        reasons.append(
            "environment settings differ (environment/observer ids, max_steps, "
            "options, spec or completion): "
            + where_differ(lock_a.get("environments"), lock_b.get("environments"), "environments")
        )
    reasons += _case_differences(lock_a, lock_b)
    extra_a = {k: v for k, v in lock_a.items() if k not in _CORE_LOCK_KEYS}
    extra_b = {k: v for k, v in lock_b.items() if k not in _CORE_LOCK_KEYS}
    differing = [
        key for key in sorted(set(extra_a) | set(extra_b)) if extra_a.get(key) != extra_b.get(key)
    ]
    if differing:
        reasons.append(
            "lock settings differ (e.g. the seeds, the policy or the model settings the "
            "reports were made for): "
            + "; ".join(
                where_differ(extra_a.get(key), extra_b.get(key), _step("", key))
                for key in differing
            )
        )
    return reasons


_CORE_LOCK_KEYS = ("library", "checks", "environments", "cases")


def _case_differences(lock_a: dict[str, Any], lock_b: dict[str, Any]) -> list[str]:
    """Cases only one lock has; repeats, seeds or environments that differ."""
    reasons = []
    cases_a = {(c["case_id"], c["content_digest"]): c["trials"] for c in lock_a.get("cases", [])}
    cases_b = {(c["case_id"], c["content_digest"]): c["trials"] for c in lock_b.get("cases", [])}
    only_a = sorted(set(cases_a) - set(cases_b), key=_case_order)
    only_b = sorted(set(cases_b) - set(cases_a), key=_case_order)
    if only_a or only_b:
        # Named plainly: "(e.g. ['case-1'])" was a Python list, and "(e.g. [])" named none.
        sides = [
            f"{len(only)} only in {side}{_named(only)}"
            for side, only in (("A", only_a), ("B", only_b))
        ]
        reasons.append(f"case sets differ: {', '.join(sides)}")
    shared = sorted(set(cases_a) & set(cases_b), key=_case_order)
    differing = [key[0] for key in shared if _seeds(cases_a[key]) != _seeds(cases_b[key])]
    if differing:
        reasons.append(
            f"repeats or seeds differ for {_cases(len(differing))} ({listed(differing)})"
        )
    old_a, old_b = legacy_lock(lock_a), legacy_lock(lock_b)
    if old_a != old_b:
        side = "A" if old_a else "B"
        return [*reasons, _LEGACY.format(side=side)]
    moved = [
        key[0]
        for key in shared
        if _seeds(cases_a[key]) == _seeds(cases_b[key]) and cases_a[key] != cases_b[key]
    ]
    if moved:
        reasons.append(
            f"{_cases(len(moved))} ran in other environment settings in A than in B "
            f"({listed(moved)}): their repeats cannot be paired"
        )
    return reasons


_NAMED = 3


def listed(names: Sequence[str]) -> str:
    """``full-01, full-02 and 3 more``: a few names and the rest counted, as the
    incomplete run's reason names its episodes (before: ``e.g. ['full-01']``, a Python
    list)."""
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    return ", ".join(names[:_NAMED]) + more


def _named(cases: Sequence[tuple[str, str]]) -> str:
    """`` (case-1, case-2)`` for the cases' ids, nothing for none."""
    return f" ({listed([case_id for case_id, _ in cases])})" if cases else ""


def _cases(count: int) -> str:
    return f"{count} case" if count == 1 else f"{count} cases"


_LEGACY = (
    "{side}'s lock was saved by an earlier onrecord, which did not record the environment "
    "settings each repeat ran in: re-grade that run (onrecord regrade RUN, then compare "
    "RUN/regrades/NAME) or rebuild the report with EvaluationReport.from_trials("
    "report.trials)"
)


def legacy_lock(lock: dict[str, Any]) -> bool:
    """Whether ``lock`` is of several environment settings yet, saved by an earlier
    onrecord, does not say which one each repeat ran in (``[repeat, seed]`` entries
    without the environment's index)."""
    if len(lock.get("environments") or ()) < 2:
        return False
    return any(len(entry) == 2 for case in lock.get("cases", []) for entry in case["trials"])


def _seeds(trials: list[list[Any]]) -> list[list[Any]]:
    """A case's [repeat, seed] entries, without the environment index that a report of
    several environment settings adds to each."""
    return [entry[:2] for entry in trials]


def _case_order(case: tuple[str, str]) -> tuple[Any, str]:
    """(case id, content digest) in natural order of case id: task-2 before task-10."""
    return natural_key(case[0]), case[1]
