"""``onrecord report DIR`` of a saved tool-world episode (``save_episode``): refused,
saying what reads one instead.

A report page is a run's grading (its checks, decision, pass rates and every episode);
a saved episode holds no grading at all, since which checks grade it is chosen when
they run (``onrecord check NAME... --episode DIR``). Before, the command said only "not
a run directory (it has no run.json); start a run with `onrecord run ... --out DIR`",
and of the episode's ``manifest.json`` that its schema was not a report's.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import orjson

from onrecord.errors import InputError

__all__ = ["refuse_saved_episode"]

_EPISODE_SCHEMA = "onrecord.envkit.episode/v1"
"""``envkit.episode.EPISODE_SCHEMA``, spelt out: importing the environment kit to word
an error would slow every report down."""


def refuse_saved_episode(source: Path) -> None:
    """Raise ``InputError`` when ``source`` is a saved tool-world episode directory or a
    file in one, naming the commands that read it and how to get a page of it."""
    folder = source.parent if source.is_file() else source
    manifest = _manifest(folder / "manifest.json")
    if manifest is None or manifest.get("schema") != _EPISODE_SCHEMA:
        return
    where = shlex.quote(str(folder))
    task = manifest.get("task_id")
    tasks = f" --tasks {shlex.quote(task)}" if isinstance(task, str) and task else ""
    raise InputError(
        f"{folder} is a saved tool-world episode (save_episode), not a run directory: "
        "`onrecord report` writes a page of a run's grading (its checks, decision and "
        "episodes), and a saved episode holds no grading. Read it in the terminal with "
        f"`onrecord show {where}` (how it ended, its tool calls, the rows they wrote) and "
        f"grade it with `onrecord check NAME... --episode {where}`; for an HTML page, "
        f"record the episode in a run, `onrecord run ENVIRONMENT --agent AGENT{tasks} "
        "--out RUN`, then `onrecord report RUN`"
    )


def _manifest(path: Path) -> dict[str, object] | None:
    """The JSON object in ``path``, or None for anything else (no file, not JSON)."""
    if not path.is_file():  # a FIFO named manifest.json would block the read forever
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
