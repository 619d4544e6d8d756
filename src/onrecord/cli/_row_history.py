"""``onrecord show RUN --episode``: the rows a tool-world episode really wrote.

The tool calls say what the agent asked for and what each tool answered; the audit
history says what changed in the database, step by step, and the end-state diff what
stayed changed. Only the HTML report showed either, so in a terminal an agent that
changed a protected row and restored it looked like one that never touched it.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from rich.console import Console

from onrecord._row_keys import SEPARATOR, key_text
from onrecord.cli._episode_view import Cells, as_json
from onrecord.cli._render import _table, literal

__all__ = ["render_row_history"]

_KEY = 40
_VALUES = 100
"""Characters of a key, and of a row's values, shown before ``… (N characters)``."""
_CHANGE = {"insert": "created", "update": "changed", "delete": "deleted"}
_ROWS = 100
"""Row changes printed by default (one call may write 10,000 rows: all were printed)."""


def render_row_history(
    console: Console,
    evidence: Mapping[str, Any],
    steps: Container[int],
    *,
    full: bool = False,
    command: str = "onrecord show FILE",
    chosen: bool = False,
) -> None:
    """The audit history's row changes made at ``steps`` (the calls shown above them;
    every one if ``chosen`` with ``--steps``, else the first ``_ROWS``), then what stayed
    changed at the end, table by table."""
    audit = evidence.get("audit")
    events = audit.get("events", []) if isinstance(audit, Mapping) else []
    events = [event for event in events if isinstance(event, Mapping)]
    if not events:
        console.print("row changes: none (no call wrote a row)")
        return
    table = _table("step", "table", "change", "key", "values", title="row changes, in order")
    cell = Cells(full=full)
    at_steps = [event for event in events if event.get("step") in steps]
    shown = at_steps if chosen else at_steps[:_ROWS]
    for event in shown:
        operation = str(event.get("op"))
        table.add_row(
            str(event.get("step")),
            literal(event.get("table")),
            _CHANGE.get(operation, literal(operation)),
            cell(key_text(event.get("key")), _KEY),
            cell(_values(event), _VALUES),
        )
    if shown:
        console.print(table)
    if len(shown) < len(at_steps):
        left = at_steps[len(shown) :]
        console.print(
            f"{len(left)} more row change(s) at these steps left out; every one: "
            f"{literal(command)} --steps {left[0].get('step')}-{left[-1].get('step')}",
            soft_wrap=True,  # the command is copied from here: one line
        )
    if len(at_steps) < len(events):
        console.print(
            f"{len(events) - len(at_steps)} row change(s) made at steps not shown left out "
            "(--steps all shows every one)"
        )
    layouts = audit.get("tables") if isinstance(audit, Mapping) else None
    console.print(_end_state(evidence.get("diff"), events, _key_columns(layouts)))
    cell.notice(console, command)


def _values(event: Mapping[str, Any]) -> str:
    """The columns an update changed, ``column: old → new``; a created or deleted row
    whole. Values as JSON, so text "1" and the number 1 read apart; an infinite REAL as
    the saved evidence writes it, ``{"$real": "Infinity"}`` (JSON has none: it read null)."""
    # Here, not at the top: `show` of a report or a Gymnasium run imports no envkit.
    from onrecord.envkit._sql import encode_reals, same_value

    old, new = encode_reals(event.get("old")), encode_reals(event.get("new"))
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        changed = [
            column
            for column in new
            if column not in old or not same_value(old[column], new[column])
        ]
        return "; ".join(
            f"{column}: {as_json(old.get(column))} → {as_json(new[column])}" for column in changed
        )
    return as_json(new if new is not None else old)


