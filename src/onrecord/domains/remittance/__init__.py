"""Clinic-billing remittance posting on the environment kit.

An agent posts an insurer's remittance (the content of an X12 835) against a clinic's
open claims and patient accounts through declared tools. Tasks live in ``tasks.toml``;
each gets a generated start snapshot, expected-diff rules and named checks. Reference
agents (``careful`` and seven faulty ones) show what outcome checks catch and what
answer-only grading misses. See ``docs/domain-remittance.md``.
"""

from onrecord.domains.remittance._agents import AGENTS, FAULTS, AgentCrashed, ScriptedAgent
from onrecord.domains.remittance._checks import (
    ANSWER_CHECK,
    END_STATE_CHECKS,
    HISTORY_CHECKS,
    REMITTANCE_CHECKS,
)
from onrecord.domains.remittance._generator import Generator, write_snapshot
from onrecord.domains.remittance._render import ablation_table, suite_table
from onrecord.domains.remittance._run import (
    ENVIRONMENT_ID,
    Agent,
    EpisodeRun,
    PlayedEpisode,
    RemittanceEnvironment,
    remittance_trial,
)
from onrecord.domains.remittance._scenarios import build_scenario
from onrecord.domains.remittance._schema import SCHEMA, TABLES
from onrecord.domains.remittance._suite import (
    GRADERS,
    AgentOutcome,
    SuiteResult,
    expected_decision,
    full_policy,
    run_demo_suite,
    save_suite,
    suite_from_reports,
)
from onrecord.domains.remittance._tasks import KINDS, RemittanceTask, load_tasks
from onrecord.domains.remittance._tools import HIDDEN_TABLES, TOOLS, WRITE_TOOLS

__all__ = [
    "AGENTS",
    "ANSWER_CHECK",
    "END_STATE_CHECKS",
    "ENVIRONMENT_ID",
    "FAULTS",
    "GRADERS",
    "HIDDEN_TABLES",
    "HISTORY_CHECKS",
    "KINDS",
    "REMITTANCE_CHECKS",
    "SCHEMA",
    "TABLES",
    "TOOLS",
    "WRITE_TOOLS",
    "Agent",
    "AgentCrashed",
    "AgentOutcome",
    "EpisodeRun",
    "Generator",
    "PlayedEpisode",
    "RemittanceEnvironment",
    "RemittanceTask",
    "ScriptedAgent",
    "SuiteResult",
    "ablation_table",
    "build_scenario",
    "expected_decision",
    "full_policy",
    "load_tasks",
    "remittance_trial",
    "run_demo_suite",
    "save_suite",
    "suite_from_reports",
    "suite_table",
    "write_snapshot",
]
