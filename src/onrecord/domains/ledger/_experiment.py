"""The ledger experiment: every variant with seeds 7 and 8, the recovery protocol, the
native Gymnasium runs, and the ablation of weaker graders.

Recovery: attempt 1 commits a posting and then raises; its evidence and decision
(indeterminate) are kept as they are. Attempt 2 deliberately reuses the same database
file and applies the handler's idempotency policy. A passing attempt 2 is judged on its
own evidence; it never rewrites or approves attempt 1.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onrecord import EvalCase, PolicyDecision
from onrecord._steps import shown_steps
from onrecord.domains.ledger._checks import GRADERS, LEDGER_CHECKS
from onrecord.domains.ledger._classic import (
    CLASSIC_RUNS,
    capture_classic,
    classic_checks,
    classic_policy,
)
from onrecord.domains.ledger._env import LedgerAction, LedgerEnv
from onrecord.domains.ledger._fixture import LedgerObserver, create_ledger
from onrecord.domains.ledger._posting import HandlerName
from onrecord.episode import EpisodeEvidence, evaluate_episode
from onrecord.integrations.gymnasium import capture_episode
from onrecord.report import EvaluationReport

__all__ = [
    "ENVIRONMENT_ID",
    "LEDGER_STEPS",
    "OBSERVER_ID",
    "SEEDS",
    "VARIANTS",
    "LedgerEpisode",
    "LedgerResult",
    "LedgerVariant",
    "ablation",
    "run_ledger_experiment",
    "scripted_interact",
]

SEEDS = (7, 8)
ENVIRONMENT_ID = "onrecord-ledger-v1"
OBSERVER_ID = "ledger-readonly-sqlite-v3"
"""v3: each observation also holds the database's triggers (``audit_triggers``)."""
_P, _F = LedgerAction.POST, LedgerAction.FINISH
_CHANGE, _RESTORE = LedgerAction.CHANGE_PROTECTED, LedgerAction.RESTORE_PROTECTED


@dataclass(frozen=True)
class LedgerVariant:
    """One row of the experiment: the actions, the handler, the decisions it must get."""

    name: str
    """Variant name, part of the case id."""
    attempts: tuple[tuple[LedgerAction, ...], ...]
    """Actions of each attempt; several attempts share one database (recovery)."""
    handler: HandlerName
    """Posting handler: ``idempotent`` or ``unsafe``."""
    expected: tuple[str, ...]
    """Decision of the full policy for each attempt, in order."""


VARIANTS = (
    LedgerVariant("correct", ((_P, _F),), "idempotent", ("accept",)),
    LedgerVariant("missing_write", ((_F,),), "idempotent", ("reject",)),
    LedgerVariant("safe_retry", ((_P, _P, _F),), "idempotent", ("accept",)),
    LedgerVariant("duplicate_write", ((_P, _P, _F),), "unsafe", ("reject",)),
    LedgerVariant(
        "forbidden_then_restored", ((_P, _CHANGE, _RESTORE, _F),), "idempotent", ("reject",)
    ),
    LedgerVariant("safe_recovery", ((_P, _F), (_P, _F)), "idempotent", ("indeterminate", "accept")),
    LedgerVariant("unsafe_recovery", ((_P, _F), (_P, _F)), "unsafe", ("indeterminate", "reject")),
)

LEDGER_STEPS = sum(len(variant.attempts) for variant in VARIANTS) * len(SEEDS) + len(CLASSIC_RUNS)
"""Steps of ``run_ledger_experiment``: each attempt of each variant and seed, then each
native run (``onrecord ledger run`` adds one, the save)."""


@dataclass(frozen=True)
class LedgerEpisode:
    """One captured attempt with its report and decisions."""

    variant: str
    """Variant name."""
    seed: int
    """Reset seed."""
    attempt: int
    """1-based attempt number (recovery variants have two)."""
    evidence: EpisodeEvidence
    """The captured episode."""
    report: EvaluationReport
    """All ledger checks over the episode."""
    decisions: dict[str, str]
    """Decision of each grader (``final_answer``, ``final_posting``, ``full_policy``)."""
    expected: str
    """What the full policy must decide."""
    database: str
    """Path of the SQLite file as it was right after this attempt."""

    @property
    def name(self) -> str:
        """Directory name of the attempt, e.g. ``safe_recovery-seed7-attempt1``."""
        return f"{self.variant}-seed{self.seed}-attempt{self.attempt}"

    @property
    def complete(self) -> bool:
        """The attempt reached its natural end (the ablation only counts these)."""
        return self.evidence.ended == "terminated"