def _end_state(diff: Any, events: list[Mapping[str, Any]], keys: Mapping[str, list[str]]) -> str:
    """What stayed changed, per table, and what the history changed that the end state
    does not show (changed, then put back): a table whose every row was put back by its
    name, and in a table that also has lasting changes the rows put back by their keys
    (before, such a table read as if only its lasting rows had been written)."""
    counts: list[str] = []
    changed: set[str] = set()
    for name, change in sorted((diff or {}).items()):
        if not isinstance(change, Mapping):
            continue
        parts = [
            f"{len(change.get(kind) or ())} {kind}"
            for kind in ("created", "changed", "deleted")
            if change.get(kind)
        ]
        if parts:
            changed.add(name)
            counts.append(f"{literal(name)} {', '.join(parts)}")
    text = "at the end: " + ("; ".join(counts) if counts else "no row changed")
    restored = sorted({str(event.get("table")) for event in events} - changed)
    rows = _rows_put_back(events, keys)
    named = [literal(name) for name in restored] + [
        _row_keys(name, rows[name]) for name in sorted(changed) if rows.get(name)
    ]
    if named:
        text += f" — changed during the episode and put back by its end: {'; '.join(named)}"
    return text


_KEYS = 10
"""Keys of rows put back named per table before the rest are counted."""


def _rows_put_back(
    events: list[Mapping[str, Any]], keys: Mapping[str, list[str]]
) -> dict[str, list[str]]:
    """Per table, the keys (as :func:`key_text` prints them) of the rows the history
    wrote whose state at the end is their state at the start, in the order first
    written: as the end-state diff folds the history (an insert starts from no row, a
    delete ends in none), key by key. An update of a key column (``keys``: each table's)
    moves the row: its old key ends in no row and its new key starts from none. Grouped
    under the old key, a row renumbered and then changed and restored was listed as put
    back, though it was created."""
    first: dict[tuple[str, str], str] = {}
    last: dict[tuple[str, str], str] = {}
    shown: dict[tuple[str, str], str] = {}
    for event in events:
        table, op = str(event.get("table")), event.get("op")
        # Rows are told apart by their key as JSON, so 1 and 1.0 differ as the diff's
        # storage classes do; each is named by its key as the table above prints it.
        row = (table, _stored_json(event.get("key")))
        shown.setdefault(row, key_text(event.get("key")))
        old, new = (_stored_json(event.get(side)) for side in ("old", "new"))
        first.setdefault(row, "null" if op == "insert" else old)
        moved = _new_key(event, keys.get(table)) if op == "update" else None
        if moved is None or _stored_json(moved) == row[1]:
            last[row] = "null" if op == "delete" else new
            continue
        last[row] = "null"  # the row left this key
        to = (table, _stored_json(moved))
        shown.setdefault(to, key_text(moved))
        first.setdefault(to, "null")
        last[to] = new
    put_back: dict[str, list[str]] = {}
    for (table, key), before in first.items():
        if before == last[(table, key)]:
            put_back.setdefault(table, []).append(shown[(table, key)])
    return put_back


def _key_columns(layouts: Any) -> dict[str, list[str]]:
    """Each audited table's key columns, from the audit's ``tables`` layouts."""
    if not isinstance(layouts, Mapping):
        return {}
    return {
        str(name): [str(column) for column in layout["key"]]
        for name, layout in layouts.items()
        if isinstance(layout, Mapping) and isinstance(layout.get("key"), list)
    }


def _new_key(event: Mapping[str, Any], columns: list[str] | None) -> Any:
    """The key an update left its row under, read from its new values as the audit
    keys a row (one column: its value, else a list); None if they do not say (a key is
    never NULL: the snapshot's triggers refuse one)."""
    new = event.get("new")
    if not columns or not isinstance(new, Mapping) or not all(c in new for c in columns):
        return None
    values = [new[column] for column in columns]
    return values[0] if len(values) == 1 else values


def _stored_json(value: Any) -> str:
    """A key or a row's values as JSON, an infinite REAL as the evidence writes it."""
    from onrecord.envkit._sql import encode_reals  # here: see _values

    return as_json(encode_reals(value))


def _row_keys(table: str, keys: list[str]) -> str:
    """``invoices rows 3, 7``: a table's rows put back, by key (the first ``_KEYS``)."""
    shown = [key if len(key) <= _KEY else key[:_KEY] + "…" for key in keys[:_KEYS]]
    more = f" and {len(keys) - _KEYS} more" if len(keys) > _KEYS else ""
    word = "row" if len(keys) == 1 else "rows"
    return f"{literal(table)} {word} {literal(SEPARATOR.join(shown))}{more}"
