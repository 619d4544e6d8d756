"""Why a model failed, printed under ``onrecord worldmodel``'s tables.

The tables count a model's failures (``0/0 (40 of 40 failed)``, ``3 failed runs``), but
the reason (``mean has shape [40, 32], expected [40, 32, 4]``) was only in the JSON
Lines: a researcher whose ``predict`` dropped the coordinate axis saw the count and had
to search the run's files for the message. Each model's most common error is printed,
with how many it accounts for when they differ, and the file holding every one. Errors
that differ only in their numbers (the value and place of a negative deviation, the
shape of one batch) are one error: the first of them is printed as an example.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from onrecord.cli._render import plain
from onrecord.dynamics.experiment._user_models import slug

__all__ = ["failure_lines"]

_LONGEST = 300  # a model's own exception text can be a page of traceback-like detail
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b")


def failure_lines(root: Path, tables: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Per model whose held-out forecasts or closed-loop runs failed: what failed and its
    most common error, and where every error is (apart, so the path stays copyable)."""
    lines: list[tuple[str, str]] = []
    for model_id, table in tables["heldout_metrics"].items():
        if table.get("model_errors"):
            path = root / "forecasts" / "heldout" / f"{slug(model_id)}.jsonl"
            messages = [
                _message(record.get("error"))
                for record in _records(path)
                if record.get("status") == "model_error"
            ]
            count = f"{table['model_errors']} of {table['forecasts']} held-out forecasts"
            lines.append(_line(model_id, count, messages, path))
    for row in tables["closed_loop"]:
        if row.get("failed_runs"):
            path = root / "closed_loop" / f"{slug(row['model_id'])}.jsonl"
            messages = [
                _message(record.get("model_error"))
                for record in _records(path)
                if record.get("model_error")
            ]
            count = f"{row['failed_runs']} of {row['seeds']} closed-loop runs"
            lines.append(_line(row["model_id"], count, messages, path))
    return lines


def _line(model_id: str, count: str, messages: list[str], path: Path) -> tuple[str, str]:
    where = f"every error: {plain(path)}"
    if not messages:  # a file changed since the tables were computed: say so, not guess
        return f"{plain(model_id)}: {count} failed (none recorded in the file)", where
    kinds = [_NUMBER.sub("#", message) for message in messages]
    kind, times = Counter(kinds).most_common(1)[0]
    common = messages[kinds.index(kind)]
    # The same error at other values or places: the one printed is an example of them.
    example = (
        ", e.g." if len({m for m, k in zip(messages, kinds, strict=True) if k == kind}) > 1 else ""
    )
    others = len(messages) - times
    # Only when the errors differ: one model may fail some references one way, some another.
    rest = f" ({times} of them; {others} with another error)" if others else ""
    return f"{plain(model_id)}: {count} failed{example}: {plain(_shortened(common))}{rest}", where


def _message(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    text = str(message if message is not None else error)
    return text.strip().splitlines()[0] if text.strip() else text


def _shortened(first: str) -> str:
    """Cut after the errors are told apart: cut first, two errors differing only in the
    length of a number would be cut at different places and counted as two errors."""
    return first if len(first) <= _LONGEST else first[: _LONGEST - 1] + "…"


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The file's records; nothing when it is missing or not JSON Lines, since these
    lines explain the tables and never decide anything (``analyze`` verifies files)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            return
        if isinstance(record, dict):
            yield record
