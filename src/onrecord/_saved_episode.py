"""``onrecord report``, ``gate``, ``compare`` or ``regrade`` of a saved tool-world episode
(``save_episode``): refused, saying what reads one instead.

These commands read a run's grading (its checks' results, decision and episodes); a
saved episode holds no grading at all, since which checks grade it is chosen when they
run (``onrecord check NAME... --episode DIR``). Before, ``report`` and ``compare`` said
only "not a run directory (it has no run.json); start a run with `onrecord run ... --out
DIR`", ``gate`` that the directory was "not a regular file", and of the episode's
``manifest.json`` all three that its schema was not a report's; ``regrade`` said "not a run
directory (it has no run.json)" too.
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

# Per command: what it reads, and its command line once the episode is in a run.
_NEEDS = {
    "report": (
        "`onrecord report` writes a page of a run's grading (its checks, decision and episodes)",
        "for an HTML page",
        "`onrecord report RUN`",
    ),
    "gate": (
        "`onrecord gate` decides on a report (a run's grading: its checks' results)",
        "to decide with a policy",
        "`onrecord gate RUN --policy POLICY`",
    ),
    "compare": (
        "`onrecord compare` pairs the trials of two reports (two runs' gradings)",
        "to compare it with another agent's",
        "`onrecord compare RUN OTHER_RUN` (the other agent's run of the same tasks)",
    ),
    "regrade": (
        "`onrecord regrade` grades a run's recorded episodes again and lists the verdicts "
        "that changed from the run's grading",
        "to regrade it with other checks or another policy",
        "`onrecord regrade RUN --checks module:CHECKS --policy POLICY` (each optional: "
        "by default the run's own)",
    ),
}


def refuse_saved_episode(source: Path, command: str) -> None:
    """Raise ``InputError`` when ``source`` is a saved tool-world episode directory or a
    file in one, naming the commands that read it and how ``command`` (``report``,
    ``gate``, ``compare`` or ``regrade``) reads it once it is recorded in a run."""
    folder = source.parent if source.is_file() else source
    manifest = _manifest(folder / "manifest.json")
    if manifest is None or manifest.get("schema") != _EPISODE_SCHEMA:
        return
    reads, purpose, then = _NEEDS[command]
    where = shlex.quote(str(folder))
    task = manifest.get("task_id")
    tasks = f" --tasks {shlex.quote(task)}" if isinstance(task, str) and task else ""
    raise InputError(
        f"{folder} is a saved tool-world episode (save_episode), not a run directory: "
        f"{reads}, and a saved episode holds no grading. Read it in the terminal with "
        f"`onrecord show {where}` (how it ended, its tool calls, the rows they wrote) and "
        f"grade it with `onrecord check NAME... --episode {where}`; {purpose}, record the "
        f"episode in a run, `onrecord run {_environment(manifest)} --agent AGENT{tasks} "
        f"--out RUN`, then {then}"
    )


def _environment(manifest: dict[str, object]) -> str:
    """The ``onrecord run`` name of the domain the episode is from, told by its snapshot's
    name as ``onrecord check`` tells it, else ``ENVIRONMENT`` (a world of one's own)."""
    # Imported here: only a refusal needs the domain table, and it loads onrecord.episode
    # (numpy, ~80 ms), which `onrecord report`'s start need not pay. It does not import
    # the domain itself, only names it.
    from onrecord.domains._episode_checks import domains_of

    domains = domains_of(manifest)
    return domains[0].name if len(domains) == 1 else "ENVIRONMENT"


def _manifest(path: Path) -> dict[str, object] | None:
    """The JSON object in ``path``, or None for anything else (no file, not JSON)."""
    if not path.is_file():  # a FIFO named manifest.json would block the read forever
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
