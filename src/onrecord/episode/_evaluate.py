"""Run checks over saved evidence and collect the results into a report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from onrecord._exceptions import describe_raised, shown_repr, without_addresses
from onrecord._loaded import loaded
from onrecord.episode._checks import OutcomeCheck, OutcomeVerdict
from onrecord.episode._evidence import EpisodeEvidence
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy
from onrecord.report import CheckResult, EvaluationReport, Status, Trial

__all__ = ["episode_trial", "evaluate_episode", "evaluate_episodes", "run_check"]


def run_check(check: OutcomeCheck, subject: Any) -> CheckResult:
    """Apply one check. A raising or misbehaving check is an evaluator error, kept apart
    from a measured failure."""
    try:
        verdict = check.evaluate(subject)
    except Exception as exc:  # named with the line of the check that raised it
        return _evaluator_error(check, f"raised {describe_raised(exc)}")
    if not isinstance(verdict, OutcomeVerdict):
        return _evaluator_error(check, f"returned {type(verdict).__name__}, not an OutcomeVerdict")
    passed = verdict.passed
    if passed is not None and type(passed) is not bool:
        numpy = loaded("numpy")  # a NumPy bool is what np.all(...) and array comparisons give
        if numpy is None or type(passed) is not numpy.bool_:
            return _evaluator_error(
                check,
                f"returned passed={shown_repr(passed, 200)}; "
                "use True, False or None (not measured)",
            )
        passed = bool(passed)
    status: Status = "not_measured" if passed is None else "pass" if passed else "fail"
    reason = "" if verdict.reason is None else str(verdict.reason)
    try:
        return CheckResult(check.name, check.version, status, reason, verdict.evidence)
    except InputError as exc:
        return _evaluator_error(check, f"returned evidence that is not portable: {exc}")


def _evaluator_error(check: OutcomeCheck, reason: str) -> CheckResult:
    # The reason is ours, built from the check's exception or values: kept without
    # memory addresses, so a regrade of the same evidence writes the same report.
    reason = without_addresses(reason)
    return CheckResult(check.name, check.version, "evaluator_error", f"check {reason}")


def _validated(checks: Iterable[OutcomeCheck]) -> tuple[OutcomeCheck, ...]:
    # Materialized first: a generator of checks was used up by this validation, and every
    # episode was then graded with no check at all (a report of no checks, "incomplete").
    listed = tuple(checks) if isinstance(checks, Iterable) else None
    if (
        isinstance(checks, OutcomeCheck)
        or listed is None
        or not all(isinstance(c, OutcomeCheck) for c in listed)
    ):
        raise InputError(
            "checks must be a list of OutcomeCheck, e.g. "
            "[OutcomeCheck('posted_once', 'v1', posted_once)]"
        )
    counts = Counter(check.name for check in listed)
    duplicated = sorted(name for name, count in counts.items() if count > 1)
    if duplicated:
        raise InputError(f"check names must be unique; repeated: {duplicated}")
    return listed


def episode_trial(
    episode: EpisodeEvidence, checks: Iterable[OutcomeCheck], repeat: int = 0
) -> Trial:
    """Evaluate one episode into one trial."""
    if not isinstance(episode, EpisodeEvidence):
        raise InputError(
            f"expected EpisodeEvidence, got {type(episode).__name__}; load saved "
            "evidence with EpisodeEvidence.load(path)"
        )
    case = episode._data["case"]
    environment = episode._data["environment"]
    settings = {
        key: environment[key]
        for key in environment
        if key not in ("observation_space", "action_space")
    }
    return Trial(
        case={
            "case_id": case["case_id"],
            "source_id": case["source_id"],
            "content_digest": case["content_digest"],
        },
        repeat=repeat,
        source={"kind": "episode", "digest": episode.digest},
        results=tuple(run_check(check, episode) for check in _validated(checks)),
        coverage_issues=episode.coverage_issues,
        measures=episode.measures,
        settings=settings,
    )


def evaluate_episode(
    episode: EpisodeEvidence,
    checks: Iterable[OutcomeCheck],
    *,
    policy: AcceptancePolicy | None = None,
) -> EvaluationReport:
    """Evaluate one episode with ``checks``. A ``policy`` the report is meant for is
    recorded in its lock (name and digest)."""
    return evaluate_episodes([episode], checks, policy=policy)


def _policy_lock(policy: AcceptancePolicy | None) -> dict[str, Any]:
    if policy is None:
        return {}
    if not isinstance(policy, AcceptancePolicy):
        raise InputError(f"policy must be an AcceptancePolicy, got {type(policy).__name__}")
    return {"policy": {"name": policy.name, "digest": policy.digest}}


def evaluate_episodes(
    episodes: Iterable[EpisodeEvidence],
    checks: Iterable[OutcomeCheck],
    *,
    policy: AcceptancePolicy | None = None,
) -> EvaluationReport:
    """Evaluate many episodes; episodes of the same case (case id and content digest) are
    numbered as repeats 0, 1, … in the order given. A ``policy`` is recorded in the lock
    (name and digest)."""
    validated = _validated(checks)
    if isinstance(episodes, EpisodeEvidence) or not isinstance(episodes, Iterable):
        raise InputError(
            f"episodes must be a list of EpisodeEvidence, got {type(episodes).__name__}; "
            "grade a single episode with evaluate_episode(episode, checks)"
        )
    # Repeats are counted per case identity (id and content digest), as trials are paired
    # and locked: counted per id, two versions of a case took turns at the numbers, so
    # the same episodes given in another order made a report that could not be compared.
    seen: Counter[tuple[str, str]] = Counter()
    trials = []
    digests: set[str] = set()
    for episode in episodes:
        case = episode.case if isinstance(episode, EpisodeEvidence) else {}
        identity = (str(case.get("case_id")), str(case.get("content_digest")))
        trial = episode_trial(episode, validated, seen[identity])
        _refuse_twice(trial, digests)
        trials.append(trial)
        seen[identity] += 1
    return EvaluationReport.from_trials(trials, lock_extra=_policy_lock(policy))


def _refuse_twice(trial: Trial, digests: set[str]) -> None:
    """The same evidence given twice would count one execution as two repeats: a pass
    rate and pass^k over pseudo-repeats claim more than was observed. (Two executions
    never share a digest: per-step wall times are part of it.)"""
    digest = trial.source["digest"]
    if digest in digests:
        raise InputError(
            f"the episode sha256:{digest[:12]} of case {trial.case['case_id']!r} is given "
            "twice; each repeat must be its own execution (capture it again)"
        )
    digests.add(digest)
