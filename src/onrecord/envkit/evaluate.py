"""Turn saved tool-world episodes into report trials, so ``AcceptancePolicy`` and
``compare_reports`` work on them exactly as on gymnasium episodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from onrecord._canonical import content_digest
from onrecord.envkit._write_measures import write_measures
from onrecord.envkit.checks import run_checks
from onrecord.envkit.episode import ToolEpisode
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.report import EvaluationReport, Trial

__all__ = ["evaluate_tool_episodes", "tool_episode_trial"]


def tool_episode_trial(
    episode: ToolEpisode, checks: Sequence[OutcomeCheck | str], repeat: int = 0
) -> Trial:
    """One trial: the episode's task identity, check results, measures and settings."""
    return episode_trial(episode, checks, repeat)


def declares_unfinished(manifest: Mapping[str, Any]) -> bool:
    """Whether the episode declared an ending other than finishing, which its trial
    reports as a coverage issue."""
    return manifest.get("ending", "undeclared") not in ("finished", "undeclared")


def episode_trial(
    episode: ToolEpisode,
    checks: Sequence[OutcomeCheck | str],
    repeat: int = 0,
    *,
    stopped_at: str = "",
) -> Trial:
    """``tool_episode_trial``; ``stopped_at`` (``after step 3 (post)``) says where an
    episode that declared an unfinished ending stopped, in that ending's one issue."""
    case = episode.case
    if case is None:
        raise InputError(
            f"episode {episode.path} has no task; reset the world with "
            "case=EvalCase(...) so results can be tied to a case"
        )
    manifest = episode.manifest
    actions = episode.actions
    issues = []
    if len(actions) != manifest["steps"]:
        issues.append(
            f"the action log holds {len(actions)} events but the episode made "
            f"{manifest['steps']} calls"
        )
    if declares_unfinished(manifest):
        detail = f": {manifest['ending_error']}" if manifest.get("ending_error") else ""
        where = f" {stopped_at}" if stopped_at else ""
        issues.append(f"the episode ended with {manifest['ending']}{detail}{where}, not finished")
    settings = {
        "environment_id": f"envkit:{manifest['snapshot']['name']}",
        "snapshot": manifest["snapshot"],
        "hidden": manifest["hidden"],
        "tools_digest": content_digest({"tools": manifest["tools"]}),
    }
    measures = {
        "tool_calls": float(len(actions)),
        "rejected_calls": float(sum(e["status"] != "ok" for e in actions)),
        "rows_changed": float(
            sum(len(rows) for table in episode.diff.values() for rows in table.values())
        ),
        # From the audit history: what the end state hides (a row changed and restored).
        **write_measures(episode.audit, episode.tables),
    }
    return Trial(
        case=case.identity,
        repeat=repeat,
        source={"kind": "tool_episode", "digest": episode.digest},
        results=tuple(run_checks(episode, checks)),
        coverage_issues=tuple(issues),
        measures=measures,
        settings=settings,
    )


def evaluate_tool_episodes(
    episodes: Iterable[ToolEpisode], checks: Sequence[OutcomeCheck | str]
) -> EvaluationReport:
    """A report over many episodes; episodes of one case become repeats 0, 1, …"""
    if isinstance(episodes, ToolEpisode | str | bytes) or not isinstance(episodes, Iterable):
        raise InputError(
            f"episodes must be a list of ToolEpisodes, got {type(episodes).__name__}; "
            "wrap one episode in a list"
        )
    seen: Counter[str] = Counter()
    trials = []
    for index, episode in enumerate(episodes):
        if not isinstance(episode, ToolEpisode):  # else an AttributeError deep inside
            raise InputError(
                f"episodes[{index}] must be a ToolEpisode, got {type(episode).__name__}: "
                "load a saved episode with ToolEpisode.load(DIR), or pass what "
                "save_episode(world, DIR) returns"
            )
        trial = tool_episode_trial(episode, checks, 0)
        case_id = str(trial.case["case_id"])
        if seen[case_id]:
            trial = Trial(
                trial.case,
                seen[case_id],
                trial.source,
                trial.results,
                trial.coverage_issues,
                trial.measures,
                trial.settings,
            )
        seen[case_id] += 1
        trials.append(trial)
    return EvaluationReport.from_trials(trials)