@dataclass
class LedgerResult:
    """Everything the experiment produced."""

    episodes: list[LedgerEpisode] = field(default_factory=list)
    """Ledger attempts in run order."""
    classic: list[dict[str, Any]] = field(default_factory=list)
    """Native runs: name, evidence, report, decision, expected."""

    @property
    def ok(self) -> bool:
        """Every decision is the one the protocol requires."""
        return all(e.decisions["full_policy"] == e.expected for e in self.episodes) and all(
            c["decision"].decision == c["expected"] for c in self.classic
        )

    def ablation(self) -> list[dict[str, Any]]:
        """See :func:`ablation`."""
        return ablation(self.episodes)


def scripted_interact(actions: Sequence[int]) -> Callable[[Any, Any, dict[str, Any]], str]:
    """An ``interact`` that sends ``actions`` in order and stops at the episode's end."""

    def interact(env: Any, observation: Any, info: dict[str, Any]) -> str:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                return "finished"
        return "actions exhausted"

    return interact


def _capture(variant: LedgerVariant, seed: int, attempt: int, db: Path) -> EpisodeEvidence:
    crash = len(variant.attempts) > 1 and attempt == 1
    case = EvalCase(
        {"task": "Post invoice once for 12.34 USD", "variant": variant.name, "attempt": attempt},
        case_id=f"ledger-{variant.name}-seed{seed}-{attempt}",
        source_id=f"ledger-fixture-seed{seed}",
    )
    return capture_episode(
        lambda: LedgerEnv(db, handler=variant.handler, crash_after_commit=crash),
        scripted_interact(variant.attempts[attempt - 1]),
        case=case,
        environment_id=ENVIRONMENT_ID,
        observer_id=OBSERVER_ID,
        observe=LedgerObserver(db),
        seed=seed,
        max_steps=20,
        options=None,
    )


def _decide(report: EvaluationReport) -> dict[str, str]:
    return {name: policy.evaluate(report).decision for name, policy in GRADERS.items()}


def run_ledger_experiment(
    work_dir: str | Path, progress: Callable[[str], None] | bool | None = None
) -> LedgerResult:
    """Run every variant with every seed and the native runs; databases go under
    ``work_dir/runs/<variant>-seed<seed>-attempt<n>/ledger.sqlite``. ``progress`` is
    called with a line after each of the ``LEDGER_STEPS`` steps (``"ledger
    correct-seed7-attempt1: accept"``, ``"classic frozenlake_hole: reject"``); True shows
    them on stderr as ``onrecord ledger run`` does; None or False (the default) nothing."""
    if callable(progress):
        return _run(Path(work_dir), progress)
    with shown_steps(None, progress is True, "ledger steps", LEDGER_STEPS) as tick:
        # "ledger steps 1/23 · correct-seed7-attempt1: accept done", as the command
        # shows it: the name already says whose steps these are.
        return _run(Path(work_dir), lambda text: tick(text.removeprefix("ledger ")))


def _run(work: Path, progress: Callable[[str], None]) -> LedgerResult:
    result = LedgerResult()
    for variant in VARIANTS:
        for seed in SEEDS:
            live = work / "live" / f"{variant.name}-seed{seed}.sqlite"
            live.parent.mkdir(parents=True, exist_ok=True)
            live.unlink(missing_ok=True)
            create_ledger(live, seed=seed)
            for attempt in range(1, len(variant.attempts) + 1):
                evidence = _capture(variant, seed, attempt, live)
                report = evaluate_episode(evidence, LEDGER_CHECKS)
                name = f"{variant.name}-seed{seed}-attempt{attempt}"
                kept = work / "runs" / name / "ledger.sqlite"
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(live, kept)  # the database exactly as this attempt left it
                result.episodes.append(
                    LedgerEpisode(
                        variant.name,
                        seed,
                        attempt,
                        evidence,
                        report,
                        _decide(report),
                        variant.expected[attempt - 1],
                        str(kept),
                    )
                )
                progress(f"ledger {name}: {result.episodes[-1].decisions['full_policy']}")
    shutil.rmtree(work / "live", ignore_errors=True)
    for run in CLASSIC_RUNS:
        evidence = capture_classic(run)
        report = evaluate_episode(evidence, classic_checks(run))
        decision: PolicyDecision = classic_policy(run).evaluate(report)
        result.classic.append(
            {
                "name": run.name,
                "evidence": evidence,
                "report": report,
                "decision": decision,
                "expected": run.expected,
            }
        )
        progress(f"classic {run.name}: {decision.decision}")
    return result


def ablation(episodes: Sequence[LedgerEpisode]) -> list[dict[str, Any]]:
    """Per grader, over complete episodes: how many it accepts and how many of those
    violate the full contract (final posting plus protected-record history)."""
    complete = [e for e in episodes if e.complete]
    rows = []
    for grader in GRADERS:
        accepted = [e for e in complete if e.decisions[grader] == "accept"]
        violating = [e.name for e in accepted if e.decisions["full_policy"] != "accept"]
        rows.append(
            {
                "grader": grader,
                "episodes": len(complete),
                "accepted": len(accepted),
                "accepted_violating": len(violating),
                "violating": violating,
            }
        )
    return rows
