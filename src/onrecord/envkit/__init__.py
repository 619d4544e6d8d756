"""Environment kit: turn a SQLite schema and a few Python tools into an evaluation
environment with snapshot reset, an action log, audit history, end-state diffs, named
checks, hidden state, replay and a gymnasium face. See docs/envkit.md.
"""

from typing import Any

from onrecord.envkit._text import RawText
from onrecord.envkit.audit import AuditEvent
from onrecord.envkit.checker import EnvironmentCheckError, check_environment, environment_problems
from onrecord.envkit.checks import (
    Score,
    check,
    failed,
    get_check,
    not_measured,
    passed,
    register_check,
    registered_checks,
    run_checks,
    weighted_score,
)
from onrecord.envkit.context import ToolContext, ToolRejected, Tracer
from onrecord.envkit.diff import StateDiff, diff_databases, diff_from_events
from onrecord.envkit.episode import EPISODE_SCHEMA, ToolEpisode, save_episode
from onrecord.envkit.evaluate import evaluate_tool_episodes, tool_episode_trial
from onrecord.envkit.hidden import (
    ANY,
    read_before_write,
    read_before_write_check,
    read_steps,
    write_steps,
)
from onrecord.envkit.log import ActionLog, ActionLogRead, read_action_log
from onrecord.envkit.observer import ReadOnlyObserver
from onrecord.envkit.replay import Divergence, ReplayResult, diff_through_step, replay, step_diff
from onrecord.envkit.rules import (
    Rule,
    changed,
    check_rules,
    compare_diff,
    created,
    deleted,
    no_other_changes,
    only_tables,
    unchanged,
)
from onrecord.envkit.snapshot import Populate, Snapshot, SnapshotError
from onrecord.envkit.state import state_digest
from onrecord.envkit.tools import Tool, tool
from onrecord.envkit.world import ENDINGS, InjectedFailure, ReentrantCall, ToolWorld

__all__ = [
    "ANY",
    "ENDINGS",
    "EPISODE_SCHEMA",
    "ActionLog",
    "ActionLogRead",
    "AuditEvent",
    "Divergence",
    "EnvironmentCheckError",
    "InjectedFailure",
    "Populate",
    "RawText",
    "ReadOnlyObserver",
    "ReentrantCall",
    "ReplayResult",
    "Rule",
    "Score",
    "Snapshot",
    "SnapshotError",
    "StateDiff",
    "Tool",
    "ToolContext",
    "ToolEpisode",
    "ToolRejected",
    "ToolWorld",
    "ToolWorldEnv",
    "Tracer",
    "changed",
    "check",
    "check_environment",
    "check_rules",
    "compare_diff",
    "created",
    "deleted",
    "diff_databases",
    "diff_from_events",
    "diff_through_step",
    "environment_problems",
    "evaluate_tool_episodes",
    "failed",
    "get_check",
    "no_other_changes",
    "not_measured",
    "only_tables",
    "passed",
    "read_action_log",
    "read_before_write",
    "read_before_write_check",
    "read_steps",
    "register_check",
    "registered_checks",
    "replay",
    "run_checks",
    "save_episode",
    "state_digest",
    "step_diff",
    "tool",
    "tool_episode_trial",
    "unchanged",
    "weighted_score",
    "write_steps",
]


def __getattr__(name: str) -> Any:
    # The gymnasium face imports gymnasium, which the rest of the kit does not need.
    if name == "ToolWorldEnv":
        from onrecord.envkit.gym import ToolWorldEnv

        return ToolWorldEnv
    raise AttributeError(f"module 'onrecord.envkit' has no attribute {name!r}")
