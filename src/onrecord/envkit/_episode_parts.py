"""The parts of a saved tool-world episode, read from their bytes and refused unless they
are what ``save_episode`` writes.

The manifest pins each part by sha256, and each JSON part carries a digest of its own;
both can be re-sealed after an edit. So each part is also checked for its shape here,
naming the file and the field: before, an ``audit.json`` without ``events`` was a
``KeyError`` in ``ToolEpisode.audit``, a ``diff.json`` holding ``"diff": true`` made
``ToolEpisode.diff`` return ``True``, and two calls numbered 1 crashed ``onrecord show``.

And the diff must be the one the audit history folds to (``diff_from_events``): both are
written from one read of the history, and checks grade the diff, so a ``diff.json``
rewritten to claim other rows (and re-sealed) must not pass for the episode's.
``onrecord verify`` also checks the history against ``final.sqlite``
(``_episode_database``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from onrecord._canonical import canonical_bytes
from onrecord.case import EvalCase
from onrecord.envkit._diff_shape import checked_diff
from onrecord.envkit._episode_records import record_of
from onrecord.envkit._sql import BLOB_TAG, Table, load_reals
from onrecord.envkit._text import TEXT_TAG
from onrecord.envkit.diff import StateDiff, diff_from_events
from onrecord.envkit.log import EVENT_FIELDS, parse_action_log
from onrecord.episode._verify_files import check_entry, read_regular, regular_sha256
from onrecord.errors import ConsistencyError, DigestMismatch, OnrecordError, SchemaError

__all__ = [
    "AUDIT_SCHEMA",
    "DIFF_SCHEMA",
    "PARTS",
    "TASK_SCHEMA",
    "check_diff_follows",
    "layouts",
    "read_actions",
    "read_audit",
    "read_diff",
    "read_parts",
    "read_task",
    "same",
]

AUDIT_SCHEMA = "onrecord.envkit.audit/v1"
DIFF_SCHEMA = "onrecord.envkit.diff/v1"
TASK_SCHEMA = "onrecord.envkit.task/v1"
_RESTORE = "the file was changed after saving: restore the episode from a copy"
_STATUSES = ("ok", "error", "rejected")
_OPS = {"insert": (False, True), "update": (True, True), "delete": (True, False)}
"""Each audit operation: (has an old row, has a new row)."""
_EVENT_FIELDS = frozenset({"seq", "step", "table", "op", "key", "old", "new"})
_HEX = re.compile(r"(?:[0-9a-f]{2})*")


def same(a: Any, b: Any) -> bool:
    """Whether two parsed values are the same JSON: equal, and written alike (``1``,
    ``1.0`` and ``true`` are equal in Python but are three values in a record; an
    infinite REAL, which JSON writes as ``null``, is not equal to ``None``)."""
    return bool(a == b) and canonical_bytes(a) == canonical_bytes(b)


def _refuse(path: Path, field: str, problem: str) -> NoReturn:
    raise SchemaError(f"{path}: {field} {problem}; {_RESTORE}")


# -- actions.jsonl ----------------------------------------------------------------------
def read_actions(path: Path, data: bytes) -> tuple[dict[str, Any], ...]:
    """The calls of ``actions.jsonl``, each with the fields ``ToolWorld`` logs and
    numbered 1, 2, 3, ... in order (``step``), as ``show`` and the checks read them."""
    read = parse_action_log(data, path)
    if not read.complete:
        _refuse(path, "its last line", "is cut short (save_episode writes whole lines)")
    for number, event in enumerate(read.events, start=1):
        _check_call(path, number, event)
    return read.events


def _check_call(path: Path, number: int, event: Mapping[str, Any]) -> None:
    where = f"call {number} (line {number})"
    missing = [name for name in EVENT_FIELDS if name not in event]
    if missing:
        _refuse(path, where, f"lacks the fields {missing} every logged call has")
    step = event["step"]
    if type(step) is not int or step != number:
        _refuse(
            path,
            f"field 'step' of {where}",
            f"is {step!r:.80}, but the calls are numbered 1, 2, 3, ... in order, so it must "
            f"be {number}",
        )
    for field, fits, kind in _CALL_FIELDS:
        if not fits(event[field]):
            _refuse(
                path, f"field {field!r} of {where}", f"must be {kind}, got {event[field]!r:.80}"
            )


_CALL_FIELDS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("tool", lambda v: type(v) is str, "text"),
    ("status", lambda v: v in _STATUSES, f"one of {list(_STATUSES)}"),
    ("state_version", lambda v: type(v) is int and v >= 0, "a count from 0"),
    ("reads", lambda v: type(v) is list, "a list"),
    ("error", lambda v: v is None or type(v) is dict, "null or an object"),
)
"""The fields of a logged call that ``show`` and the checks read: (name, test, what)."""


# -- audit.json -------------------------------------------------------------------------
def read_audit(path: Path, data: bytes) -> dict[str, Any]:
    """The audit record: ``tables`` (each audited table's ``columns`` and ``key``) and
    ``events`` (every row change, in ``seq`` order), infinite REALs decoded."""
    record = record_of(path, data, AUDIT_SCHEMA)
    for field in ("tables", "events"):
        if field not in record:
            _refuse(path, f"field {field!r}", "is missing")
    tables = _layouts(path, record["tables"])
    events = record["events"]
    if type(events) is not list:
        _refuse(path, "field 'events'", f"must be the list of audit events, got {events!r:.80}")
    if b'"$real"' in data:
        events = record["events"] = load_reals(events)
    previous = 0
    for index, event in enumerate(events):
        previous = _check_event(path, index, event, tables, previous)
    return record


def layouts(audit: Mapping[str, Any]) -> dict[str, Table]:
    """The audited tables of a checked audit record, as ``Table`` layouts."""
    return {
        name: Table(name, tuple(item["columns"]), tuple(item["key"]), "")
        for name, item in audit["tables"].items()
    }


def _layouts(path: Path, tables: Any) -> dict[str, Table]:
    if type(tables) is not dict:
        _refuse(
            path, "field 'tables'", f"must map each audited table to its layout, got {tables!r:.80}"
        )
    for name, item in tables.items():
        if not (
            type(item) is dict
            and item.keys() == {"columns", "key"}
            and _names(item["columns"])
            and _names(item["key"])
            and set(item["key"]) <= set(item["columns"])
        ):
            _refuse(
                path,
                f"field 'tables' entry {name!r}",
                "must be {'columns': [name, ...], 'key': [column, ...]} (the key among the "
                f"columns), got {item!r:.120}",
            )
    return layouts({"tables": tables})


def _names(value: Any) -> bool:
    return (
        type(value) is list
        and bool(value)
        and all(type(name) is str for name in value)
        and len(set(value)) == len(value)
    )


def _check_event(
    path: Path, index: int, event: Any, tables: Mapping[str, Table], previous: int
) -> int:
    """Refuse an audit event that is not one ``save_episode`` writes; its ``seq``."""
    problem = _event_problem(event, tables, previous)
    if problem is not None:
        _refuse(path, f"field 'events' item {index}{problem[0]}", problem[1])
    seq: int = event["seq"]
    return seq


def _event_problem(
    event: Any, tables: Mapping[str, Table], previous: int
) -> tuple[str, str] | None:
    """``(field, what is wrong)`` of an audit event, or ``None`` when it is well formed."""
    if type(event) is not dict or event.keys() != _EVENT_FIELDS:
        return "", f"must be an event {sorted(_EVENT_FIELDS)}, got {event!r:.120}"
    seq, step, op, name = event["seq"], event["step"], event["op"], event["table"]
    if type(seq) is not int or seq <= previous:
        return " 'seq'", f"is {seq!r:.80}, but the events are numbered in order (after {previous})"
    if type(step) is not int or step < 0:
        return " 'step'", f"must be a step number, got {step!r:.80}"
    table = tables.get(name) if type(name) is str else None
    if table is None:
        return " 'table'", f"names no table of field 'tables': {name!r:.80}"
    if type(op) is not str or op not in _OPS:
        return " 'op'", f"must be one of {list(_OPS)}, got {op!r:.80}"
    for side, present in zip(("old", "new"), _OPS[op], strict=True):
        row = event[side]
        if (row is not None) != present or (present and not _is_row(row, table.columns)):
            wanted = f"a row of {table.name!r} (its columns {list(table.columns)})"
            return (
                f" '{side}'",
                f"must be {wanted if present else 'null'} for an {op}, got {row!r:.120}",
            )
    row = event["new"] if op == "insert" else event["old"]
    key = [row[column] for column in table.key]
    if not _same_key(event["key"], key[0] if len(key) == 1 else key):
        return " 'key'", f"is {event['key']!r:.80}, not the key of its row"
    return None


def _same_key(saved: Any, expected: Any) -> bool:
    if type(expected) is list:
        return (
            type(saved) is list
            and len(saved) == len(expected)
            and all(map(_same_value, saved, expected))
        )
    return _same_value(saved, expected)


def _same_value(a: Any, b: Any) -> bool:
    """``same`` for one column value (without serializing it)."""
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b)


_PLAIN = frozenset({type(None), int, float, str})


def _is_row(row: Any, columns: Sequence[str]) -> bool:
    return (
        type(row) is dict
        and len(row) == len(columns)
        and all(map(row.__contains__, columns))
        and (_PLAIN.issuperset(map(type, row.values())) or all(map(_is_value, row.values())))
    )


def _is_value(value: Any) -> bool:
    """Whether ``value`` is one SQLite can hold, as a saved row writes it (a BLOB as
    ``{"$blob": hex}``, TEXT that is not UTF-8 as ``{"$text": hex}``; ``true`` is none)."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is dict and len(value) == 1:
        ((tag, text),) = value.items()
        return tag in (BLOB_TAG, TEXT_TAG) and type(text) is str and bool(_HEX.fullmatch(text))
    return False


# -- diff.json, task.json ---------------------------------------------------------------
def read_diff(path: Path, data: bytes) -> StateDiff:
    """The end-state diff, shaped as ``world.diff()`` returns it."""
    record = record_of(path, data, DIFF_SCHEMA)
    if "diff" not in record:
        _refuse(path, "field 'diff'", "is missing")
    try:
        diff = checked_diff(record["diff"], "field 'diff'")
    except OnrecordError as exc:
        raise SchemaError(f"{path}: {exc}; {_RESTORE}") from exc
    return load_reals(diff) if b'"$real"' in data else diff


def read_task(path: Path, data: bytes) -> dict[str, Any] | None:
    """The task (an ``EvalCase`` in dict form, its own digest checked), or ``None``."""
    record = record_of(path, data, TASK_SCHEMA)
    if "case" not in record:
        _refuse(path, "field 'case'", "is missing")
    case = record["case"]
    if case is None:
        return None
    if type(case) is not dict:
        _refuse(
            path, "field 'case'", f"must be a case (EvalCase.to_dict()) or null, got {case!r:.80}"
        )
    try:
        EvalCase.from_dict(case)
    except (OnrecordError, TypeError, ValueError) as exc:
        raise SchemaError(f"{path}: field 'case' is not a saved case ({exc}); {_RESTORE}") from exc
    return case


PARTS: dict[str, tuple[str, Callable[[Path, bytes], Any]]] = {
    "actions.jsonl": ("actions", read_actions),
    "audit.json": ("_audit", read_audit),
    "diff.json": ("diff", read_diff),
    "task.json": ("task", read_task),
}
"""Each JSON part: the ``ToolEpisode`` attribute it is read into, and its reader."""


def read_parts(directory: Path, files: Mapping[str, str], names: Sequence[str]) -> dict[str, Any]:
    """Check each of the episode files ``names`` against the sha256 its manifest pins
    (``files``); read each JSON part (see ``PARTS``) and check the diff against the
    audit history. Returns the parts by ``ToolEpisode`` attribute."""
    parts: dict[str, Any] = {}
    for name in names:
        path = directory / name
        # Never a link (its target lies outside the episode; a database opened through
        # one is not the file verified), a FIFO (blocked forever) or a device.
        if not check_entry(path):
            raise DigestMismatch(
                f"{path} is missing (or not a file): the manifest pins it, so the episode "
                "was changed after saving"
            )
        data = read_regular(path) if name in PARTS else None  # parsed as hashed
        found = regular_sha256(path) if data is None else hashlib.sha256(data).hexdigest()
        if found != files[name]:
            raise DigestMismatch(
                f"{path} does not match the sha256 in its manifest: the episode was "
                "changed after saving"
            )
        if data is not None:
            attribute, read = PARTS[name]
            parts[attribute] = read(path, data)
    check_diff_follows(directory, parts["_audit"], parts["diff"])
    return parts


def check_diff_follows(directory: Path, audit: Mapping[str, Any], diff: StateDiff) -> None:
    """Refuse a diff that is not the one the audit history folds to."""
    expected = diff_from_events(audit["events"], layouts(audit))
    if same(expected, diff):
        return
    differs = sorted(
        name
        for name in expected.keys() | diff.keys()
        if not same(expected.get(name), diff.get(name))
    )
    raise ConsistencyError(
        f"{directory / 'diff.json'}: field 'diff' disagrees with the audit history in "
        f"audit.json (the changes to {differs[:5]}): save_episode writes both from one "
        "read of the history, so one was changed and re-sealed after saving; restore the "
        "episode from a copy"
    )
