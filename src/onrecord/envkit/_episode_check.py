"""What ``onrecord verify DIR`` checks of a saved tool-world episode beyond its files.

``ToolEpisode.load`` verifies each file against the sha256 its manifest pins and the
manifest against its own digest: a manifest re-sealed with another end-state digest,
task id or step count verified, though the files it pins say otherwise. These checks
read every file (and hash the end-state database's rows), so they run in ``verify``
only, not on every load (``regrade`` and the bench load many episodes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onrecord.errors import ConsistencyError

if TYPE_CHECKING:
    from onrecord.envkit.episode import ToolEpisode

__all__ = ["check_episode_agrees"]


def check_episode_agrees(episode: ToolEpisode) -> None:
    """Raise ``ConsistencyError`` naming the manifest field that disagrees with the file
    it describes (final.sqlite, task.json, actions.jsonl)."""
    manifest, where = episode.manifest, episode.path / "manifest.json"
    if episode.database is not None and episode.end_state_digest() != manifest["end_state_digest"]:
        _refuse(where, "end_state_digest", "the state digest of final.sqlite")
    task = episode.task
    if task is not None and task.get("case_id") != manifest["task_id"]:
        _refuse(where, "task_id", f"the task in task.json ({task.get('case_id')!r})")
    actions = episode.actions
    if len(actions) != manifest["steps"]:
        _refuse(where, "steps", f"the {len(actions)} calls in actions.jsonl")
    for number, event in enumerate(actions, start=1):
        if event.get("run_id") != manifest["run_id"]:
            _refuse(where, "run_id", f"call {number} in actions.jsonl")


def _refuse(where: object, field: str, other: str) -> None:
    raise ConsistencyError(
        f"{where}: '{field}' disagrees with {other}: the manifest was changed and "
        "re-sealed after saving; restore the episode from a copy"
    )
