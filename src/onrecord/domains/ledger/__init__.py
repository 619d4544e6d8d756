"""The invoice ledger experiment: a real SQLite fixture, posting handlers, a Gymnasium
environment, a read-only observer, named checks, recovery and an ablation of graders.

Run it with ``onrecord ledger run --output-dir DIR`` and re-verify it offline with
``onrecord ledger analyze DIR``; see ``docs/domain-ledger.md``.
"""

from onrecord.domains.ledger._artifacts import (
    LedgerAnalysis,
    analyze_ledger_dir,
    save_ledger_result,
)
from onrecord.domains.ledger._checks import (
    GRADERS,
    LEDGER_CHECKS,
    answer_claims_posted,
    full_policy,
    history_intact,
    posted_once,
    protected_untouched,
)
from onrecord.domains.ledger._classic import CLASSIC_RUNS, ClassicRun, capture_classic
from onrecord.domains.ledger._env import LedgerAction, LedgerEnv, PostingCrashed
from onrecord.domains.ledger._experiment import (
    SEEDS,
    VARIANTS,
    LedgerEpisode,
    LedgerResult,
    LedgerVariant,
    ablation,
    run_ledger_experiment,
    scripted_interact,
)
from onrecord.domains.ledger._fixture import LedgerObserver, create_ledger
from onrecord.domains.ledger._posting import idempotent_post, unsafe_post

__all__ = [
    "CLASSIC_RUNS",
    "GRADERS",
    "LEDGER_CHECKS",
    "SEEDS",
    "VARIANTS",
    "ClassicRun",
    "LedgerAction",
    "LedgerAnalysis",
    "LedgerEnv",
    "LedgerEpisode",
    "LedgerObserver",
    "LedgerResult",
    "LedgerVariant",
    "PostingCrashed",
    "ablation",
    "analyze_ledger_dir",
    "answer_claims_posted",
    "capture_classic",
    "create_ledger",
    "full_policy",
    "history_intact",
    "idempotent_post",
    "posted_once",
    "protected_untouched",
    "run_ledger_experiment",
    "save_ledger_result",
    "scripted_interact",
    "unsafe_post",
]
