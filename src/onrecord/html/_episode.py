"""One episode's detail view: its checks, its timeline (tool calls, or Gymnasium
attempts, with what became of each call when the environment is a tool world), row
diff and audit history, from the run's saved evidence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from onrecord._row_keys import key_text
from onrecord._tool_steps import tool_calls
from onrecord.envkit._sql import same_value
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.html._timeline import select_timeline
from onrecord.report import Trial
from onrecord.runner import RunStore
from onrecord.runner._gym import saved_evidence
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
            "label": _short(a["action"]),
            "status": a["status"],
            "detail": "" if a["index"] not in rewards else f"reward {rewards[a['index']]:g}",
            "error": (a["error"] or {}).get("message", ""),
            "state": _short(a["state"]),
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
    """Each audit event: an update's changed columns as ``changes`` (column → [old,
    new]); an insert's new row or a delete's old row whole as ``row`` (``changes`` then
    empty). Before, an insert's columns read ``null → value`` as if the row had held
    NULLs, and a NULL column of a new row was left out."""
    rows = []
    for event in events:
        old, new = event.get("old"), event.get("new")
        view: dict[str, Any] = {
            "seq": event.get("seq"),
            "step": event.get("step"),
            "table": event.get("table"),
            "op": event.get("op"),
            "key": key_text(event.get("key")),  # as the diff's, as `onrecord show`'s
            "changes": {},
        }
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            # By storage class too: INTEGER 1 to REAL 1.0 is a change the diff counts.
            changed = [c for c in {*old, *new} if not same_value(old.get(c), new.get(c))]
            view["changes"] = {k: [old.get(k), new.get(k)] for k in sorted(changed)}
        else:
            view["row"] = new if new is not None else old
        rows.append(view)
    return rows


def _diff_rows(diff: Any) -> Any:
    """The end-state diff with each changed row's key as :func:`key_text` prints it (the
    script printed a text key bare: the TEXT key '1' read as the INTEGER key 1)."""
    if not isinstance(diff, Mapping):
        return diff
    return {
        name: {**change, "changed": [_keyed(item) for item in change.get("changed") or ()]}
        if isinstance(change, Mapping)
        else change
        for name, change in diff.items()
    }


def _keyed(item: Any) -> Any:
    return {**item, "key": key_text(item.get("key"))} if isinstance(item, Mapping) else item


def _short(value: Any) -> str:
    text = (
        value
        if isinstance(value, str)
        else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    )
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"
