"""Which episodes a report page details, and the compact index that lists every one.

A run of 10,000 episodes detailed in full made a page of 63 MB that Chromium took about a
minute to open; detailing only the first 300 failing ones hid the others. So every
episode is listed in a compact index (a few tens of bytes each, rendered a page at a
time by ``report.js``), failing and incomplete episodes first, and the detail views
(timeline, row diff, audit history, check messages and evidence) go to the failing and
incomplete episodes first, within a budget of steps and bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from onrecord.errors import InputError
from onrecord.html._episode import episode_view
from onrecord.html._timeline import TIMELINE_LIMIT
from onrecord.report import EvaluationReport, Trial
from onrecord.runner import RunStore

__all__ = ["PAGE_BYTES", "PAGE_STEPS", "episodes_data", "ordered"]

DETAIL_LIMIT = 300
"""``--episodes auto`` details every episode of a run up to this many."""
BAD_LIMIT = 1_000
"""…and beyond it the failing and incomplete ones, at most this many (about 6 MB)."""
PAGE_STEPS = 20_000
"""Timeline events on the whole page: 300 episodes of 500 steps made a 27 MB page. Each
detailed episode keeps at most its share of this (between 50 and TIMELINE_LIMIT)."""
MIN_STEPS = 50
PAGE_BYTES = 12 * 2**20
"""The detail views' JSON on one page, for ``auto`` and ``failing`` (an explicit number
or ``all`` is the reader's choice): episodes with large diffs or audit histories stop
adding details here, and are still listed."""

Key = tuple[str, int]


def ordered(keys: list[Key], outcomes: Mapping[Key, str]) -> list[Key]:
    """Failing and incomplete episodes first, each group in the report's order."""
    return [k for k in keys if outcomes[k] != "pass"] + [k for k in keys if outcomes[k] == "pass"]


def episodes_data(
    store: RunStore, report: EvaluationReport, mode: str
) -> tuple[list[dict[str, Any]], dict[str, Any], str, int]:
    """The detail views, the index of every episode, the note on what is detailed, and
    how many episodes the run directory holds (more than the report's when its grading
    is out of date)."""
    trials = {(str(t.case["case_id"]), t.repeat): t for t in report.trials}
    outcomes = {key: t.outcome_among(report.check_names) for key, t in trials.items()}
    order = ordered(list(trials), outcomes)
    chosen = _choose(order, mode, outcomes)
    wanted = set(chosen)
    steps = max(MIN_STEPS, min(TIMELINE_LIMIT, PAGE_STEPS // max(len(chosen), 1)))
    views: dict[Key, dict[str, Any]] = {}
    facts: dict[Key, tuple[Any, str]] = {}  # seed and ending, for the index
    for record in store.records():
        evidence = record.data.get("evidence") or {}
        facts[record.key] = (
            record.data.get("seed"),
            str(evidence.get("ending") or evidence.get("ended") or ""),
        )
        if record.key in wanted:
            key = record.key
            views[key] = episode_view(store, record, trials[key], outcomes[key], steps)
    kept = _within_budget([views[key] for key in chosen if key in views], mode)
    detail = {(v["case_id"], v["repeat"]): at for at, v in enumerate(kept)}
    index = _index(order, trials, outcomes, facts, detail)
    return kept, index, _note(len(kept), order, outcomes, mode, store), len(facts)


def _choose(order: list[Key], mode: str, outcomes: Mapping[Key, str]) -> list[Key]:
    bad = [key for key in order if outcomes[key] != "pass"]
    if mode == "all" or (mode == "auto" and len(order) <= DETAIL_LIMIT):
        return order
    if mode in ("auto", "failing"):
        return bad[:BAD_LIMIT]
    limit = int(mode) if mode.isdigit() else -1
    if limit < 0:  # before: "-5" silently meant 0
        raise InputError(f"--episodes must be auto, all, failing or a number, got {mode!r}")
    return order[:limit]


def _within_budget(views: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    if mode not in ("auto", "failing"):
        return views
    total = 0
    for count, view in enumerate(views):
        total += len(orjson.dumps(view))
        if total > PAGE_BYTES:
            return views[:count]
    return views


def _index(
    order: list[Key],
    trials: Mapping[Key, Trial],
    outcomes: Mapping[Key, str],
    facts: Mapping[Key, tuple[Any, str]],
    detail: Mapping[Key, int],
) -> dict[str, Any]:
    """Every episode as ``[case, repeat, seed, outcome, ending, [checks not passed],
    detail]``: case, ending and checks as positions in ``cases``, ``endings`` and
    ``checks`` (a task id repeated 300 times is stored once), ``detail`` the position in
    ``episodes`` or -1."""
    cases: dict[str, int] = {}
    endings: dict[str, int] = {}
    checks: dict[str, int] = {}
    rows = []
    for key in order:
        seed, ending = facts.get(key, (None, ""))
        not_passed = [
            checks.setdefault(r.name, len(checks))
            for r in trials[key].results
            if r.status != "pass"
        ]
        rows.append(
            [
                cases.setdefault(key[0], len(cases)),
                key[1],
                seed,
                outcomes[key],
                endings.setdefault(ending, len(endings)),
                not_passed,
                detail.get(key, -1),
            ]
        )
    return {"cases": list(cases), "endings": list(endings), "checks": list(checks), "rows": rows}


def _note(
    detailed: int, order: list[Key], outcomes: Mapping[Key, str], mode: str, store: RunStore
) -> str:
    """What the page details and how to see the rest; empty when it details them all."""
    total = len(order)
    if detailed == total:
        return ""
    bad = sum(outcome != "pass" for outcome in outcomes.values())
    note = f"details of {detailed} of {total} episodes (failing and incomplete first)"
    if mode in ("auto", "failing") and detailed < bad:
        note += (
            f"; {bad - detailed} failing or incomplete episodes beyond the page's budget are "
            "listed with the checks they did not pass"
        )
    return note + (
        f"; every episode is listed: `onrecord show {store.path.name} --episode CASE#REPEAT` "
        f"prints one, `onrecord report {store.path.name} --episodes all` details every one"
    )
