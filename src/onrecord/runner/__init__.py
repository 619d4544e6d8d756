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
    AgentContext, AgentSetupError                  plugging environments and agents in
    RunConfig, load_config, load_tasks             TOML configuration
    Progress, ConsoleProgress                      progress events, and the bar of the CLI
"""

# The names below are imported on first use (PEP 562): the commands that read a run
# directory (``onrecord verify``, ``gate``, ``show``) need its store only, and importing
# every name here loaded gymnasium, the executors and the registry (~60 ms) for it.
# ``TYPE_CHECKING = False`` as in ``onrecord/__init__``: the same to type checkers.
from onrecord._lazy import lazy_attributes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onrecord._progress import ConsoleProgress
    from onrecord.runner._config import RunConfig, load_config, load_tasks, parse_seeds
    from onrecord.runner._envref import EnvironmentRef
    from onrecord.runner._executors import (
        EXECUTORS,
        Executor,
        InProcessExecutor,
        ProcessPoolExecutor,
        make_executor,
    )
    from onrecord.runner._gym import COMPLETED, GymnasiumProvider
    from onrecord.runner._job import EpisodeJob, JobResult, Progress, RunContext, fingerprint
    from onrecord.runner._protocol import RunProtocol
    from onrecord.runner._provider import (
        AgentContext,
        AgentSetupError,
        EnvironmentProvider,
        EpisodeOutput,
        EpisodeSpec,
        SavedEpisode,
        agent_factory,
    )
    from onrecord.runner._ray import RayExecutor
    from onrecord.runner._registry import register_environment, registered_environments
    from onrecord.runner._regrade import Regrade, VerdictChange, regrade_run
    from onrecord.runner._run import (
        RunResult,
        grade_store,
        plan_run,
        resume_run,
        start_run,
    )
    from onrecord.runner._store import EpisodeRecord, RunStore
    from onrecord.runner._toolprovider import ENVKIT_CHECKS, ToolWorldProvider

__all__ = [
    "COMPLETED",
    "ENVKIT_CHECKS",
    "EXECUTORS",
    "AgentContext",
    "AgentSetupError",
    "ConsoleProgress",
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

# Public name -> the module that defines it.
_LAZY = {
    "COMPLETED": "onrecord.runner._gym",
    "ENVKIT_CHECKS": "onrecord.runner._toolprovider",
    "EXECUTORS": "onrecord.runner._executors",
    "AgentContext": "onrecord.runner._provider",
    "AgentSetupError": "onrecord.runner._provider",
    "ConsoleProgress": "onrecord._progress",
    "EnvironmentProvider": "onrecord.runner._provider",
    "EnvironmentRef": "onrecord.runner._envref",
    "EpisodeJob": "onrecord.runner._job",
    "EpisodeOutput": "onrecord.runner._provider",
    "EpisodeRecord": "onrecord.runner._store",
    "EpisodeSpec": "onrecord.runner._provider",
    "Executor": "onrecord.runner._executors",
    "GymnasiumProvider": "onrecord.runner._gym",
    "InProcessExecutor": "onrecord.runner._executors",
    "JobResult": "onrecord.runner._job",
    "ProcessPoolExecutor": "onrecord.runner._executors",
    "Progress": "onrecord.runner._job",
    "RayExecutor": "onrecord.runner._ray",
    "Regrade": "onrecord.runner._regrade",
    "RunConfig": "onrecord.runner._config",
    "RunContext": "onrecord.runner._job",
    "RunProtocol": "onrecord.runner._protocol",
    "RunResult": "onrecord.runner._run",
    "RunStore": "onrecord.runner._store",
    "SavedEpisode": "onrecord.runner._provider",
    "ToolWorldProvider": "onrecord.runner._toolprovider",
    "VerdictChange": "onrecord.runner._regrade",
    "agent_factory": "onrecord.runner._provider",
    "fingerprint": "onrecord.runner._job",
    "grade_store": "onrecord.runner._run",
    "load_config": "onrecord.runner._config",
    "load_tasks": "onrecord.runner._config",
    "make_executor": "onrecord.runner._executors",
    "parse_seeds": "onrecord.runner._config",
    "plan_run": "onrecord.runner._run",
    "register_environment": "onrecord.runner._registry",
    "registered_environments": "onrecord.runner._registry",
    "regrade_run": "onrecord.runner._regrade",
    "resume_run": "onrecord.runner._run",
    "start_run": "onrecord.runner._run",
}


# ``__getattr__`` is hidden from type checkers, which would take a module ``__getattr__``
# to answer every name (see ``onrecord/__init__``).
_attribute, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
if not TYPE_CHECKING:
    __getattr__ = _attribute
del TYPE_CHECKING, lazy_attributes  # not attributes of the package
