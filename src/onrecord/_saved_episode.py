"""``onrecord report``, ``gate``, ``compare`` or ``regrade`` of a saved tool-world episode
(``save_episode``): refused, saying what reads one instead; so is one given where another
directory is needed (``run --resume``/``--out``, ``show --episode``, ``worldmodel analyze
--replay``, ``ledger analyze``), which said only "not a run directory" or named a schema.

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

__all__ = ["refuse_episode_given_as", "refuse_saved_episode", "saved_episode_folder"]

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
    found = _saved(source)
    if found is None:
        return
    folder, manifest = found
    reads, purpose, then = _NEEDS[command]
    commands = _commands(folder, manifest)
    raise InputError(
        f"{folder} is a saved tool-world episode (save_episode), not a run directory: "
        f"{reads}, and a saved episode holds no grading. Read it in the terminal with "
        f"{commands['show']} (how it ended, its tool calls, the rows they wrote) and "
        f"grade it with {commands['check']}; {purpose}, record the episode in a run, "
        f"{commands['run']}, then {then}"
    )


# Per use of a directory that is not the one a saved episode is: what was wanted, why
# the episode is not it, and what to do instead ({show}, {check}, {run}: the commands).
_GIVEN_AS = {
    "resume": (
        "a run directory",
        "`onrecord run --resume` continues an interrupted run, and a saved episode is one "
        "finished episode, in no run",
        "Read it with {show} and grade it with {check}; to record the episode in a run, "
        "start a new run in a new directory: {run}",
    ),
    "out": (
        "an empty directory",
        "`onrecord run` writes its run directory itself and never writes over a saved episode",
        "Choose another --out directory: {run}; the saved episode reads with {show} and "
        "grades with {check}",
    ),
    "show --episode": (
        "a run directory",
        "it is itself one episode, and --episode picks one of a run's episodes",
        "Show it without --episode: {show} (how it ended, its tool calls, the rows they "
        "wrote; --steps and --full as for a run's episode)",
    ),
    "show --all-not-passed": (
        "a run directory",
        "--all-not-passed lists a run's episodes that did not pass, and a saved episode "
        "holds no grading",
        "Show it with {show} and grade it with {check}",
    ),
    "worldmodel": (
        "a `worldmodel run` directory",
        "`onrecord worldmodel analyze --replay` recomputes a world-model experiment",
        "Verify it with `onrecord verify {where}`, read it with {show} and grade it with {check}",
    ),
    "ledger": (
        "a `ledger run` directory",
        "`onrecord ledger analyze` recomputes the ledger experiment's decisions",
        "Verify it with `onrecord verify {where}`, read it with {show} and grade it with {check}",
    ),
}


def refuse_episode_given_as(source: Path, use: str) -> None:
    """Raise ``InputError`` when ``source`` is a saved tool-world episode directory (or a
    file in one) given where ``use`` (a key of ``_GIVEN_AS``) needs another directory,
    saying why it is not one and what reads it instead."""
    found = _saved(source)
    if found is None:
        return
    folder, manifest = found
    wanted, why, instead = _GIVEN_AS[use]
    raise InputError(
        f"{folder} is a saved tool-world episode (save_episode{_of(manifest)}), not "
        f"{wanted}: {why}. {instead.format(**_commands(folder, manifest))}"
    )


def _commands(folder: Path, manifest: dict[str, object]) -> dict[str, str]:
    """The commands a refusal names for the episode in ``folder``, ready to paste."""
    where = shlex.quote(str(folder))
    return {
        "show": f"`onrecord show {where}`",
        "check": f"`onrecord check NAME... --episode {where}`",
        "run": f"`{_run_line(manifest)}`",
        "where": where,
    }


def _of(manifest: dict[str, object]) -> str:
    """``, remittance task full-01``: what the episode is of, as far as its manifest says."""
    environment = _environment(manifest)
    task = manifest.get("task_id")
    domain = "" if environment == "ENVIRONMENT" else f" {environment}"
    named = f" task {task}" if isinstance(task, str) and task else ""
    return f",{domain}{named}" if domain or named else ""


def _run_line(manifest: dict[str, object]) -> str:
    """The ``onrecord run`` command that records the episode's task in a new run."""
    task = manifest.get("task_id")
    tasks = f" --tasks {shlex.quote(task)}" if isinstance(task, str) and task else ""
    return f"onrecord run {_environment(manifest)} --agent AGENT{tasks} --out RUN"


def _environment(manifest: dict[str, object]) -> str:
    """The ``onrecord run`` name of the domain the episode is from, told by its snapshot's
    name as ``onrecord check`` tells it, else ``ENVIRONMENT`` (a world of one's own)."""
    # Imported here: only a refusal needs the domain table, and it loads onrecord.episode
    # (numpy, ~80 ms), which `onrecord report`'s start need not pay. It does not import
    # the domain itself, only names it.
    from onrecord.domains._episode_checks import domains_of

    domains = domains_of(manifest)
    return domains[0].name if len(domains) == 1 else "ENVIRONMENT"


def saved_episode_folder(source: Path) -> Path | None:
    """The saved tool-world episode directory ``source`` is or holds a file of, else None."""
    found = _saved(source)
    return None if found is None else found[0]


def _saved(source: Path) -> tuple[Path, dict[str, object]] | None:
    """The saved episode's directory and manifest, when ``source`` is one or a file in one."""
    folder = source.parent if source.is_file() else source
    manifest = _manifest(folder / "manifest.json")
    if manifest is None or manifest.get("schema") != _EPISODE_SCHEMA:
        return None
    return folder, manifest


def _manifest(path: Path) -> dict[str, object] | None:
    """The JSON object in ``path``, or None for anything else (no file, not JSON)."""
    if not path.is_file():  # a FIFO named manifest.json would block the read forever
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
