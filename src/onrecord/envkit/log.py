"""The action log: one JSON line per tool call, buffered, fsynced at episode end.

Each line is the canonical JSON of an event with the fields ``run_id, task_id, step,
tool, arguments, result, state_version, error, ts, duration_ns, status, reads``.
A crashed writer leaves at most one partial last line; :func:`read_action_log` returns
everything before it and says the log is incomplete.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from onrecord._canonical import canonical_bytes
from onrecord.errors import SchemaError

__all__ = ["EVENT_FIELDS", "ActionLog", "ActionLogRead", "parse_action_log", "read_action_log"]

Event = dict[str, Any]
EVENT_FIELDS = (
    "arguments",
    "duration_ns",
    "error",
    "reads",
    "result",
    "run_id",
    "state_version",
    "status",
    "step",
    "task_id",
    "tool",
    "ts",
)
_BUFFER = 1 << 20


class ActionLog:
    """Events of one episode, kept in memory and, with a path, streamed to a JSONL file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.events: list[Event] = []
        self.path = Path(path) if path is not None else None
        self._file: BinaryIO | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "wb", buffering=_BUFFER)  # noqa: SIM115

    def append(self, event: Event) -> None:
        """Record one event (written through the buffer when the log has a file; a log
        closed at episode end is reopened to append, so the file never misses an event
        the memory holds)."""
        self.events.append(event)
        if self._file is None and self.path is not None:
            self._file = open(self.path, "ab", buffering=_BUFFER)  # noqa: SIM115
        if self._file is not None:
            self._file.write(canonical_bytes(event) + b"\n")

    def close(self) -> None:
        """Flush and fsync the file (episode end). Safe to call twice."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def to_bytes(self) -> bytes:
        """The JSONL bytes of all events, as the file holds them."""
        return b"".join(canonical_bytes(event) + b"\n" for event in self.events)


@dataclass(frozen=True)
class ActionLogRead:
    """What :func:`read_action_log` found."""

    events: tuple[Event, ...]
    """Every complete event, in order."""
    complete: bool
    """False when the file ended in a partial line (the writer stopped mid-event)."""

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)


def read_action_log(path: str | os.PathLike[str]) -> ActionLogRead:
    """Read a JSONL action log; a partial last line is dropped and reported."""
    return parse_action_log(Path(path).read_bytes(), path)


def parse_action_log(data: bytes, path: str | os.PathLike[str]) -> ActionLogRead:
    """:func:`read_action_log` of bytes already read (``path`` names them in errors)."""
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    events = []
    for number, line in enumerate(lines, start=1):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise SchemaError(
                f"{path}: line {number} is not JSON ({exc}); only the last "
                "line of a log may be damaged"
            ) from exc
        if not isinstance(event, dict) or "step" not in event or "tool" not in event:
            raise SchemaError(
                f"{path}: line {number} is not an action event (it needs "
                "at least 'step' and 'tool')"
            )
        events.append(event)
    return ActionLogRead(tuple(events), complete=not tail)
