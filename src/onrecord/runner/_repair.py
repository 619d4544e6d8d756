"""Repairs before a run directory is appended to again: what a killed writer can leave
behind is cut off; what only deleting committed records can produce is refused."""

from __future__ import annotations

import os
from pathlib import Path

from onrecord._canonical import content_digest, load_record_bytes
from onrecord.episode._verify_files import check_entry
from onrecord.errors import ConsistencyError, OnrecordError

__all__ = [
    "DECISION_SCHEMA",
    "cut_actions",
    "cut_torn_line",
    "refuse_links",
    "refuse_lost_records",
    "uncommitted_tail",
]

DECISION_SCHEMA = "onrecord.run.decision/v1"

_RUN_FILES = (
    ".lock",
    "run.json",
    "episodes.jsonl",
    "actions.jsonl",
    "errors.jsonl",
    "report.json",
    "decision.json",
)


def refuse_links(run: Path) -> None:
    """Refuse a run directory holding a link or a special file where onrecord writes a
    regular file or a directory. A received run is hostile input: ``errors.jsonl ->
    ~/notes.txt`` had a resume cut the last line off that file, ``regrades -> /elsewhere``
    had ``regrade`` write there, and ``episodes.jsonl`` as a FIFO (or a link to
    ``/dev/zero``) made ``verify`` wait forever. Checked when the run is opened, before
    anything is read or written; the files are opened without following links too."""
    for name in _RUN_FILES:
        check_entry(run / name)
    for name in ("files", "regrades"):
        if check_entry(run / name, directory=True):
            for entry in (run / name).iterdir():
                # A side file is a regular file; a regrade a directory (a stray file
                # there is no regrade and is not read, but a link is never followed).
                if name == "files" or entry.is_symlink():
                    check_entry(entry, directory=name == "regrades")


def cut_torn_line(run: Path, name: str) -> list[str]:
    """Cut off a partial last line: the episode it began was never committed (in
    ``errors.jsonl``, the next error line would be glued to it)."""
    path = run / name
    if not path.exists():
        return []
    end, size = _last_newline_end(path), path.stat().st_size
    if end == size:
        return []
    os.truncate(path, end)
    if name == "errors.jsonl":
        return [f"removed a partial line ({size - end} bytes) at the end of {name}"]
    return [
        f"removed a partial episode record ({size - end} bytes) left by an interrupted "
        "run; that episode runs again"
    ]


def cut_actions(run: Path, committed: int) -> list[str]:
    """Cut off action-log bytes that no committed record accounts for."""
    path = run / "actions.jsonl"
    if not path.exists() or path.stat().st_size <= committed:
        return []
    os.truncate(path, committed)
    return ["removed the action-log events of an episode that was not committed"]


def uncommitted_tail(run: Path, committed_actions: int) -> str | None:
    """What follows the last committed record: a partial line at the end of
    ``episodes.jsonl``, action-log bytes no record accounts for (what a killed writer
    leaves, and what a resume cuts off), said in a few words; None when there is none."""
    parts = []
    episodes, actions = run / "episodes.jsonl", run / "actions.jsonl"
    torn = episodes.stat().st_size - _last_newline_end(episodes) if episodes.exists() else 0
    if torn:
        parts.append(f"a partial line ({torn} B) at the end of episodes.jsonl")
    extra = actions.stat().st_size - committed_actions if actions.exists() else 0
    if extra > 0:
        parts.append(f"{extra} B at the end of actions.jsonl that no record accounts for")
    return " and ".join(parts) or None


def refuse_lost_records(run: Path, committed: int) -> None:
    """Refuse a directory whose committed records were deleted. A killed writer never
    loses a committed line, and ``episodes.jsonl`` exists before the first action-log
    byte is written; without this check, resuming would cut the deleted episodes'
    action logs off as if no record had committed them, and run them again."""
    actions = run / "actions.jsonl"
    if not (run / "episodes.jsonl").exists() and actions.exists() and actions.stat().st_size:
        raise ConsistencyError(
            f"{run}/episodes.jsonl is missing, but actions.jsonl holds the action "
            "log of recorded episodes: the run's records were deleted; restore "
            "episodes.jsonl from a copy of the run, or start a new run in another directory"
        )
    # Every line decision.json graded was whole (committed) before it was written: a
    # killed writer tears only a line appended after it. Fewer whole lines than it
    # graded, a partial last line or not, is a record deleted or cut, never a crash;
    # counting the partial line as the missing record had a resume cut off an episode
    # the decision graded and run it again.
    graded = _graded_count(run / "decision.json")
    if graded is not None and graded > committed:
        torn = _torn_bytes(run / "episodes.jsonl")
        cut = f" whole records and a partial last line ({torn} bytes)" if torn else ""
        raise ConsistencyError(
            f"{run}/decision.json graded {graded} recorded episodes, but "
            f"episodes.jsonl now holds {committed}{cut}: committed records were deleted "
            "or cut; restore episodes.jsonl and actions.jsonl from a copy of the run, or "
            "start a new run in another directory"
        )


def _torn_bytes(path: Path) -> int:
    """The bytes of a partial last line of ``path`` (0: none, or no file)."""
    return path.stat().st_size - _last_newline_end(path) if path.exists() else 0


def _graded_count(path: Path) -> int | None:
    """Episodes a verified ``decision.json`` says were recorded (None: no such file, or
    not one onrecord wrote; grading rewrites it anyway)."""
    try:
        data = load_record_bytes(path.read_bytes(), str(path))
    except (OSError, OnrecordError):
        return None
    if data.get("schema") != DECISION_SCHEMA or data.get("digest") != content_digest(data):
        return None
    recorded = data.get("recorded")
    return recorded if type(recorded) is int else None


def _last_newline_end(path: Path) -> int:
    size = path.stat().st_size
    with open(path, "rb") as handle:
        position = size
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            chunk = handle.read(position - start)
            index = chunk.rfind(b"\n")
            if index >= 0:
                return start + index + 1
            position = start
    return 0
