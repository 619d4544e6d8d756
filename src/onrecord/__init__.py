"""onrecord: evaluate agents and world models by what actually happened in the environment.

The public API, by concept::

    EvalCase                           a task and its identity
    AcceptancePolicy, CheckRequirement turn a report into accept / reject / indeterminate
    compare_reports                    paired comparison of two reports
    onrecord.integrations.gymnasium    capture_episode, capture_episode_async
    onrecord.episode                   EpisodeEvidence, OutcomeCheck, OutcomeVerdict, ...
    onrecord.report                    EvaluationReport, Trial, CheckResult
"""

# The names below are imported on first use (PEP 562): the ``onrecord`` command imports
# this package before its ``main()`` runs, and importing them here would load numpy and
# importlib.metadata (a third of a second) before ``onrecord --version`` could answer, and
# outside the ``main()`` that turns a Ctrl-C into exit 130 instead of a traceback.
# ``TYPE_CHECKING = False`` rather than ``typing.TYPE_CHECKING``: the same to type
# checkers (they go by the name), without importing typing (and re) at start-up.
from onrecord._lazy import lazy_attributes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onrecord.case import EvalCase
    from onrecord.compare import Comparison, compare_reports
    from onrecord.policy import AcceptancePolicy, CheckRequirement, PolicyDecision
    from onrecord.report import EvaluationReport

    __version__: str

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

# Public name -> the module that defines it.
_LAZY = {
    "AcceptancePolicy": "onrecord.policy",
    "CheckRequirement": "onrecord.policy",
    "Comparison": "onrecord.compare",
    "EvalCase": "onrecord.case",
    "EvaluationReport": "onrecord.report",
    "PolicyDecision": "onrecord.policy",
    "compare_reports": "onrecord.compare",
}


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("onrecord")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


# Submodules that ``import onrecord`` used to load by importing the names above, so
# ``import onrecord; onrecord.report.Trial`` keeps working.
_SUBMODULES = frozenset({"case", "compare", "errors", "policy", "report"})


def _other_attribute(name: str) -> object:
    """``__version__`` and the submodules, read when first asked for."""
    if name == "__version__":
        return _installed_version()
    if name in _SUBMODULES:
        from importlib import import_module

        return import_module(f"onrecord.{name}")
    raise AttributeError(f"module 'onrecord' has no attribute {name!r}")


# The module's ``__getattr__``, hidden from type checkers: they take a module
# ``__getattr__`` to answer every name, and would accept ``onrecord.EvalCse``.
_attribute, __dir__ = lazy_attributes("onrecord", globals(), _LAZY, __all__, _other_attribute)
if not TYPE_CHECKING:
    __getattr__ = _attribute
del TYPE_CHECKING, lazy_attributes  # not attributes of the package
