"""Environment kit: turn a SQLite schema and a few Python tools into an evaluation
environment with snapshot reset, an action log, audit history, end-state diffs and
named checks. See docs/envkit.md.
"""

from onrecord.envkit.audit import AuditEvent
from onrecord.envkit.context import ToolContext, ToolRejected, Tracer
from onrecord.envkit.diff import StateDiff, diff_databases, diff_from_events
from onrecord.envkit.log import ActionLog, ActionLogRead, read_action_log
from onrecord.envkit.snapshot import Populate, Snapshot, SnapshotError
from onrecord.envkit.state import state_digest
from onrecord.envkit.tools import Tool, tool
from onrecord.envkit.world import InjectedFailure, ToolWorld

__all__ = [
    "ActionLog",
    "ActionLogRead",
    "AuditEvent",
    "InjectedFailure",
    "Populate",
    "Snapshot",
    "SnapshotError",
    "StateDiff",
    "Tool",
    "ToolContext",
    "ToolRejected",
    "ToolWorld",
    "Tracer",
    "diff_databases",
    "diff_from_events",
    "read_action_log",
    "state_digest",
    "tool",
]
