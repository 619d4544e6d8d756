"""Which timeline events a long episode's detail view keeps: the first steps, the last
ones and every step that did not succeed, so the step that failed is never cut off (a
tool world's Gymnasium step whose call did not succeed is one, though the step is ``ok``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord._tool_steps import DONE

__all__ = ["TIMELINE_LIMIT", "select_timeline"]

TIMELINE_LIMIT = 500
_HEAD = 200
_TAIL = 50


def select_timeline(
    events: Sequence[Mapping[str, Any]], limit: int = TIMELINE_LIMIT
) -> tuple[list[Mapping[str, Any]], list[list[int]]]:
    """At most ``limit`` events in order, and the gaps as ``[index, left_out]``: before
    the kept event at ``index`` (or at the end when ``index`` is the kept count),
    ``left_out`` events are not shown."""
    total = len(events)
    if total <= limit:
        return list(events), []
    tail = min(_TAIL, limit // 4)
    head = min(_HEAD, limit - tail)
    kept = set(range(head)) | set(range(total - tail, total))
    middle = range(head, total - tail)
    failed = [p for p in middle if _failed(events[p])]
    kept.update(failed[: max(limit - len(kept), 0)])
    for position in middle:  # room left: more of the beginning, in order
        if len(kept) >= limit:
            break
        kept.add(position)
    chosen = sorted(kept)
    gaps: list[list[int]] = []
    previous = -1
    for index, position in enumerate(chosen):
        if position > previous + 1:
            gaps.append([index, position - previous - 1])
        previous = position
    if previous < total - 1:
        gaps.append([len(chosen), total - 1 - previous])
    return [events[position] for position in chosen], gaps


def _failed(event: Mapping[str, Any]) -> bool:
    """A step that did not succeed, or whose tool call did not (``call``)."""
    return bool(event.get("status") != "ok" or event.get("call", "ok") not in DONE)
