"""onrecord: evaluate agents and world models by what actually happened in the environment.

The public API, by concept::

    EvalCase                           a task and its identity
    AcceptancePolicy, CheckRequirement turn a report into accept / reject / indeterminate
    compare_reports                    paired comparison of two reports
    onrecord.integrations.gymnasium    capture_episode
    onrecord.episode                   EpisodeEvidence, OutcomeCheck, OutcomeVerdict, ...
    onrecord.report                    EvaluationReport, Trial, CheckResult
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onrecord")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

from onrecord.case import EvalCase
from onrecord.compare import Comparison, compare_reports
from onrecord.policy import (
    AcceptancePolicy,
    CheckRequirement,
    PolicyDecision,
)
from onrecord.report import EvaluationReport

__all__ = [
    "AcceptancePolicy",
    "CheckRequirement",
    "Comparison",
    "EvalCase",
    "EvaluationReport",
    "PolicyDecision",
    "__version__",
    "compare_reports",
]
