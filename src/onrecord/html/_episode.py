"""One episode's detail view: its checks, its timeline (tool calls, or Gymnasium
attempts, with what became of each call when the environment is a tool world), row
diff and audit history, from the run's saved evidence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from onrecord._row_keys import key_text
from onrecord._step_text import NOT_SENT, not_sent, observer_failure
from onrecord._tool_steps import tool_calls
from onrecord.envkit._sql import encode_reals, same_value
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.html._timeline import select_timeline
from onrecord.report import Trial
from onrecord.runner import RunStore
from onrecord.runner._sealed import saved_evidence
from onrecord.runner._toolworld import TOOL_EPISODE_SCHEMA

__all__ = ["episode_view"]

_TEXT_LIMIT = 400


def episode_view(
    store: RunStore, stored: Any, trial: Trial, outcome: str, steps: int
) -> dict[str, Any]:
    """The detail view of one recorded episode, its timeline cut to ``steps`` events."""
    record: Mapping[str, Any] = stored.data
    saved = store.saved_episode(stored)
    evidence = saved.evidence
    view: dict[str, Any] = {
        "case_id": record["case_id"],
        "repeat": record["repeat"],
        "seed": record["seed"],
        "outcome": outcome,
        "fingerprint": record["fingerprint"],
        "digest": evidence.get("digest"),
        "measures": dict(trial.measures),
        "coverage_issues": list(trial.coverage_issues),
        "results": [
            {"name": r.name, "status": r.status, "reason": r.reason, "evidence": _short(r.evidence)}
            for r in trial.results
        ],
        "timeline": [],
        "diff": None,
        "audit": None,
        "ended": None,
    }
    if evidence.get("schema") == EPISODE_SCHEMA:
        _gym_view(view, saved_evidence(saved))
    elif evidence.get("schema") == TOOL_EPISODE_SCHEMA:
        view.update(
            ended=evidence["ending"],
            diff=_diff_rows(evidence["diff"]),
            audit=_audit_rows(evidence["audit"]["events"]),
            timeline=_tool_timeline(saved.action_log),
        )
        if evidence.get("agent_error"):
            view["coverage_issues"].append(f"agent error: {evidence['agent_error']}")
    view["timeline_total"] = len(view["timeline"])
    view["timeline"], view["timeline_gaps"] = select_timeline(view["timeline"], steps)
    return view


def _gym_view(view: dict[str, Any], episode: EpisodeEvidence) -> None:
    """Every attempted step. A tool world's step (``ToolWorldEnv``) also has ``call``,
    what became of its call (``ok``, ``rejected``, ``error``, ``finished``), and the
    call's error: its ``status`` is the capture's, ``ok`` whenever the env answered, so a
    rejected call read ``ok``."""
    transitions = episode.transitions()
    rewards = {t["index"]: t["reward"] for t in transitions}
    calls = tool_calls(transitions)
    view["ended"] = episode.ended
    timeline = []
    for a in episode.attempts():
        event = {
            "step": a["index"],
            "label": NOT_SENT if not_sent(a) else _short(a["action"]),
            "status": a["status"],
            "detail": "" if a["index"] not in rewards else f"reward {rewards[a['index']]:g}",
            "error": (a["error"] or {}).get("message", ""),
            "state": _short(observer_failure(a) or a["state"]),
        }
        call = calls.get(a["index"])
        if call is not None:
            event["call"] = call["status"]
            event["error"] = event["error"] or call["error"]
        timeline.append(event)
    view["timeline"] = timeline
    if calls:  # over every step, shown or not
        counts: dict[str, int] = {}
        for call in calls.values():
            counts[call["status"]] = counts.get(call["status"], 0) + 1
        view["call_counts"] = counts


def _tool_timeline(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "step": e.get("step"),
            "label": str(e.get("tool")),
            "arguments": _short(e.get("arguments")),
            "status": e.get("status"),
            "detail": _short(e.get("result")),
            "error": (e.get("error") or {}).get("message", ""),
            "state": e.get("state_version"),
        }
        for e in events
    ]


def _audit_rows(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each audit event: an update's changed columns as ``changes`` ([column, old, new]
    per column, by name); an insert's new row or a delete's old row whole as ``row``
    (``changes`` then empty). Values as :func:`value_text` prints them. Before, an
    insert's columns read ``null → value`` as if the row had held NULLs, and a NULL
    column of a new row was left out."""
    rows = []
    for event in events:
        old, new = event.get("old"), event.get("new")
        view: dict[str, Any] = {
            "seq": event.get("seq"),
            "step": event.get("step"),
            "table": event.get("table"),
            "op": event.get("op"),
            "key": key_text(event.get("key")),  # as the diff's, as `onrecord show`'s
            "changes": [],
        }
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            view["changes"] = _changed_columns(old, new)
        else:
            view["row"] = value_text(new if new is not None else old)
        rows.append(view)
    return rows


def _diff_rows(diff: Any) -> Any:
    """The end-state diff as the page prints it: a created or deleted row as its
    :func:`value_text`, a changed row as its key (as :func:`key_text` prints it: the
    script printed the TEXT key '1' bare, as the INTEGER key 1) and its changed columns
    (``columns``: [column, before, after], as in the audit's ``changes``)."""
    if not isinstance(diff, Mapping):
        return diff
    return {
        name: {
            "created": [value_text(row) for row in change.get("created") or ()],
            "changed": [_changed_row(item) for item in change.get("changed") or ()],
            "deleted": [value_text(row) for row in change.get("deleted") or ()],
        }
        if isinstance(change, Mapping)
        else change
        for name, change in diff.items()
    }


def _changed_row(item: Any) -> Any:
    if not isinstance(item, Mapping):
        return item
    before, after = item.get("before"), item.get("after")
    columns = []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        columns = _changed_columns(before, after)
    return {"key": key_text(item.get("key")), "columns": columns}


def _changed_columns(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[list[str]]:
    """[column, old, new] for each column whose value changed, by storage class too
    (INTEGER 1 to REAL 1.0 is a change the diff counts): the script compared values as
    JavaScript numbers, and left that change, or 2**53 to 2**53 + 1, out as none."""
    changed = sorted(c for c in {*old, *new} if not same_value(old.get(c), new.get(c)))
    return [[c, value_text(old.get(c)), value_text(new.get(c))] for c in changed]


def value_text(value: Any) -> str:
    """A row's value (or a whole row) as ``onrecord show`` prints it: JSON as the
    evidence stores it, so the text "1" and the number 1, or "null" and a NULL, read
    apart; an infinite REAL as ``{"$real":"Infinity"}``; a row's columns by name.
    Formatted here, not by the
    page's script: it parsed the data as JavaScript numbers, which print the REAL 1.0 as
    1 and round 9007199254740993 to 9007199254740992."""
    try:
        return orjson.dumps(encode_reals(value), option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # not JSON (a saved record never holds one: never crash on it)
        return str(value)


def _short(value: Any) -> str:
    text = (
        value
        if isinstance(value, str)
        else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    )
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"
