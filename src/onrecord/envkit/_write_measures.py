"""Trial measures counted from the audit history rather than the end-state diff.

The end-state diff cannot tell an agent that changed a row from one that changed it,
changed it back and changed it again: both end the same. The audit history records every
row write, so these measures tell them apart (``rows_changed`` stays the diff's count).

- ``row_writes``: row writes of the episode, one per insert, update or delete event (a
  statement that updates three rows writes three times; an update that sets a row to the
  values it already holds still counts, as the agent did write it);
- ``rows_put_back``: rows that differed from their start state at some point of the
  episode and equal it again at the end (changed then restored, or created then deleted).
  A no-op update never left the start state, so it puts nothing back.

Rows are identified by (table, key) and values compare by value and storage class, as
the diff folds them, so ``rows_changed + rows_put_back`` is every row the episode moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from onrecord.envkit._sql import Table, native_value, same_values
from onrecord.envkit.audit import AuditEvent

__all__ = ["write_measures"]

_Row = tuple[Any, ...] | None
"""A row's values in column order, ``None`` while the row does not exist."""
_Key = tuple[str, Any]
"""(table, key) of a row."""


def write_measures(events: Iterable[AuditEvent], tables: Mapping[str, Table]) -> dict[str, float]:
    """``{"row_writes", "rows_put_back"}`` of an audit history (``tables`` gives each
    audited table's layout, as ``ToolEpisode.tables`` does)."""
    start: dict[_Key, _Row] = {}
    now: dict[_Key, _Row] = {}
    moved: set[_Key] = set()
    writes = 0
    for event in events:
        writes += 1
        touched = _apply(event, tables[event["table"]], start, now)
        # Checked after the whole event: an update passes through "absent" in between.
        moved.update(key for key in touched if not _same(now[key], start[key]))
    put_back = sum(_same(now[key], start[key]) for key in moved)
    return {"row_writes": float(writes), "rows_put_back": float(put_back)}


def _apply(
    event: AuditEvent, table: Table, start: dict[_Key, _Row], now: dict[_Key, _Row]
) -> list[_Key]:
    """Fold one event into the rows' start and current states; the keys it touched.
    The old row's key loses the row first: an update that changes a key moves the row to
    another key (the old one ends absent), as the diff reads it."""
    touched = []
    old, new = _values(table, event["old"]), _values(table, event["new"])
    if old is not None:
        key = (table.name, table.key_of(old))
        start.setdefault(key, old)
        now[key] = None
        touched.append(key)
    if new is not None:
        key = (table.name, table.key_of(new))
        start.setdefault(key, None)
        now[key] = new
        touched.append(key)
    return touched


def _values(table: Table, row: Mapping[str, Any] | None) -> _Row:
    if row is None:
        return None
    return tuple(native_value(row[column]) for column in table.columns)


def _same(left: Sequence[Any] | None, right: Sequence[Any] | None) -> bool:
    if left is None or right is None:
        return left is right
    return same_values(left, right)
