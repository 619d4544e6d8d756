"""What ``onrecord verify DIR`` checks of a saved tool-world episode beyond its files.

``ToolEpisode.load`` verifies each file against the sha256 its manifest pins and the
manifest against its own digest: a manifest re-sealed with another end-state digest,
task id, step count, state version, tool list or hidden tables verified, though the
files it pins say otherwise. These checks hash the end-state database's rows (and
check the audit history and the diff against it: ``_episode_database``), so they run in
``verify`` only, not on every load.

Each compares a manifest field with what ``ToolWorld`` itself logged, so no genuine
episode fails one: a call's event holds the state version after it (a write tool's
successful call adds one; a failed call undoes its writes, but an injected failure
keeps them), reads are logged only of hidden tables, and only a declared tool is ever
run. The ``seed`` is recorded nowhere else in the episode, so nothing checks it.

The ``ending`` is recorded nowhere else either, so a re-sealed manifest may swap one
ending this version knows for another; but one it does not know (a hand-made manifest,
or a later writer's) is refused by name, with the endings allowed: ``show`` printed it
as it would print ``finished`` and ``verify`` passed it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from onrecord.envkit._episode_database import check_database_agrees
from onrecord.envkit.state import state_digest
from onrecord.envkit.world import ENDINGS
from onrecord.errors import ConsistencyError, SchemaError

if TYPE_CHECKING:
    from onrecord.envkit.episode import ToolEpisode

__all__ = ["SAVED_ENDINGS", "check_episode_agrees"]

SAVED_ENDINGS = (*ENDINGS, "undeclared")
"""A saved manifest's ``ending``: a declared one, or ``undeclared`` (``save_episode``
writes it when nobody declared how the episode ended)."""


def check_episode_agrees(episode: ToolEpisode) -> None:
    """Raise ``ConsistencyError`` naming the manifest field that disagrees with the file
    it describes (final.sqlite, task.json, actions.jsonl, audit.json) or the part that
    disagrees with final.sqlite (audit.json, diff.json: ``_episode_database``), or
    ``SchemaError`` for an ending no writer of this version saves."""
    manifest, where = episode.manifest, episode.path / "manifest.json"
    _check_ending(manifest, where)
    if episode.database is not None:
        conn = episode.connect()
        try:
            if state_digest(conn) != manifest["end_state_digest"]:
                _refuse(where, "end_state_digest", "the state digest of final.sqlite")
            check_database_agrees(episode, conn)  # audit.json and diff.json against it
        finally:
            conn.close()
    task = episode.task
    if task is not None and task.get("case_id") != manifest["task_id"]:
        _refuse(where, "task_id", f"the task in task.json ({task.get('case_id')!r})")
    actions = episode.actions
    if len(actions) != manifest["steps"]:
        _refuse(where, "steps", f"the {len(actions)} calls in actions.jsonl")
    for number, event in enumerate(actions, start=1):
        for field in ("run_id", "task_id"):
            if event.get(field) != manifest[field]:
                _refuse(where, field, f"call {number} in actions.jsonl")
    _check_state_version(episode, where)
    _check_tools(episode, where)
    _check_hidden(episode, where)


def _check_ending(manifest: Mapping[str, Any], where: object) -> None:
    """The ``ending`` is one this version knows (``ToolEpisode.load`` checked it is
    text), and ``ending_error`` text or null, as ``ToolWorld.end_episode`` takes it."""
    ending = manifest["ending"]
    if ending not in SAVED_ENDINGS:
        raise SchemaError(
            f"{where}: field 'ending' is {ending!r}, which is none of the endings an "
            f"episode is saved with ({', '.join(SAVED_ENDINGS)}); it was not written by "
            "save_episode of this onrecord version: restore the episode from a copy, or "
            "verify it with the version that wrote it"
        )
    error = manifest.get("ending_error")
    if error is not None and not isinstance(error, str):
        raise SchemaError(
            f"{where}: field 'ending_error' must be text or null, got {error!r}; it was "
            "not written by save_episode: restore the episode from a copy"
        )


def _check_state_version(episode: ToolEpisode, where: object) -> None:
    """The manifest's ``state_version`` is the last call's (0 before any call), and each
    call moved it as its tool and outcome say (``writes``, when the manifest has it)."""
    manifest, version = episode.manifest, 0
    writes = manifest.get("writes")
    for number, event in enumerate(episode.actions, start=1):
        after = event.get("state_version")
        moved = after - version if type(after) is int else None
        if writes is not None and moved not in _moves(event, writes):
            _refuse(
                where,
                "writes",
                f"call {number} in actions.jsonl ({_text(event.get('tool'))}, "
                f"{event.get('status')}, state version {version} → {after!r})",
            )
        version = after if type(after) is int else version
    if manifest["state_version"] != version:
        _refuse(where, "state_version", f"the state version after the last call ({version})")


def _moves(event: Mapping[str, Any], writes: Sequence[Any]) -> tuple[int, ...]:
    """How a call may move the state version: a write tool's successful call by one, a
    read tool's or a refused call by none, a failed write call by none or (its failure
    injected after its writes committed) by one."""
    if event.get("tool") not in writes or event.get("status") == "rejected":
        return (0,)
    return (1,) if event.get("status") == "ok" else (0, 1)


def _check_tools(episode: ToolEpisode, where: object) -> None:
    """Every tool a call ran successfully is one the manifest lists, and so is every
    write tool."""
    tools = episode.manifest["tools"]
    if not all(isinstance(tool, Mapping) for tool in tools):
        _refuse(where, "tools", "the tool schemas save_episode writes ({name, ...})")
    names = {tool.get("name") for tool in tools}
    for number, event in enumerate(episode.actions, start=1):
        if event.get("status") == "ok" and event.get("tool") not in names:
            _refuse(where, "tools", f"call {number} in actions.jsonl, which ran {event['tool']!r}")
    writes = episode.manifest.get("writes")
    if writes is not None and not (isinstance(writes, list) and set(writes) <= names):
        _refuse(where, "writes", "its 'tools' (a write tool is one of the tools)")


def _check_hidden(episode: ToolEpisode, where: object) -> None:
    """Reads are logged only of hidden tables, and a hidden table is one of the world's
    (each is audited: audit.json lists them all)."""
    hidden = set(episode.manifest["hidden"])
    for number, event in enumerate(episode.actions, start=1):
        reads = event.get("reads")
        for read in reads if isinstance(reads, list) else ():
            table = read.get("table") if isinstance(read, Mapping) else None
            if table not in hidden:
                _refuse(where, "hidden", f"call {number} in actions.jsonl, which read {table!r}")
    if not hidden <= set(episode.tables):
        _refuse(where, "hidden", "the tables of audit.json")


def _text(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else value


def _refuse(where: object, field: str, other: str) -> NoReturn:
    raise ConsistencyError(
        f"{where}: '{field}' disagrees with {other}: the manifest was changed and "
        "re-sealed after saving; restore the episode from a copy"
    )
