"""Many episodes: plan a run, execute it in-process, in a process pool or on Ray, store
it in a resumable run directory, grade it, and re-grade it later from saved evidence.

By concept::

    plan_run, start_run, resume_run, RunResult     run orchestration
    regrade_run, Regrade, VerdictChange            new verdicts from saved evidence
    RunStore, EpisodeRecord                        the run directory (read side)
    InProcessExecutor, ProcessPoolExecutor,
    RayExecutor, make_executor                     where episodes run
    EnvironmentProvider, GymnasiumProvider,
    ToolWorldProvider, ENVKIT_CHECKS,
    EpisodeSpec, EpisodeOutput, SavedEpisode,
    register_environment, agent_factory,
    AgentContext                                   plugging environments and agents in
    RunConfig, load_config, load_tasks             TOML configuration
"""

from onrecord.runner._config import RunConfig, load_config, load_tasks, parse_seeds
from onrecord.runner._executors import (
    EXECUTORS,
    Executor,
    InProcessExecutor,
    ProcessPoolExecutor,
    make_executor,
)
from onrecord.runner._gym import COMPLETED, GymnasiumProvider
from onrecord.runner._job import EpisodeJob, JobResult, RunContext, fingerprint
from onrecord.runner._protocol import RunProtocol
from onrecord.runner._provider import (
    AgentContext,
    EnvironmentProvider,
    EpisodeOutput,
    EpisodeSpec,
    SavedEpisode,
    agent_factory,
)
from onrecord.runner._ray import RayExecutor
from onrecord.runner._registry import (
    EnvironmentRef,
    register_environment,
    registered_environments,
)
from onrecord.runner._regrade import Regrade, VerdictChange, regrade_run
from onrecord.runner._run import Progress, RunResult, grade_store, plan_run, resume_run, start_run
from onrecord.runner._store import EpisodeRecord, RunStore
from onrecord.runner._toolprovider import ENVKIT_CHECKS, ToolWorldProvider

__all__ = [
    "COMPLETED",
    "ENVKIT_CHECKS",
    "EXECUTORS",
    "AgentContext",
    "EnvironmentProvider",
    "EnvironmentRef",
    "EpisodeJob",
    "EpisodeOutput",
    "EpisodeRecord",
    "EpisodeSpec",
    "Executor",
    "GymnasiumProvider",
    "InProcessExecutor",
    "JobResult",
    "ProcessPoolExecutor",
    "Progress",
    "RayExecutor",
    "Regrade",
    "RunConfig",
    "RunContext",
    "RunProtocol",
    "RunResult",
    "RunStore",
    "SavedEpisode",
    "ToolWorldProvider",
    "VerdictChange",
    "agent_factory",
    "fingerprint",
    "grade_store",
    "load_config",
    "load_tasks",
    "make_executor",
    "parse_seeds",
    "plan_run",
    "register_environment",
    "registered_environments",
    "regrade_run",
    "resume_run",
    "start_run",
]
